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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// gate is a FIFO a package's --schema waits at: the test sees a
// discovery arrive there (the script opened the FIFO) and lets it go on.
type gate struct {
	path string
	fd   int // the test's end, open once a discovery waits
}

func newGate(t *testing.T, name string) *gate {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".fifo")
	require.NoError(t, syscall.Mkfifo(p, 0o600))
	g := &gate{path: p, fd: -1}
	t.Cleanup(g.close)
	return g
}

// script is shell that logs "start <name>" to log, waits at the gate,
// then logs "end <name>".
func (g *gate) script(name, log string) string {
	return fmt.Sprintf("echo start %s >> '%s'\nread line < '%s'\necho end %s >> '%s'\n", name, log, g.path, name, log)
}

// arrived reports whether a discovery waits at the gate, without
// letting it through.
func (g *gate) arrived() bool {
	if g.fd >= 0 {
		return true
	}
	fd, err := syscall.Open(g.path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false // ENXIO: no reader yet
	}
	g.fd = fd
	return true
}

// await waits until a discovery waits at the gate.
func (g *gate) await(t *testing.T) {
	t.Helper()
	// Real time: the discovery is a real process.
	require.Eventually(t, g.arrived, 10*time.Second, 2*time.Millisecond, "no discovery reached %s", g.path)
}

// open lets the discovery waiting at the gate go on.
func (g *gate) open(t *testing.T) {
	t.Helper()
	require.True(t, g.arrived(), "no discovery waits at the gate")
	_, err := syscall.Write(g.fd, []byte("go\n"))
	require.NoError(t, err)
	g.close()
}

func (g *gate) close() {
	if g.fd >= 0 {
		syscall.Close(g.fd)
		g.fd = -1
	}
}

const greetSchema = `{"tools":{"greet":{"description":"Say hello."}}}`

// gatedPackage is a shell package whose --schema waits at g, then prints
// schema (or fails, with schema "").
func gatedPackage(t *testing.T, g *gate, name, log, schema string) []byte {
	cmd := g.script(name, log)
	if schema == "" {
		cmd += "echo broken; exit 3"
	} else {
		cmd += schemaEcho(schema)
	}
	return scriptPackage(t, cmd)
}

func startUpload(t *testing.T, s *Store, name string, pkg []byte) Info {
	t.Helper()
	info, err := s.StartUpload(context.Background(), name, bytes.NewReader(pkg), int64(len(pkg)))
	require.NoError(t, err)
	return info
}

func TestStartUploadReturnsPendingWhileDiscoveryRuns(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	g := newGate(t, "g")
	log := filepath.Join(t.TempDir(), "log")
	info := startUpload(t, s, "slow", gatedPackage(t, g, "slow", log, greetSchema))
	assert.Equal(t, StatusPending, info.Status)
	assert.Equal(t, 1, info.Version)
	assert.Equal(t, 0, info.Serving)
	assert.False(t, info.Uploaded.IsZero())
	require.Len(t, info.Versions, 1)
	assert.Equal(t, VersionInfo{Version: 1, Uploaded: info.Uploaded, Status: StatusPending}, info.Versions[0])

	g.await(t) // returned before the discovery could end
	onDisk, err := os.ReadFile(filepath.Join(s.Dir(), "slow", "state.json"))
	require.NoError(t, err)
	assert.Contains(t, string(onDisk), `"status":"pending"`, "pending is persisted")
	_, err = s.Toolset("slow", nil).GetTools(context.Background())
	var nr *NotReadyError
	require.ErrorAs(t, err, &nr)
	assert.Equal(t, StatusPending, nr.Status)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Wait(ctx, "slow")
	require.ErrorIs(t, err, context.Canceled)

	g.open(t)
	info, err = s.Wait(context.Background(), "slow")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	assert.Equal(t, 1, info.Serving)
	assert.Equal(t, StatusReady, info.Versions[0].Status)
	assert.Equal(t, 1, info.Versions[0].Tools)
	_, err = s.Wait(context.Background(), "nope")
	assert.ErrorIs(t, err, ErrNotFound)
}

