package redistoolset_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a redis-server of one test, on a free loopback port in the
// test's temporary directory.
type server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	// exited is closed once cmd has exited and been waited for.
	exited chan struct{}
	// durable makes the server write every change to an append-only file
	// before answering, so that a restart keeps what it had.
	durable bool
}

// startServer starts a redis-server for t, stopped when t ends. It skips
// t when the binary is missing.
func startServer(t testing.TB) *server { t.Helper(); return startServerWith(t, false) }

// startServerWith is startServer, of a durable server if durable.
func startServerWith(t testing.TB, durable bool) *server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Log("these tests run a real redis-server")
		t.Skip("redis-server not installed (apt-get install redis-server)")
	}
	s := &server{t: t, bin: bin, dir: t.TempDir(), durable: durable}
	t.Cleanup(s.stop)
	// The port is free when it is picked, but a test running in parallel
	// may take it before this server binds it: then the server exits, or
	// another test's server answers, and another port is tried.
	for range 5 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s.port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		if s.start() {
			return s
		}
	}
	t.Fatal("redis-server found no free port in 5 tries")
	return nil
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start runs the server and waits until it answers. It reports false,
// with no server running, when the server could not take its port.
func (s *server) start() bool {
	s.t.Helper()
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir}
	if s.durable {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	s.cmd = exec.Command(s.bin, args...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	exited := make(chan struct{})
	s.exited = exited
	go func(cmd *exec.Cmd) {
		_ = cmd.Wait()
		close(exited)
	}(s.cmd)
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			s.cmd = nil
			return false
		default:
		}
		if c.Ping(context.Background()).Err() == nil {
			break
		}
		if time.Now().After(deadline) {
			s.stop()
			s.t.Fatalf("redis-server on %s did not answer in 10s", s.addr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The server that answers is this one, with its own directory.
	dir, err := c.ConfigGet(context.Background(), "dir").Result()
	if err != nil || dir["dir"] != s.dir {
		s.stop()
		return false
	}
	return true
}

// stop kills the server, losing what it held (it saves nothing).
func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// client returns a client of the server, closed when the test ends, that
// counts its round trips. It dials once a command, not go-redis's default
// of five times 100 ms apart: a stopped server's errors come sooner.
func (s *server) client() (*redis.Client, *atomic.Int64) {
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1, DialTimeout: time.Second, DialerRetries: 1})
	s.t.Cleanup(func() { c.Close() })
	n := new(atomic.Int64)
	c.AddHook(countHook{n})
	return c, n
}

// countHook counts the commands and pipelines a client sends.
type countHook struct{ n *atomic.Int64 }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// child is the role a re-executed test binary plays, and the address of
// its Redis.
const (
	childEnv = "REDISTOOLSET_TEST_CHILD"
	addrEnv  = "REDISTOOLSET_TEST_ADDR"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		if err := runChild(role, os.Getenv(addrEnv), os.Args[len(os.Args)-1]); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// spawn starts the test binary again as a child in role, with arg.
func spawn(t *testing.T, s *server, role, arg string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", arg)
	// atexit_sleep_ms=0: a binary built with the race detector otherwise
	// sleeps a second as it exits.
	cmd.Env = append(os.Environ(), childEnv+"="+role, addrEnv+"="+s.addr(),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return cmd
}

// runOne runs a child to its end and returns what it printed.
func runOne(t *testing.T, s *server, role, arg string) string {
	t.Helper()
	out, err := spawn(t, s, role, arg).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("child %s: %v\n%s", role, err, ee.Stderr)
		}
		t.Fatalf("child %s: %v", role, err)
	}
	return string(out)
}
