package toolpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gotoolset/toolset"
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
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect, KillGrace: -1, DiscoveryTimeout: 30 * time.Second})
	g := newGate(t, "g")
	log := filepath.Join(t.TempDir(), "log")
	pkg := gatedPackage(t, g, "slow", log, greetSchema)
	require.Less(t, len(pkg), 32<<10)
	_, err := s.Create("slow")
	require.NoError(t, err)
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

// TestLifecycleCallsRaceWithoutDamage: uploads, removals, creations,
// configuration changes, reads of zips and calls on two toolsets at once,
// then Close in the middle of it: no race, no hang, no leak, and the
// store reopens with every record whole and its serving version there.
func TestLifecycleCallsRaceWithoutDamage(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, MaxParallelDiscovery: 1, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	ctx := context.Background()
	good := scriptPackage(t, schemaEcho(`{"tools":{"greet":{"description":"Say hello.","config_schema":[{"key":"token","type":"string","secret":true}]}}}`))
	bad := scriptPackage(t, "echo nope")
	names := []string{"a", "b"}
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	for _, n := range names {
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ts := s.Toolset(n, nil)
				for i := 0; time.Now().Before(deadline); i++ {
					switch (w + i) % 6 {
					case 0:
						pkg := good
						if i%4 == 3 {
							pkg = bad
						}
						_, err := s.StartUpload(ctx, n, bytes.NewReader(pkg), int64(len(pkg)))
						if err != nil && !errors.Is(err, ErrClosed) {
							assert.NoError(t, err)
						}
					case 1:
						if i%3 == 0 {
							_ = s.Remove(n)
						} else {
							_, _ = s.Create(n)
						}
					case 2:
						_, _ = s.SetConfig(n, map[string]any{"token": fmt.Sprintf("sk-%d", i)})
						if got, err := s.Config(n); err == nil && got["token"] != nil {
							assert.Equal(t, RedactedValue, got["token"])
						}
					case 3:
						if r, size, err := s.Package(n, 0); err == nil {
							data, err := io.ReadAll(r)
							assert.NoError(t, err)
							assert.Equal(t, size, int64(len(data)))
							r.Close()
						}
					case 4:
						wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
						_, _ = s.Wait(wctx, n)
						cancel()
					case 5:
						if info, err := s.Info(n); err == nil {
							assert.LessOrEqual(t, info.Serving, info.Version)
						}
						if tools, err := toolset.BuildTools(ctx, "racer", ts); err == nil {
							// It may have been replaced or removed meanwhile:
							// an error, never a panic or a hang.
							_, _ = tools.Execute(ctx, toolset.ToolCall{Name: n + "__greet", Args: json.RawMessage(`{}`)})
						}
					}
				}
			}()
		}
	}
	time.Sleep(time.Second)
	require.NoError(t, s.Close())
	wg.Wait()

	s, err = Open(dir, opts)
	require.NoError(t, err)
	for _, n := range names {
		info, err := s.Wait(ctx, n)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		require.NoError(t, err)
		for _, e := range info.Errors {
			assert.NotContains(t, e, "state.json", "the record is whole")
		}
		if info.Serving > 0 {
			assert.DirExists(t, filepath.Join(dir, n, fmt.Sprintf("v%d", info.Serving)))
		}
	}
	require.NoError(t, s.Close())
}

// TestCanceledDiscoveriesLeakNoSlot: discoveries canceled while they
// wait for a slot or hold one give it back, so later uploads never hang;
// and Close ends an upload waiting for its toolset's discovery.
func TestCanceledDiscoveriesLeakNoSlot(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect, MaxParallelDiscovery: 1, KillGrace: -1})
	ctx := context.Background()
	log := filepath.Join(t.TempDir(), "log")
	quick := scriptPackage(t, schemaEcho(greetSchema))
	for round := range 3 {
		g := newGate(t, fmt.Sprintf("g%d", round))
		startUpload(t, s, "holder", gatedPackage(t, g, "holder", log, greetSchema))
		g.await(t)
		// Queued behind the holder, then removed: the queue is left.
		startUpload(t, s, "queued", quick)
		require.NoError(t, s.Remove("queued"))
		// Holding the slot, then removed: the slot is given back.
		require.NoError(t, s.Remove("holder"))
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info, err := s.Upload(wctx, "after", bytes.NewReader(quick), int64(len(quick)))
		cancel()
		require.NoError(t, err, "round %d: the slot is free", round)
		assert.Equal(t, StatusReady, info.Status)
	}

	g := newGate(t, "last")
	startUpload(t, s, "holder", gatedPackage(t, g, "holder", log, greetSchema))
	g.await(t)
	waiting := make(chan error, 1)
	go func() {
		_, err := s.StartUpload(ctx, "holder", bytes.NewReader(quick), int64(len(quick)))
		waiting <- err
	}()
	time.Sleep(100 * time.Millisecond) // real time: let it wait for the lock
	require.NoError(t, s.Close())
	select {
	case err := <-waiting:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting upload did not end with Close")
	}
}

// TestCallKeepsItsVersionThroughAFailedAndANewUpload: a call running on
// version 1 keeps its folder while version 2 fails and version 3 takes
// over; the folder goes after the call.
func TestCallKeepsItsVersionThroughAFailedAndANewUpload(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	pkg := func(version string) []byte {
		return demoPackage(t, demoManifest(""), zfile{name: "version.txt", data: []byte(version)})
	}
	upload(t, s, "demo", pkg("one"))
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "a", s.Toolset("demo", nil))
	require.NoError(t, err)
	done := make(chan error, 1)
	var res any
	release := filepath.Join(t.TempDir(), "release")
	go func() {
		var err error
		res, err = tools.Execute(ctx, toolset.ToolCall{Name: "demo__slow", Args: []byte(fmt.Sprintf(`{"ms":20000,"until":%q}`, release))})
		done <- err
	}()
	require.Eventually(t, func() bool {
		des, _ := os.ReadDir(filepath.Join(s.Dir(), ".calls"))
		return len(des) == 1
	}, 5*time.Second, 10*time.Millisecond, "the call started")

	info := upload(t, s, "demo", scriptPackage(t, "echo nope"))
	require.Equal(t, StatusFailed, info.Status)
	require.Equal(t, 1, info.Serving)
	info = upload(t, s, "demo", pkg("three"))
	require.Equal(t, StatusReady, info.Status)
	require.Equal(t, 3, info.Serving)
	assert.DirExists(t, filepath.Join(s.Dir(), "demo", "v1"), "the running call's version stays")
	assert.NoDirExists(t, filepath.Join(s.Dir(), "demo", "v2"), "the failed version went")
	_, _, err = s.Package("demo", 1)
	assert.ErrorIs(t, err, ErrNotFound, "its zip is not offered any more")

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	require.NoError(t, <-done)
	assert.Equal(t, "one", res.(*Result).Message)
	assert.NoDirExists(t, filepath.Join(s.Dir(), "demo", "v1"), "deleted after its call")
}