// TestDiscoveryBoundHolds: with MaxParallelDiscovery 1, the second
// toolset's --schema starts after the first's ended, as the packages
// themselves log it.
func TestDiscoveryBoundHolds(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect, MaxParallelDiscovery: 1})
	log := filepath.Join(t.TempDir(), "log")
	ga, gb := newGate(t, "a"), newGate(t, "b")
	startUpload(t, s, "a", gatedPackage(t, ga, "a", log, greetSchema))
	startUpload(t, s, "b", gatedPackage(t, gb, "b", log, greetSchema))

	// One of them discovers; the other waits, pending.
	first, second := ga, gb
	require.Eventually(t, func() bool { return ga.arrived() || gb.arrived() }, 10*time.Second, 2*time.Millisecond)
	if gb.arrived() {
		first, second = gb, ga
	}
	assert.False(t, second.arrived(), "the second discovery started while the first runs")
	for _, n := range []string{"a", "b"} {
		assert.Equal(t, StatusPending, s.mustInfo(t, n).Status)
	}
	first.open(t)
	second.await(t)
	second.open(t)
	for _, n := range []string{"a", "b"} {
		info, err := s.Wait(context.Background(), n)
		require.NoError(t, err)
		assert.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	}
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	lines := strings.Fields(string(data))
	require.Len(t, lines, 8, "%s", data)
	assert.Equal(t, "start", lines[0])
	assert.Equal(t, "end", lines[2], "the first ended before anything else started: %s", data)
	assert.Equal(t, lines[1], lines[3])
	assert.Equal(t, []string{"start", "end"}, []string{lines[4], lines[6]})
}

// TestUploadsOfOneToolsetAreSerialised: a StartUpload of a toolset whose
// discovery runs waits for it; its context ends the wait, changing
// nothing.
func TestUploadsOfOneToolsetAreSerialised(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	g := newGate(t, "g")
	log := filepath.Join(t.TempDir(), "log")
	startUpload(t, s, "ts", gatedPackage(t, g, "v1", log, greetSchema))
	g.await(t)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	pkg := scriptPackage(t, schemaEcho(`{"tools":{"hello":{"description":"Say hello again."}}}`))
	_, err := s.StartUpload(ctx, "ts", bytes.NewReader(pkg), int64(len(pkg)))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	info := s.mustInfo(t, "ts")
	assert.Equal(t, 1, info.Version, "nothing changed")
	assert.Equal(t, StatusPending, info.Status)
	assert.Len(t, info.Versions, 1)
	assert.NoDirExists(t, filepath.Join(s.Dir(), "ts", "v2"))

	done := make(chan Info, 1)
	go func() {
		info, err := s.StartUpload(context.Background(), "ts", bytes.NewReader(pkg), int64(len(pkg)))
		assert.NoError(t, err)
		done <- info
	}()
	g.open(t)
	info = <-done
	assert.Equal(t, 2, info.Version)
	require.Len(t, info.Versions, 2)
	assert.Equal(t, StatusReady, info.Versions[1].Status, "version 1's discovery ended before version 2 was stored")
	assert.Equal(t, 1, info.Serving)
	info, err = s.Wait(context.Background(), "ts")
	require.NoError(t, err)
	assert.Equal(t, 2, info.Serving)
}

