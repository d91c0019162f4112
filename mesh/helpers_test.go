package mesh

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gotoolset/toolset/toolpkg"
)

// jetstreamPutRace names the one goroutine nats.go v1.55.0 may leave
// behind after an Object Store Put: the Put starts a reconnect listener and
// clears its channel when it returns, and a listener scheduled only after
// that waits on a nil channel for ever. It is the library's, one per unlucky
// Put (a package publish), and not ours to stop.
var jetstreamPutRace = goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect")

func TestMain(m *testing.M) {
	code := func() int {
		defer cleanupBuilt()
		return m.Run()
	}()
	if code == 0 {
		if err := goleak.Find(jetstreamPutRace); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	builtDir  string
	builtBin  []byte
	buildErr  error
)

// toolBinary builds testdata/meshtool once and returns its bytes.
func toolBinary(t testing.TB) []byte {
	t.Helper()
	buildOnce.Do(func() {
		builtDir, buildErr = os.MkdirTemp("", "mesh-test-bin-")
		if buildErr != nil {
			return
		}
		out := filepath.Join(builtDir, "meshtool")
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./testdata/meshtool")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, b)
			return
		}
		builtBin, buildErr = os.ReadFile(out)
	})
	require.NoError(t, buildErr)
	return builtBin
}

func cleanupBuilt() {
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
}

var (
	packagesMu sync.Mutex
	packages   = map[string][]byte{}
)

