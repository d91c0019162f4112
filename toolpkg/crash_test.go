package toolpkg

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashChildEnv makes TestCrashChild the body of a child process: it
// opens the store in the directory the variable names, starts an upload
// and never returns, to be killed by its parent.
const crashChildEnv = "TOOLPKG_CRASH_CHILD"

// TestCrashChild is the child of the crash tests; without crashChildEnv
// it does nothing. TOOLPKG_CRASH_AT says where it is to be killed:
// "copy" (storing the zip, before the version is recorded) or
// "discovery" (the version is recorded, its --schema runs); the package
// is in TOOLPKG_CRASH_PKG.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("the body of a child process of the crash tests")
	}
	pkg, err := os.ReadFile(os.Getenv("TOOLPKG_CRASH_PKG"))
	if err != nil {
		panic(err)
	}
	s, err := Open(dir, &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	var r interface {
		ReadAt([]byte, int64) (int, error)
	} = bytes.NewReader(pkg)
	if os.Getenv("TOOLPKG_CRASH_AT") == "copy" {
		h := newHeldReader(pkg)
		go func() {
			<-h.reached
			fmt.Println("holding")
		}()
		r = h
	}
	if _, err := s.StartUpload(context.Background(), "demo", r, int64(len(pkg))); err != nil {
		panic(err)
	}
	fmt.Println("started")
	select {}
}

// crashDuring runs a child that opens the store in dir and uploads pkg,
// and kills it (SIGKILL: no Close, no deferred call) once it printed
// ready.
func crashDuring(t *testing.T, dir, at, ready string, pkg []byte, wait func()) {
	t.Helper()
	pkgFile := filepath.Join(t.TempDir(), "pkg.zip")
	require.NoError(t, os.WriteFile(pkgFile, pkg, 0o600))
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, "TOOLPKG_CRASH_AT="+at, "TOOLPKG_CRASH_PKG="+pkgFile)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
		close(lines)
	}()
	timeout := time.After(30 * time.Second)
	for found := false; !found; {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the child ended before %q", ready)
			found = l == ready
		case <-timeout:
			cmd.Process.Kill()
			t.Fatalf("the child never said %q", ready)
		}
	}
	if wait != nil {
		wait()
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	for range lines {
	}
}

// servingStore makes a store in a new directory with version 1 of demo
// ready, and closes it.
func servingStore(t *testing.T) (string, *Options) {
	t.Helper()
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	info := upload(t, s, "demo", scriptPackage(t, schemaEcho(greetSchema)))
	require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	require.NoError(t, s.Close())
	return dir, opts
}

// TestCrashWhileStoringAnUploadKeepsTheServingVersion: killed while the
// zip of version 2 is stored, the store reopens with version 1 serving,
// nothing of version 2 left, and the next upload works.
func TestCrashWhileStoringAnUploadKeepsTheServingVersion(t *testing.T) {
	t.Parallel()
	dir, opts := servingStore(t)
	crashDuring(t, dir, "copy", "holding", scriptPackage(t, schemaEcho(greetSchema)), nil)
	s, err := Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	info, err := s.Info("demo")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 1, info.Version)
	assert.Equal(t, 1, info.Serving)
	tmp, _ := os.ReadDir(filepath.Join(dir, ".tmp"))
	assert.Empty(t, tmp, "the half-stored upload is gone")
	assert.NoDirExists(t, filepath.Join(dir, "demo", "v2"))
	info = upload(t, s, "demo", scriptPackage(t, schemaEcho(greetSchema)))
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 2, info.Serving)
}

// TestCrashDuringDiscoveryRediscoversAndServesMeanwhile: killed while
// version 2's --schema runs, the store reopens with version 1 serving and
// version 2 pending, discovers it again, and serves it.
func TestCrashDuringDiscoveryRediscoversAndServesMeanwhile(t *testing.T) {
	t.Parallel()
	dir, opts := servingStore(t)
	g := newGate(t, "g")
	log := filepath.Join(t.TempDir(), "log")
	crashDuring(t, dir, "discovery", "started", gatedPackage(t, g, "v2", log, greetSchema), func() { g.await(t) })
	g.open(t) // the orphaned --schema of the killed child ends

	s, err := Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	info, err := s.Info("demo")
	require.NoError(t, err)
	assert.Equal(t, StatusPending, info.Status)
	assert.Equal(t, 2, info.Version)
	assert.Equal(t, 1, info.Serving, "version 1 serves while 2 is discovered again")
	_, err = s.Toolset("demo", nil).GetTools(context.Background())
	require.NoError(t, err)
	g.await(t)
	g.open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err = s.Wait(ctx, "demo")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	assert.Equal(t, 2, info.Serving)
	assert.NoDirExists(t, filepath.Join(dir, "demo", "v1"))
	info = upload(t, s, "demo", scriptPackage(t, schemaEcho(greetSchema)))
	assert.Equal(t, 3, info.Version, "no number reused")
}