// TestFailedReuploadKeepsServingThePreviousVersion: a re-upload serves
// the old version while pending and after failing; only a ready one
// replaces it.
func TestFailedReuploadKeepsServingThePreviousVersion(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ctx := context.Background()
	v1 := demoPackage(t, demoManifest(""))
	ts := readyToolset(t, s, "demo", nil)
	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	n := len(tools)

	g := newGate(t, "g")
	log := filepath.Join(t.TempDir(), "log")
	info := startUpload(t, s, "demo", gatedPackage(t, g, "v2", log, ""))
	g.await(t)
	assert.Equal(t, StatusPending, info.Status)
	assert.Equal(t, 2, info.Version)
	assert.Equal(t, 1, info.Serving)
	assert.NotEmpty(t, info.Tools, "the serving version's tools")
	tools, err = ts.GetTools(ctx)
	require.NoError(t, err, "a pending re-upload keeps the old version serving")
	assert.Len(t, tools, n)
	_, err = callTool(ctx, t, ts, "demo__echo", `{"text":"while pending"}`)
	require.NoError(t, err)

	g.open(t)
	info, err = s.Wait(ctx, "demo")
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, info.Status)
	assert.Equal(t, 2, info.Version)
	assert.Equal(t, 1, info.Serving)
	assert.NotEmpty(t, info.Errors)
	assert.Equal(t, "demo", info.Tools[0].Executable, "the tools of version 1")
	assert.Equal(t, []Status{StatusFailed, StatusReady}, []Status{info.Versions[0].Status, info.Versions[1].Status})
	_, err = callTool(ctx, t, ts, "demo__echo", `{"text":"after the failure"}`)
	require.NoError(t, err, "a failed re-upload keeps the old version serving")
	for _, f := range []string{"v1", "v2", "v1.zip", "v2.zip"} {
		_, err := os.Lstat(filepath.Join(s.Dir(), "demo", f))
		assert.NoError(t, err, "kept: %s", f)
	}

	// Both zips can be exported.
	r, size, err := s.Package("demo", 1)
	require.NoError(t, err)
	got, _ := io.ReadAll(r)
	r.Close()
	assert.Equal(t, v1, got)
	assert.Equal(t, int64(len(v1)), size)
	r, _, err = s.Package("demo", 0)
	require.NoError(t, err, "version 0 is the latest, failed or not")
	r.Close()

	// A ready upload replaces both; their folders and zips are deleted.
	info = upload(t, s, "demo", demoPackage(t, demoManifest("")))
	require.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 3, info.Serving)
	for _, f := range []string{"v1", "v2", "v1.zip", "v2.zip"} {
		assert.NoFileExists(t, filepath.Join(s.Dir(), "demo", f))
		assert.NoDirExists(t, filepath.Join(s.Dir(), "demo", f))
	}
	for _, v := range []int{1, 2, 4} {
		_, _, err = s.Package("demo", v)
		assert.ErrorIs(t, err, ErrNotFound, "version %d", v)
	}
}

