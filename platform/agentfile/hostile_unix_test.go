//go:build unix

package agentfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gotoolset/toolset/platform/agentfile"
)

// TestReadFileOfAFIFOReturnsAtOnce reads a named pipe nobody writes to:
// opening it would wait for a writer forever, so ReadFile must refuse it
// without opening it.
func TestReadFileOfAFIFOReturnsAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "agent.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := agentfile.ReadFile(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("error %v", err)
		}
	case <-time.After(5 * time.Second):
		// Unblock the open so that the goroutine ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("ReadFile waited for a writer")
	}
}
