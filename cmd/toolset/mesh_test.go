package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// cliBinary builds the command once per test binary and returns its
// path; TestMain removes it.
func cliBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "toolset-cli-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "toolset")
		// Without a symbol table and DWARF, which no test reads: the
		// link takes about half the time.
		if out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// proc is the command running as a process of its own, its stderr read
// line by line.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string
	exited chan error

	mu     sync.Mutex
	logged []string
	ended  bool
}

// startCLI starts the binary with args; it is killed at the end of the
// test unless stopped.
func startCLI(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(cliBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{t: t, cmd: cmd, lines: make(chan string, 10000), exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.logged = append(p.logged, sc.Text())
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		p.mu.Lock()
		ended := p.ended
		p.mu.Unlock()
		if !ended {
			_ = cmd.Process.Kill()
			for range p.lines {
			}
			<-p.exited
		}
	})
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logged, "\n")
}

// waitLine waits for a line of its log that re matches and returns the
// match's groups.
func (p *proc) waitLine(re *regexp.Regexp) []string {
	p.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			require.True(p.t, ok, "the command ended before logging %s: %s", re, p.log())
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-timeout:
			p.t.Fatalf("no line matching %s: %s", re, p.log())
		}
	}
}

// stop sends SIGTERM and requires a clean exit.
func (p *proc) stop() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
	go func() {
		for range p.lines {
		}
	}()
	select {
	case err := <-p.exited:
		p.mu.Lock()
		p.ended = true
		p.mu.Unlock()
		require.NoError(p.t, err, "a clean exit on SIGTERM: %s", p.log())
	case <-time.After(60 * time.Second):
		p.t.Fatalf("the command did not stop on SIGTERM: %s", p.log())
	}
}

var (
	urlRE    = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)`)
	brokerRE = regexp.MustCompile(`broker=(nats://127\.0\.0\.1:\d+)`)
)