// meshPackage is a zip of the meshtool binary and its manifest; extra
// changes the package's bytes (and so its digest). Each is made once per
// test binary (the binary is megabytes, which the race detector makes
// slow to copy); callers only read it.
func meshPackage(t testing.TB, extra string) []byte {
	t.Helper()
	packagesMu.Lock()
	defer packagesMu.Unlock()
	if b, ok := packages[extra]; ok {
		return b
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("manifest.yaml")
	require.NoError(t, err)
	_, err = io.WriteString(w, "version: 1\ntools:\n  meshtool:\n    runtime: go\n    executable: ./meshtool\n    timeout_seconds: 10\n")
	require.NoError(t, err)
	h := &zip.FileHeader{Name: "meshtool", Method: zip.Store}
	h.SetMode(0o755)
	w, err = zw.CreateHeader(h)
	require.NoError(t, err)
	_, err = w.Write(toolBinary(t))
	require.NoError(t, err)
	if extra != "" {
		w, err = zw.Create("NOTES")
		require.NoError(t, err)
		_, err = io.WriteString(w, extra)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	packages[extra] = buf.Bytes()
	return buf.Bytes()
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startServer starts an embedded broker closed at the end of the test.
func startServer(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer(&ServerOptions{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// connect opens a loopback connection to s, closed at the end of the test.
func connect(t testing.TB, s *Server) *nats.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := Connect(ctx, &ConnOptions{URL: s.ClientURL(), Token: s.Token(), Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// runtimeDir is a directory the user tools run as can reach.
func runtimeDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	return dir
}

// startRuntime starts a runtime in dir ("" for a new one), closed at the
// end of the test.
func startRuntime(t testing.TB, nc *nats.Conn, dir, id string, maxCalls int) *Runtime {
	t.Helper()
	if dir == "" {
		dir = runtimeDir(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := NewRuntime(ctx, nc, &RuntimeOptions{
		ID: id, Dir: dir, MaxCalls: maxCalls, Heartbeat: 100 * time.Millisecond, Logger: quietLogger(),
		Store: &toolpkg.Options{DiscoveryTimeout: 30 * time.Second, KillGrace: 200 * time.Millisecond},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})
	return r
}

// publish publishes version of the meshtool package as toolset name.
func publish(t testing.TB, nc *nats.Conn, name string, version int, zipData []byte, config map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pk, err := OpenPackages(ctx, nc, "")
	require.NoError(t, err)
	require.NoError(t, pk.Publish(ctx, name, version, bytes.NewReader(zipData), config))
}

// call is a raw call over the broker: the messages it got back.
type call struct {
	resp     chan *nats.Msg
	status   chan *nats.Msg
	subs     []*nats.Subscription
	subjects Subjects
}

// listen subscribes to agent's response and status subjects of corr.
func listen(t testing.TB, nc *nats.Conn, agent, corr string) *call {
	t.Helper()
	subj, _ := NewSubjects("")
	c := &call{resp: make(chan *nats.Msg, 16), status: make(chan *nats.Msg, 256), subjects: subj}
	rs, err := subj.Response(agent, corr)
	require.NoError(t, err)
	ss, err := subj.Status(agent, corr)
	require.NoError(t, err)
	for subject, ch := range map[string]chan *nats.Msg{rs: c.resp, ss: c.status} {
		sub, err := nc.ChanSubscribe(subject, ch)
		require.NoError(t, err)
		c.subs = append(c.subs, sub)
	}
	require.NoError(t, nc.Flush())
	t.Cleanup(func() {
		for _, s := range c.subs {
			_ = s.Unsubscribe()
		}
	})
	return c
}

// invokeMsg is a SAM invoke of tool for agent's call corr.
func invokeMsg(t testing.TB, subject, agent, corr, tool string, args any, extra func(*InvokeParams)) *nats.Msg {
	t.Helper()
	subj, _ := NewSubjects("")
	a, err := json.Marshal(args)
	require.NoError(t, err)
	p := InvokeParams{TaskID: "task-" + corr, ToolName: tool, Args: a}
	if extra != nil {
		extra(&p)
	}
	data, err := encodeRequest(corr, MethodInvoke, p)
	require.NoError(t, err)
	rs, _ := subj.Response(agent, corr)
	ss, _ := subj.Status(agent, corr)
	if subject == "" {
		subject, err = subj.Invoke(tool)
		require.NoError(t, err)
	}
	m := nats.NewMsg(subject)
	m.Data = data
	m.Reply = rs
	m.Header.Set(HeaderReplyTo, rs)
	m.Header.Set(HeaderStatusTo, ss)
	return m
}

// wait returns the response of c, and the status notifications so far.
func (c *call) wait(t testing.TB, d time.Duration) (*Response, []StatusParams) {
	t.Helper()
	select {
	case m := <-c.resp:
		if len(m.Data) == 0 {
			t.Fatalf("empty response (status %q)", m.Header.Get("Status"))
		}
		resp, err := DecodeResponse(m.Data)
		require.NoError(t, err)
		return resp, c.statuses(t)
	case <-time.After(d):
		t.Fatalf("no response within %s", d)
		return nil, nil
	}
}

func (c *call) statuses(t testing.TB) []StatusParams {
	var out []StatusParams
	for {
		select {
		case m := <-c.status:
			req, err := DecodeRequest(m.Data, MethodStatus, false)
			require.NoError(t, err)
			var p StatusParams
			require.NoError(t, Decode(req.Params, 0, &p))
			out = append(out, p)
		default:
			return out
		}
	}
}

// result decodes a successful response.
func result(t testing.TB, resp *Response) InvokeResult {
	t.Helper()
	require.Nil(t, resp.Error, "error: %+v", resp.Error)
	var r InvokeResult
	require.NoError(t, json.Unmarshal(resp.Result, &r))
	return r
}

// errorData decodes an error response's data.
func errorData(t testing.TB, resp *Response) ErrorData {
	t.Helper()
	require.NotNil(t, resp.Error)
	var d ErrorData
	if len(resp.Error.Data) > 0 {
		require.NoError(t, json.Unmarshal(resp.Error.Data, &d))
	}
	return d
}

func bytesReader(s string) *bytes.Reader { return bytes.NewReader([]byte(s)) }

// send publishes m and waits for its answer on c: the response, or
// noResponders when the server said nobody serves m's subject.
func (c *call) send(t testing.TB, nc *nats.Conn, m *nats.Msg, d time.Duration) (resp *Response, noResponders bool) {
	t.Helper()
	require.NoError(t, nc.PublishMsg(m))
	select {
	case got := <-c.resp:
		if len(got.Data) == 0 && got.Header.Get("Status") == "503" {
			return nil, true
		}
		resp, err := DecodeResponse(got.Data)
		require.NoError(t, err)
		return resp, false
	case <-time.After(d):
		// What the runtime was doing, for whoever reads the failure.
		var dump strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Logf("goroutines:\n%s", dump.String())
		t.Fatalf("no answer within %s to %s", d, m.Subject)
		return nil, false
	}
}
