package mesh

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/toolpkg"
)

// This file runs the parts of the mesh as separate processes: a real
// nats-server built from its module, and runtimes that are this test
// binary started again in runtime mode.

// envRuntimeChild holds a runtimeChildConfig (JSON) when this binary runs
// as a runtime process.
const envRuntimeChild = "MESH_TEST_RUNTIME_CHILD"

// runtimeChildConfig is what a runtime process runs with.
type runtimeChildConfig struct {
	URL       string
	Dir       string
	ID        string
	MaxCalls  int
	Heartbeat time.Duration
}

func init() {
	if cfg := os.Getenv(envRuntimeChild); cfg != "" {
		os.Exit(runtimeChild(cfg))
	}
}

// runtimeChild serves as a runtime until SIGTERM: it prints "ready" once
// it has synced and serves.
func runtimeChild(cfg string) int {
	var c runtimeChildConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintln(os.Stderr, "runtime child:", err)
		return 2
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nc, err := Connect(ctx, &ConnOptions{URL: c.URL, Name: c.ID, Logger: quietLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "runtime child:", err)
		return 1
	}
	defer nc.Close()
	// prlimit, not bwrap: the fault tests count a tool's runs in a file
	// of the host, which bwrap's read-only root would hide.
	r, err := NewRuntime(ctx, nc, &RuntimeOptions{
		ID: c.ID, Dir: c.Dir, MaxCalls: c.MaxCalls, Heartbeat: c.Heartbeat, Logger: quietLogger(),
		Store: &toolpkg.Options{Sandbox: toolpkg.ModePrlimit, DiscoveryTimeout: 30 * time.Second, KillGrace: 200 * time.Millisecond},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "runtime child:", err)
		return 1
	}
	fmt.Println("ready")
	<-term
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	if err := r.Close(cctx); err != nil {
		fmt.Fprintln(os.Stderr, "runtime child: close:", err)
		return 1
	}
	return 0
}

// needProcesses skips a test that starts processes under -short.
func needProcesses(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a nats-server and runtime processes; skipped with -short")
	}
}

// runtimeProc is a runtime running in a process of its own.
type runtimeProc struct {
	id   string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startRuntimeProc starts a runtime process connected to url, with its
// own directory, and waits until it serves. It is killed at the end of
// the test if it still runs.
func startRuntimeProc(t testing.TB, url, id string, maxCalls int) *runtimeProc {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cfg, err := json.Marshal(runtimeChildConfig{URL: url, Dir: runtimeDir(t), ID: id, MaxCalls: maxCalls, Heartbeat: 100 * time.Millisecond})
	require.NoError(t, err)
	cmd := exec.Command(self, "-test.run=^$")
	// atexit_sleep_ms=0: a binary built with the race detector otherwise
	// sleeps a second as it exits.
	cmd.Env = append(os.Environ(), envRuntimeChild+"="+string(cfg), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &runtimeProc{id: id, cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(ready)
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("runtime %s exited: %v\n%s", id, p.err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("runtime %s not ready within 60s\n%s", id, stderr.String())
	}
	return p
}

// kill ends the runtime with SIGKILL, as a crash would.
func (p *runtimeProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop ends the runtime with SIGTERM and waits for it.
func (p *runtimeProc) stop(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		require.NoError(t, p.err)
	case <-time.After(10 * time.Second):
		t.Fatalf("runtime %s did not stop within 10s", p.id)
	}
}

var (
	natsOnce sync.Once
	natsBin  string
	natsErr  error
)

// natsServerBinary returns the path of a nats-server built from the
// module this package requires, once per test binary and cached across
// runs under the user's cache directory (keyed by the module's version).
func natsServerBinary(t testing.TB) string {
	t.Helper()
	natsOnce.Do(func() {
		version := natsServerVersion()
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "toolset-mesh-test")
		natsBin = filepath.Join(dir, "nats-server-"+version)
		if _, err := os.Stat(natsBin); err == nil && version != "devel" {
			return
		}
		if natsErr = os.MkdirAll(dir, 0o755); natsErr != nil {
			return
		}
		tmp := natsBin + ".tmp" + strconv.Itoa(os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, "github.com/nats-io/nats-server/v2")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			natsErr = fmt.Errorf("go build nats-server: %v\n%s", err, out)
			return
		}
		natsErr = os.Rename(tmp, natsBin)
	})
	require.NoError(t, natsErr)
	return natsBin
}

// natsServerVersion is the version of the nats-server module this package
// requires: from the build information, or, in a test binary, which may
// have none, from the module's go.mod; "devel" when neither says.
func natsServerVersion() string {
	const path = "github.com/nats-io/nats-server/v2"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path && d.Version != "" && d.Version != "(devel)" {
				return d.Version
			}
		}
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		return "devel"
	}
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == path && strings.HasPrefix(f[1], "v") {
			return f[1]
		}
	}
	return "devel"
}

// natsProc is a nats-server process with JetStream on a loopback port;
// restart brings it back on the same port and storage.
type natsProc struct {
	bin, conf, url string
	port           int
	cmd            *exec.Cmd
	done           chan struct{}
	log            *bytes.Buffer
}

// startNATS starts a nats-server process, killed at the end of the test.
func startNATS(t testing.TB) *natsProc {
	t.Helper()
	bin := natsServerBinary(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil,
		"listen: \"127.0.0.1:%d\"\nmax_payload: %d\njetstream {\n  store_dir: %q\n}\n",
		port, DefaultMaxPayload, filepath.Join(dir, "js")), 0o600))
	p := &natsProc{bin: bin, conf: conf, port: port, url: fmt.Sprintf("nats://127.0.0.1:%d", port)}
	p.start(t)
	t.Cleanup(p.kill)
	return p
}

func (p *natsProc) start(t testing.TB) {
	t.Helper()
	p.log = &bytes.Buffer{}
	p.cmd = exec.Command(p.bin, "-c", p.conf)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	require.NoError(t, p.cmd.Start())
	p.done = make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-p.done:
			t.Fatalf("nats-server exited:\n%s", p.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server not listening within 10s:\n%s", p.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the server with SIGKILL.
func (p *natsProc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// restart kills the server and starts it again on the same port and
// storage.
func (p *natsProc) restart(t testing.TB) {
	t.Helper()
	p.kill()
	p.start(t)
}

var (
	faultOnce sync.Once
	faultBin  []byte
	faultErr  error
)

// faultPackage is a zip of testdata/faulttool and its manifest.
func faultPackage(t testing.TB) []byte {
	t.Helper()
	faultOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mesh-faulttool-")
		if err != nil {
			faultErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "faulttool")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./testdata/faulttool")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			faultErr = fmt.Errorf("go build: %v\n%s", err, b)
			return
		}
		faultBin, faultErr = os.ReadFile(out)
	})
	require.NoError(t, faultErr)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("manifest.yaml")
	require.NoError(t, err)
	_, err = io.WriteString(w, "version: 1\ntools:\n  faulttool:\n    runtime: go\n    executable: ./faulttool\n    timeout_seconds: 20\n")
	require.NoError(t, err)
	h := &zip.FileHeader{Name: "faulttool", Method: zip.Store}
	h.SetMode(0o755)
	w, err = zw.CreateHeader(h)
	require.NoError(t, err)
	_, err = w.Write(faultBin)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}
