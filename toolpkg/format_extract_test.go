package toolpkg

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExtractedExecutableRunsWhileOtherGoroutinesFork: a process forked
// while an executable is written holds a copy of the descriptor until it
// executes its own program; extraction keeps none open when a fork can
// happen, so the executable runs at once (not "text file busy", which no
// retry can help inside a sandbox).
func TestExtractedExecutableRunsWhileOtherGoroutinesFork(t *testing.T) {
	t.Parallel()
	script := []byte("#!/bin/sh\nexit 0\n" + string(bytes.Repeat([]byte("#\n"), 64<<10)))
	pkg := makeZip(t, zfile{name: "manifest.yaml", data: []byte("version: 1\ntools:\n  t:\n    executable: ./t.sh\n")},
		zfile{name: "t.sh", data: script, mode: 0o755})
	c, err := validateZip(bytes.NewReader(pkg), int64(len(pkg)), Limits{})
	require.NoError(t, err)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = exec.Command("/bin/true").Run()
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 40 {
		dir := t.TempDir()
		require.NoError(t, extract(c, dir, Limits{}))
		err := exec.Command(filepath.Join(dir, "t.sh")).Run()
		require.False(t, errors.Is(err, syscall.ETXTBSY), "run %d: %v", i, err)
		require.NoError(t, err, "run %d", i)
	}
}