// TestCloseDuringDiscoveryLeaksNothing closes a store while a slow
// package's --schema runs: the process ends, no goroutine is left, the
// toolset stays pending on disk, and the next Open discovers it again,
// with no new upload.
func TestCloseDuringDiscoveryLeaksNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler), KillGrace: -1}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	g := newGate(t, "g")
	log := filepath.Join(t.TempDir(), "log")
	startUpload(t, s, "slow", gatedPackage(t, g, "slow", log, greetSchema))
	g.await(t)
	require.True(t, processWithArg(filepath.Join(dir, "slow")), "the --schema process runs")

	waitErr := make(chan error, 1)
	go func() { _, err := s.Wait(context.Background(), "slow"); waitErr <- err }()
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-waitErr, ErrClosed)
	assert.False(t, processWithArg(filepath.Join(dir, "slow")), "Close ended the --schema process")
	g.close()
	data, err := os.ReadFile(filepath.Join(dir, "slow", "state.json"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"status":"pending"`)

	s2, err := Open(dir, opts)
	require.NoError(t, err)
	defer s2.Close()
	g.await(t) // discovered again
	g.open(t)
	info, err := s2.Wait(context.Background(), "slow")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	assert.Equal(t, 1, info.Version)
	_, err = s2.Toolset("slow", nil).GetTools(context.Background())
	require.NoError(t, err)
}

// TestReuploadPendingAtCloseStillServesAfterReopening.
func TestReuploadPendingAtCloseStillServesAfterReopening(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler), KillGrace: -1}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	readyToolset(t, s, "demo", nil)
	g := newGate(t, "g")
	log := filepath.Join(t.TempDir(), "log")
	startUpload(t, s, "demo", gatedPackage(t, g, "v2", log, greetSchema))
	g.await(t)
	require.NoError(t, s.Close())
	g.close()

	s2, err := Open(dir, opts)
	require.NoError(t, err)
	defer s2.Close()
	info := s2.mustInfo(t, "demo")
	assert.Equal(t, StatusPending, info.Status)
	assert.Equal(t, 2, info.Version)
	assert.Equal(t, 1, info.Serving)
	ts := s2.Toolset("demo", nil)
	_, err = callTool(context.Background(), t, ts, "demo__echo", `{"text":"v1 after a restart"}`)
	require.NoError(t, err, "the old version serves while version 2 is discovered again")
	g.await(t)
	g.open(t)
	info, err = s2.Wait(context.Background(), "demo")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	assert.Equal(t, 2, info.Serving)
	tools, err := ts.GetTools(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "demo__greet", tools[0].Name)
	assert.NoDirExists(t, filepath.Join(dir, "demo", "v1"))
}

// TestConcurrentUploadsAndReads races uploads within and across
// toolsets with Wait, Info, List and GetTools (run it with -race).
func TestConcurrentUploadsAndReads(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect, MaxParallelDiscovery: 2})
	ctx := context.Background()
	good := scriptPackage(t, schemaEcho(greetSchema))
	bad := scriptPackage(t, "echo nope")
	names := []string{"a", "b", "c"}
	const perWriter, writers = 3, 2
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, n := range names {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWriter {
					pkg := good
					if (w+i)%3 == 2 {
						pkg = bad
					}
					if _, err := s.StartUpload(ctx, n, bytes.NewReader(pkg), int64(len(pkg))); !assert.NoError(t, err) {
						return
					}
					if i%2 == 0 {
						_, err := s.Wait(ctx, n)
						assert.NoError(t, err)
					}
				}
			}()
		}
	}
	var readers sync.WaitGroup
	for _, n := range names {
		readers.Add(1)
		go func() {
			defer readers.Done()
			ts := s.Toolset(n, nil)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if info, err := s.Info(n); err == nil {
					assert.LessOrEqual(t, info.Serving, info.Version)
					assert.LessOrEqual(t, len(info.Versions), MaxVersionHistory)
				}
				_ = s.List()
				if _, err := ts.GetTools(ctx); err != nil {
					var nr *NotReadyError
					if !errors.As(err, &nr) && !errors.Is(err, ErrNotFound) {
						assert.NoError(t, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, n := range names {
		info, err := s.Wait(ctx, n)
		require.NoError(t, err)
		assert.Equal(t, writers*perWriter, info.Version, "no upload lost")
		assert.Len(t, info.Versions, writers*perWriter)
		for i, v := range info.Versions {
			assert.Equal(t, info.Version-i, v.Version, "newest first")
			assert.NotEqual(t, StatusPending, v.Status)
		}
		vs, _ := os.ReadDir(filepath.Join(s.Dir(), n))
		var kept []string
		for _, v := range vs {
			if strings.HasPrefix(v.Name(), "v") {
				kept = append(kept, v.Name())
			}
		}
		assert.LessOrEqual(t, len(kept), 4, "only the latest and the serving version are kept: %v", kept)
	}
	close(stop)
	readers.Wait()
}

// TestHistoryIsBounded keeps the last MaxVersionHistory uploads, and
// bounds each one's errors.
func TestHistoryIsBounded(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	many := `for i in $(seq 1 40); do echo '{"tools":{' ; done; exit 1`
	pkg := scriptPackage(t, "echo "+strings.Repeat("x", 4000)+" >&2\n"+many)
	var info Info
	for range MaxVersionHistory + 3 {
		info = upload(t, s, "h", pkg)
	}
	assert.Equal(t, MaxVersionHistory+3, info.Version)
	require.Len(t, info.Versions, MaxVersionHistory)
	assert.Equal(t, info.Version, info.Versions[0].Version)
	assert.Equal(t, 4, info.Versions[MaxVersionHistory-1].Version)
	for _, v := range info.Versions {
		assert.Equal(t, StatusFailed, v.Status)
		assert.LessOrEqual(t, len(v.Errors), MaxVersionErrors+1)
		for _, e := range v.Errors {
			assert.LessOrEqual(t, len(e), maxVersionErrorBytes+3)
		}
	}
}

// TestStateOfAnEarlierReleaseLoads opens state.json files as the
// previous release wrote them (no serving version, upload time or
// history).
func TestStateOfAnEarlierReleaseLoads(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	readyToolset(t, s, "ready", nil)
	upload(t, s, "failed", scriptPackage(t, "echo nope"))
	require.NoError(t, s.Close())

	updated := map[string]string{}
	for _, n := range []string{"ready", "failed"} {
		p := filepath.Join(dir, n, "state.json")
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		var rec map[string]any
		require.NoError(t, json.Unmarshal(data, &rec))
		for _, k := range []string{"serving", "uploaded", "versions", "candidate"} {
			delete(rec, k)
		}
		updated[n] = rec["updated"].(string)
		old, err := json.Marshal(rec)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, old, 0o644))
		require.NoError(t, os.Remove(filepath.Join(dir, n, "v1.zip")), "no zips were kept")
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "state-v0.json"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "golden", "v3"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "golden", "state.json"), golden, 0o644))

	s2, err := Open(dir, opts)
	require.NoError(t, err)
	defer s2.Close()
	ready := s2.mustInfo(t, "ready")
	assert.Equal(t, StatusReady, ready.Status)
	assert.Equal(t, 1, ready.Serving, "a ready record serves its version")
	assert.Equal(t, updated["ready"], ready.Uploaded.Format(time.RFC3339Nano))
	require.Len(t, ready.Versions, 1)
	assert.Equal(t, VersionInfo{Version: 1, Uploaded: ready.Uploaded, Status: StatusReady, Tools: len(ready.Tools)}, ready.Versions[0])
	_, err = callTool(context.Background(), t, s2.Toolset("ready", nil), "ready__echo", `{"text":"x"}`)
	require.NoError(t, err)
	_, _, err = s2.Package("ready", 0)
	assert.ErrorIs(t, err, ErrNotFound, "uploaded before zips were kept")

	failed := s2.mustInfo(t, "failed")
	assert.Equal(t, StatusFailed, failed.Status)
	assert.Equal(t, 0, failed.Serving, "no other version was kept")
	require.Len(t, failed.Versions, 1)
	assert.Equal(t, StatusFailed, failed.Versions[0].Status)
	assert.Equal(t, failed.Errors, failed.Versions[0].Errors)

	gi := s2.mustInfo(t, "golden")
	assert.Equal(t, StatusFailed, gi.Status, "%v", gi.Errors)
	assert.Equal(t, 3, gi.Version)
	assert.Equal(t, 0, gi.Serving)
	assert.Equal(t, []string{`executable "sh": --schema failed (exit code 3); stderr was empty`}, gi.Errors)
	require.Len(t, gi.Executables, 1)
	assert.Equal(t, "python/bin/greet.sh", gi.Executables[0].File)
	assert.Equal(t, "2026-11-20T09:30:00.123456789Z", gi.Uploaded.Format(time.RFC3339Nano))
	require.Len(t, gi.Versions, 1)
	assert.Equal(t, 3, gi.Versions[0].Version)
	// The next upload takes the next number.
	info := upload(t, s2, "golden", scriptPackage(t, schemaEcho(greetSchema)))
	assert.Equal(t, 4, info.Version)
	assert.Equal(t, 4, info.Serving)
}

// TestRemoveCancelsARunningDiscovery: Remove does not wait for a slow
// --schema; the process ends and nothing of the toolset stays.
func TestRemoveCancelsARunningDiscovery(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect, KillGrace: -1})
	g := newGate(t, "g")
	log := filepath.Join(t.TempDir(), "log")
	startUpload(t, s, "slow", gatedPackage(t, g, "slow", log, greetSchema))
	g.await(t)
	require.NoError(t, s.Remove("slow"))
	assert.False(t, processWithArg(filepath.Join(s.Dir(), "slow")), "the --schema process ended")
	info, err := s.Wait(context.Background(), "slow")
	require.NoError(t, err)
	assert.Equal(t, StatusRemoved, info.Status)
	assert.NoDirExists(t, filepath.Join(s.Dir(), "slow", "v1"))
	assert.NoFileExists(t, filepath.Join(s.Dir(), "slow", "v1.zip"))
	_, err = s.StartUpload(context.Background(), "x", bytes.NewReader(nil), 0)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.NoError(t, s.Close())
	pkg := scriptPackage(t, schemaEcho(greetSchema))
	_, err = s.StartUpload(context.Background(), "x", bytes.NewReader(pkg), int64(len(pkg)))
	assert.ErrorIs(t, err, ErrClosed)
}

// TestUnsavedDiscoveryResultDoesNotHangWait: when state.json cannot be
// written at the end of a discovery, Wait still returns its result, and
// the old version's folder, which state.json still names, stays.
func TestUnsavedDiscoveryResultDoesNotHangWait(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	readyToolset(t, s, "demo", nil)
	g := newGate(t, "g")
	log := filepath.Join(t.TempDir(), "log")
	startUpload(t, s, "demo", gatedPackage(t, g, "v2", log, greetSchema))
	g.await(t)
	state := filepath.Join(s.Dir(), "demo", "state.json")
	saved, err := os.ReadFile(state)
	require.NoError(t, err)
	require.NoError(t, os.Remove(state))
	require.NoError(t, os.MkdirAll(filepath.Join(state, "blocker"), 0o755)) // rename over it fails
	g.open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := s.Wait(ctx, "demo")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 2, info.Serving)
	assert.DirExists(t, filepath.Join(s.Dir(), "demo", "v1"))
	require.NoError(t, os.RemoveAll(state))
	require.NoError(t, os.WriteFile(state, saved, 0o600))
}
