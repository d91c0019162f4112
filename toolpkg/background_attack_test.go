package toolpkg

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldReader serves a zip, but holds the read that keeps it until
// released: the second read of the whole zip (the first is the checks'
// look for the end of the central directory of a small zip; the second
// is copyZip's). The upload holds the toolset meanwhile.
type heldReader struct {
	data    []byte
	reached chan struct{}
	release chan struct{}
	whole   int // reads of the whole zip; one goroutine reads
}

func newHeldReader(data []byte) *heldReader {
	return &heldReader{data: data, reached: make(chan struct{}), release: make(chan struct{})}
}

func (r *heldReader) ReadAt(p []byte, off int64) (int, error) {
	if off == 0 && len(p) == len(r.data) {
		r.whole++
		if r.whole == 2 {
			close(r.reached)
			<-r.release
		}
	}
	if off >= int64(len(r.data)) {
		return 0, io.EOF
	}
	n := copy(p, r.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestRemoveDuringUploadDoesNotWaitForItsDiscovery: a Remove that comes
// while an upload is still storing its package must not wait for the
// whole discovery that upload then starts (it may never end: a
// --schema that hangs until its timeout, or a queue for a discovery
// slot), nor let the toolset serve before it is removed.
func TestRemoveDuringUploadDoesNotWaitForItsDiscovery(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect, KillGrace: -1, DiscoveryTimeout: 30 * time.Second})
	g := newGate(t, "g")
	log := filepath.Join(t.TempDir(), "log")
	pkg := gatedPackage(t, g, "slow", log, greetSchema)
	require.Less(t, len(pkg), 32<<10)
	r := newHeldReader(pkg)
	uploaded := make(chan error, 1)
	go func() {
		_, err := s.StartUpload(context.Background(), "slow", r, int64(len(pkg)))
		uploaded <- err
	}()
	<-r.reached
	removed := make(chan error, 1)
	go func() { removed <- s.Remove("slow") }()
	// Real time: let Remove reach its wait for the upload.
	time.Sleep(200 * time.Millisecond)
	close(r.release)
	require.NoError(t, <-uploaded)
	select {
	case err := <-removed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		g.await(t)
		g.open(t)
		<-removed
		t.Fatal("Remove waited for the discovery of the upload it came during")
	}
	info, err := s.Info("slow")
	require.NoError(t, err)
	assert.Equal(t, StatusRemoved, info.Status)
	assert.Zero(t, info.Serving)
	assert.False(t, processWithArg(filepath.Join(s.Dir(), "slow")), "the --schema process ended")
}