// putPackage uploads a zip to a platform served without authentication
// and waits until its status is want.
func putPackage(t *testing.T, base, name, zipPath string) {
	t.Helper()
	data, err := os.ReadFile(zipPath)
	require.NoError(t, err)
	req, err := http.NewRequest("PUT", base+"/api/v1/platform/toolsets/"+name+"/package", bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/zip")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusAccepted, res.StatusCode, "%s", body)
}

// toolsetStatus returns a toolset's discoveryStatus and errors.
func toolsetStatus(t *testing.T, base, name string) (string, []string) {
	t.Helper()
	res, err := http.Get(base + "/api/v1/platform/toolsets/" + name)
	require.NoError(t, err)
	defer res.Body.Close()
	var d struct {
		DiscoveryStatus string   `json:"discoveryStatus"`
		DiscoveryErrors []string `json:"discoveryErrors"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&d))
	return d.DiscoveryStatus, d.DiscoveryErrors
}

// waitStatus waits until the toolset's status is want.
func waitStatus(t *testing.T, base, name, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, errs := toolsetStatus(t, base, name)
		if st == want {
			return
		}
		require.NotEqual(t, "failed", st, "%v", errs)
		require.True(t, time.Now().Before(deadline), "toolset %s is %s, not %s", name, st, want)
		time.Sleep(50 * time.Millisecond)
	}
}

// callCLI runs toolset call --broker as a process of its own.
func callCLI(t *testing.T, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(cliBinary(t), append([]string{"call"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), errb.String(), err
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("toolset call did not end: %s", errb.String())
		return "", "", nil
	}
}

// toolset platform runs everything in one process: the embedded broker
// and a runtime, which confirms the package so that it is ready, and
// serves a call that toolset call sends through the broker.
func TestPlatformWithEmbeddedBrokerServesACall(t *testing.T) {
	zip := packaged(t)
	store := filepath.Join(t.TempDir(), "store")
	p := startCLI(t, nil, "platform", "--listen", "127.0.0.1:0", "--store", store, "--insecure-no-auth", "--sandbox", "direct", "--broker-listen", "127.0.0.1:0")
	broker := p.waitLine(brokerRE)[1]
	base := p.waitLine(urlRE)[1]

	putPackage(t, base, "demo", zip)
	waitStatus(t, base, "demo", "ready")

	out, errOut, err := callCLI(t, nil, "--broker", broker, "demo", "echo", `{"text":"world"}`)
	require.NoError(t, err, "%s", errOut)
	assert.True(t, strings.HasPrefix(out, "hello, world"), out)

	// The caller's configuration travels with the call.
	out, errOut, err = callCLI(t, nil, "--broker", broker, "--config", "greeting=hey", "demo", "echo", `{"text":"world"}`)
	require.NoError(t, err, "%s", errOut)
	assert.True(t, strings.HasPrefix(out, "hey, world"), out)

	// The platform's stored configuration reaches the runtime.
	req, err := http.NewRequest("PATCH", base+"/api/v1/platform/toolsets/demo/config", strings.NewReader(`{"greeting":"ahoy"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/merge-patch+json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, err = callCLI(t, nil, "--broker", broker, "demo", "echo", `{"text":"world"}`)
		require.NoError(t, err, "%s", errOut)
		if strings.HasPrefix(out, "ahoy, world") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the stored configuration did not reach the runtime: %s", out)
		time.Sleep(100 * time.Millisecond)
	}

	_, errOut, err = callCLI(t, nil, "--broker", broker, "nosuch", "echo", `{}`)
	require.Error(t, err)
	assert.Contains(t, errOut, "nosuch")

	p.stop()
	assert.Contains(t, p.log(), "stopped")
}

// toolset platform --no-runtime runs no tool: a runtime elsewhere (here a
// process of its own) confirms the package and serves the calls.
func TestRuntimeAsAProcessOfItsOwn(t *testing.T) {
	zip := packaged(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "broker-token")
	const token = "broker-secret-0123456789abcdef"
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	p := startCLI(t, nil, "platform", "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "store"), "--insecure-no-auth",
		"--sandbox", "direct", "--broker-listen", "127.0.0.1:0", "--broker-token-file", tokenFile, "--no-runtime")
	broker := p.waitLine(brokerRE)[1]
	base := p.waitLine(urlRE)[1]
	putPackage(t, base, "demo", zip)
	// Discovered by the platform, but no runtime confirms it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _ := toolsetStatus(t, base, "demo")
		if st == "pending" {
			if strings.Contains(p.log(), "toolset handed to the runtimes") {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "status %s: %s", st, p.log())
		time.Sleep(50 * time.Millisecond)
	}

	env := []string{"TOOLSET_BROKER_TOKEN=" + token}
	rt := startCLI(t, env, "runtime", "--broker", broker, "--dir", filepath.Join(dir, "runtime"), "--sandbox", "direct", "--max-calls", "2")
	rt.waitLine(regexp.MustCompile(`toolset runtime: serving`))
	waitStatus(t, base, "demo", "ready")

	out, errOut, err := callCLI(t, nil, "--broker", broker, "--broker-token-file", tokenFile, "demo", "echo", `{"text":"there"}`)
	require.NoError(t, err, "%s", errOut)
	assert.True(t, strings.HasPrefix(out, "hello, there"), out)

	rt.stop()
	p.stop()
	for _, l := range []string{rt.log(), p.log()} {
		assert.NotContains(t, l, token, "the token is never logged")
	}
}

// The broker's flags are checked before anything starts, and a secret
// is never taken from the command line.
func TestBrokerFlagsUsage(t *testing.T) {
	store := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"runtime"}, "--broker URL is required"},
		{[]string{"runtime", "--broker", "nats://user:hunter2@127.0.0.1:4222"}, "give no credentials in the URL"},
		{[]string{"runtime", "--broker", "http://127.0.0.1:4222"}, "the scheme must be nats, tls, ws or wss"},
		{[]string{"runtime", "--broker", "nats://127.0.0.1:4222", "--max-calls", "-1"}, "--max-calls must be positive"},
		{[]string{"runtime", "--broker", "nats://127.0.0.1:4222", "--namespace", "bad ns"}, "--namespace"},
		{[]string{"platform", "--store", store, "--broker", "nats://127.0.0.1:4222", "--broker-listen", "127.0.0.1:0"}, "--broker and --broker-listen together"},
		{[]string{"platform", "--store", store, "--no-runtime", "--max-calls", "2"}, "goes with the in-process runtime"},
		{[]string{"call", "--broker-token-file", "tok", "a.zip", "echo", "{}"}, "the broker's credentials go with --broker URL"},
		{[]string{"call", "--broker", "nats://127.0.0.1:4222", "--sandbox", "direct", "demo", "echo", "{}"}, "--sandbox and --name go with a ZIP"},
		{[]string{"agent", "tools", "a.yaml", "--store", store, "--broker", "nats://127.0.0.1:4222"}, "--store and --broker together"},
		{[]string{"serve", "a.zip", "--broker", "nats://127.0.0.1:4222"}, "--role, --store and --broker go with --agent FILE"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(tt.args...)
			assert.Equal(t, exitUsage, code, stderr)
			assert.Contains(t, stderr, tt.want)
			assert.NotContains(t, stderr, "hunter2", "a secret given in a URL is not shown")
		})
	}
}
