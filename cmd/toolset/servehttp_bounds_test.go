package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bounds of serve --http, tested on serveHTTP in this process with
// Go tools, the bounds lowered.

type waitArgs struct {
	MS int `json:"ms"`
}

// boundsToolset has a tool that waits, one that holds until released
// (sending on held as it begins), and one that reports progress.
func boundsToolset(held chan<- struct{}, release <-chan struct{}) toolset.Toolset {
	return toolset.NewFunction(
		toolset.NewTool("hold", "Hold until released.", func(ctx context.Context, _ struct{}) (string, error) {
			held <- struct{}{}
			select {
			case <-release:
				return "released", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}),
		toolset.NewTool("wait", "Wait ms milliseconds.", func(ctx context.Context, in waitArgs) (string, error) {
			select {
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
				return "waited", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}),
		toolset.NewTool("progress", "Report progress.", func(ctx context.Context, _ struct{}) (string, error) {
			toolset.ReportProgress(ctx, toolset.Progress{Message: "half way", Fraction: 0.5})
			toolset.ReportProgress(ctx, toolset.Progress{Message: "almost", Fraction: 0.9})
			return "done", nil
		}),
	)
}

// serveInProcess runs serveHTTP on loopback until the test ends, and
// returns its base URL.
func serveInProcess(t *testing.T, token string, ts toolset.Toolset, opts ...func(*httpServer)) string {
	t.Helper()
	return serveServer(t, token, mcptoolset.NewServer(ts), opts...)
}

// withMaxCalls sets the bound on calls of a runner the test serves.
func withMaxCalls(n int64) func(*httpServer) { return func(h *httpServer) { h.maxCalls = n } }

// serveServer runs serveHTTP for srv on loopback until the test ends, and
// returns its base URL.
func serveServer(t *testing.T, token string, srv *mcptoolset.Server, opts ...func(*httpServer)) string {
	t.Helper()
	return serveAt(t, "127.0.0.1:0", token, srv, opts...)
}

// serveAt runs serveHTTP for srv on addr until the test ends, and returns
// its base URL.
func serveAt(t *testing.T, addr, token string, srv *mcptoolset.Server, opts ...func(*httpServer)) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	hf := &httpFlags{addr: addr, shutdown: time.Second}
	done := make(chan error, 1)
	h := &httpServer{srv: srv, callBound: time.Minute, logger: warnLogger(io.Discard)}
	if token != "" {
		h.tokens = []string{token}
	}
	for _, o := range opts {
		o(h)
	}
	go func() {
		done <- serveHTTP(ctx, h, hf, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := listening.FindStringSubmatch(sc.Text() + "\n"); m != nil {
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			return m[1]
		}
	}
	t.Fatal("serveHTTP did not listen")
	return ""
}

func TestListenStreamOutlastsTheBodyReadDeadline(t *testing.T) {
	defer func(h, b time.Duration) { readHeaderTimeout, bodyReadTimeout = h, b }(readHeaderTimeout, bodyReadTimeout)
	readHeaderTimeout, bodyReadTimeout = 50*time.Millisecond, 50*time.Millisecond
	srv := mcptoolset.NewServer(boundsToolset(nil, nil))
	base := serveServer(t, testToken, srv)
	ctx := context.Background()
	changed := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}},
	}, nil)
	require.NoError(t, err)
	defer cs.Close()
	// Past the body's read deadline, the client's subscriptions/listen
	// stream still carries tools/list_changed: a deadline left on the
	// connection would have ended it.
	time.Sleep(3 * (readHeaderTimeout + bodyReadTimeout))
	srv.ToolsChanged()
	select {
	case <-changed:
	case <-time.After(3 * time.Second):
		t.Fatal("no notifications/tools/list_changed on the listen stream")
	}
}

func TestCallOutlastsTheBodyReadDeadline(t *testing.T) {
	defer func(h, b time.Duration) { readHeaderTimeout, bodyReadTimeout = h, b }(readHeaderTimeout, bodyReadTimeout)
	readHeaderTimeout, bodyReadTimeout = 50*time.Millisecond, 50*time.Millisecond
	base := serveInProcess(t, testToken, boundsToolset(nil, nil))
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "agent", client(t, base+"/mcp", testToken))
	require.NoError(t, err)
	text, err := callText(ctx, tools, "wait", `{"ms":500}`)
	require.NoError(t, err)
	assert.Equal(t, "waited", text)
}

func TestSlowBodyIsCut(t *testing.T) {
	defer func(h, b time.Duration) { readHeaderTimeout, bodyReadTimeout = h, b }(readHeaderTimeout, bodyReadTimeout)
	readHeaderTimeout, bodyReadTimeout = 100*time.Millisecond, 100*time.Millisecond
	base := serveInProcess(t, testToken, boundsToolset(nil, nil))
	host := strings.TrimPrefix(base, "http://")
	for _, tc := range []struct {
		auth, code string
		status     int
	}{
		{"Bearer " + testToken, "BadRequest", http.StatusBadRequest},
		// Refused before its body is read: the server then discards
		// the body, within the same deadline.
		{"", "Unauthorized", http.StatusUnauthorized},
	} {
		conn, err := net.Dial("tcp", host)
		require.NoError(t, err)
		defer conn.Close()
		// 10 bytes of the 1000 promised, and then nothing.
		_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"", host, tc.auth)
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, "the runner waited for the body for ever (Authorization %q)", tc.auth)
		defer resp.Body.Close()
		assert.Equal(t, tc.status, resp.StatusCode)
		assert.Equal(t, tc.code, jsonError(t, resp).Code)
		assert.Less(t, time.Since(start), 3*time.Second)
	}
}

func TestTooManyRequestsAre503(t *testing.T) {
	held, release := make(chan struct{}, 1), make(chan struct{})
	base := serveInProcess(t, testToken, boundsToolset(held, release), withMaxCalls(1))
	ctx := context.Background()
	// A request's slot is given back once its answer has reached the
	// client, so that the client's next request may find the one slot
	// still taken: it tries again.
	busy := func(err error) bool { return err != nil && strings.Contains(err.Error(), "Service Unavailable") }
	ts := client(t, base+"/mcp", testToken)
	tools, err := toolset.BuildTools(ctx, "agent", ts)
	for deadline := time.Now().Add(5 * time.Second); busy(err) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		tools, err = toolset.BuildTools(ctx, "agent", ts)
	}
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		for {
			_, err := callText(ctx, tools, "hold", `{}`)
			if !busy(err) {
				got <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	select {
	case <-held:
	case err := <-got:
		t.Fatalf("the call ended before it held: %v", err)
	}
	// The call is the one call the runner takes (the client's listen
	// stream is counted apart): the next is refused at once.
	resp := rawCall(t, base+"/mcp", "Bearer "+testToken, "wait", `{"ms":0}`)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, "Busy", jsonError(t, resp).Code)
	close(release)
	require.NoError(t, <-got)
	assert.Eventually(t, func() bool {
		return rawCall(t, base+"/mcp", "Bearer "+testToken, "wait", `{"ms":0}`).StatusCode == http.StatusOK
	}, 2*time.Second, 10*time.Millisecond)
}

func TestProgressReachesTheClientOverHTTP(t *testing.T) {
	base := serveInProcess(t, testToken, boundsToolset(nil, nil))
	ctx := context.Background()
	got := make(chan string, 10)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			got <- req.Params.Message
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}},
	}, nil)
	require.NoError(t, err)
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	require.False(t, res.IsError)
	for _, want := range []string{"half way", "almost"} {
		select {
		case msg := <-got:
			assert.Equal(t, want, msg)
		case <-time.After(2 * time.Second):
			t.Fatalf("no progress notification %q", want)
		}
	}
}

// rawPost posts body to the endpoint with the Authorization header auth,
// giving up after 10 s, and returns the response with its body read.
func rawPost(t *testing.T, endpoint, auth, body string) (*http.Response, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(sessionlessBody(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	setSessionless(req.Header, sessionlessBody(body)) // no initialize: a 2026-07-28 client
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp, string(data), err
}

// waitHeld waits until n calls of the hold tool have begun.
func waitHeld(t *testing.T, held <-chan struct{}, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-held:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d calls of hold began", i, n)
		}
	}
}

func holdCall(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold","arguments":{}}}`, id)
}

func TestBatchOfCallsIsRefused(t *testing.T) {
	held, release := make(chan struct{}, 10), make(chan struct{})
	defer close(release)
	base := serveInProcess(t, testToken, boundsToolset(held, release), withMaxCalls(1))
	// A batch would run each of its calls at once, on the one call the
	// runner takes: the bound on calls would not bound tools.
	for _, body := range []string{
		"[" + holdCall(1) + "," + holdCall(2) + "," + holdCall(3) + "]",
		" \r\n\t[" + holdCall(4) + "]",
	} {
		resp, text, err := rawPost(t, base+"/mcp", "Bearer "+testToken, body)
		require.NoError(t, err, "no answer: %d tools of the batch are running", len(held))
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", text)
		assert.Contains(t, text, "batches are not accepted")
		assert.Empty(t, held, "a tool of the batch ran")
	}
}

func TestCallDisguisedAsListenIsCountedAsACall(t *testing.T) {
	held, release := make(chan struct{}, 10), make(chan struct{})
	base := serveInProcess(t, testToken, boundsToolset(held, release), withMaxCalls(1))
	got := make(chan error, 1)
	go func() {
		_, _, err := rawPost(t, base+"/mcp", "Bearer "+testToken, holdCall(1))
		got <- err
	}()
	waitHeld(t, held, 1)
	// encoding/json matches keys regardless of case, and takes the last
	// of two; the SDK reads "method" only. A tools/call that the runner
	// took for a listen stream would take a slot of those, past the
	// bound on calls.
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","METHOD":"subscriptions/listen","params":{"name":"hold","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"Method":"subscriptions/listen","method":"tools/call","params":{"name":"hold","arguments":{}}}`,
	} {
		resp, text, err := rawPost(t, base+"/mcp", "Bearer "+testToken, body)
		require.NoError(t, err, "no answer: %d calls are running", len(held)+1)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", text)
	}
	close(release)
	require.NoError(t, <-got)
}

// nonLoopbackIP returns an IPv4 address of this machine that is not a
// loopback one, or skips the test.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
			return ipn.IP.String()
		}
	}
	t.Skip("this machine has no address but loopback ones")
	return ""
}

func TestDNSRebindingToAnInsecureRunnerIsRefused(t *testing.T) {
	// A runner without a token in a container, or on a LAN address: the
	// SDK guards only a loopback listener's Host. A web page at
	// http://attacker.example:PORT whose name then resolves to the
	// runner's address posts to it as to its own origin, and reads the
	// answers.
	ip := nonLoopbackIP(t)
	base := serveAt(t, ip+":0", "", mcptoolset.NewServer(boundsToolset(nil, nil)))
	_, port, err := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{"ms":0}}}`
	post := func(host string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(sessionlessBody(call)))
		require.NoError(t, err)
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		setSessionless(req.Header, call) // no initialize: a 2026-07-28 client
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		require.NoError(t, err)
		return resp, string(data)
	}
	for _, host := range []string{"attacker.example:" + port, "attacker.example", "localhost.attacker.example:" + port, "127.0.0.1.nip.io:" + port} {
		resp, text := post(host)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "Host %s: %s", host, text)
		assert.NotContains(t, text, "waited", "Host %s", host)
	}
	// Addresses and localhost, which no DNS answer changes, are served.
	for _, host := range []string{ip + ":" + port, ip, "localhost:" + port, "[::1]:" + port} {
		resp, text := post(host)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "Host %s: %s", host, text)
		assert.Contains(t, text, "waited", "Host %s", host)
	}
}

// openFDs returns the number of this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors: %v", err)
	}
	return len(fds)
}

func TestConnectionFloodIsBounded(t *testing.T) {
	defer func(n int) { maxConns = n }(maxConns)
	maxConns = 8
	base := serveInProcess(t, testToken, boundsToolset(nil, nil))
	host := strings.TrimPrefix(base, "http://")
	// Anyone who reaches the runner may open connections and send
	// nothing, each held for the header's timeout; every one would hold
	// one of the runner's file descriptors, which its tools need too.
	const flood = 60
	before := openFDs(t)
	var conns []net.Conn
	for range flood {
		c, err := net.Dial("tcp", host)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond)  // let the runner accept what it will
	held := openFDs(t) - before - flood // the runner's, beyond the client's
	assert.LessOrEqual(t, held, maxConns+4, "the runner holds a connection for each of %d", flood)
	for _, c := range conns {
		c.Close()
	}
	// Once they are gone, the runner serves again.
	resp, text, err := rawPost(t, base+"/mcp", "Bearer "+testToken, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{"ms":0}}}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", text)
}

func TestDefaultCallBoundFollowsTheMachine(t *testing.T) {
	// Each call of a packaged tool is a process: a runner of 2 CPUs
	// taking 1024 at once is one whose memory and CPU any client holding
	// the token can exhaust. Beyond its share the runner answers 503, so
	// that the load balancer tries another.
	n := 32 * runtime.NumCPU()
	held, release := make(chan struct{}, n+1), make(chan struct{})
	base := serveInProcess(t, testToken, boundsToolset(held, release))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	for i := range n {
		wg.Go(func() { _, _, _ = rawPost(t, base+"/mcp", "Bearer "+testToken, holdCall(i)) })
	}
	waitHeld(t, held, n)
	resp, text, err := rawPost(t, base+"/mcp", "Bearer "+testToken, holdCall(n))
	require.NoError(t, err, "no answer: %d calls are running", n+len(held))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", text)
}

// paddedHold is a call of the hold tool of about n bytes.
func paddedHold(id, n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold","arguments":{},"_meta":{`+sessionlessMeta+`,"pad":"%s"}}}`, id, strings.Repeat("x", n))
}

func TestBigBodiesInFlightAreBounded(t *testing.T) {
	// A 4 MiB body of [] values takes some 120 MB decoded: a client
	// holding the token could exhaust the runner's memory with a few
	// dozen calls, well within the bound on calls. The bound is lowered
	// here to three bodies of 64 KiB: the same test, with a sixteenth of
	// the bytes for the race detector to watch being read and decoded.
	defer func(n int64) { maxBodiesInFlight = n }(maxBodiesInFlight)
	const body = 64 << 10
	maxBodiesInFlight = 3 * body
	held, release := make(chan struct{}, 10), make(chan struct{})
	base := serveInProcess(t, testToken, boundsToolset(held, release))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	for i := range 2 {
		wg.Go(func() { _, _, _ = rawPost(t, base+"/mcp", "Bearer "+testToken, paddedHold(i, body)) })
	}
	waitHeld(t, held, 2)
	resp, text, err := rawPost(t, base+"/mcp", "Bearer "+testToken, paddedHold(3, body))
	require.NoError(t, err, "no answer: %d big calls are running", 2+len(held))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", text)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	// Small calls go on.
	resp, text, err = rawPost(t, base+"/mcp", "Bearer "+testToken, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"wait","arguments":{"ms":0}}}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", text)
}

func TestBrowserSimpleRequestRunsNoTool(t *testing.T) {
	// A page may post text/plain (or a form) to a runner without a token
	// on localhost without a preflight, though it cannot read the answer:
	// the call must not run. Its preflight for application/json gets no
	// Access-Control-Allow-Origin.
	held, release := make(chan struct{}, 10), make(chan struct{})
	defer close(release)
	base := serveInProcess(t, "", boundsToolset(held, release))
	for _, ct := range []string{"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(holdCall(1)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Origin", "http://attacker.example")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, ct)
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), ct)
	}
	req, err := http.NewRequest(http.MethodOptions, base+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://attacker.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Empty(t, held, "a tool ran")
}

// A session's GET stream, which lasts as long as the session, is counted
// with the notification streams, not the calls: sessions holding one do
// not take the calls' slots.
func TestSessionStreamsTakeNoCallSlot(t *testing.T) {
	// Two calls at once: a client's initialize may not be quite done
	// when its notifications/initialized comes. Three sessions, each with
	// two GET streams, are past it.
	base := serveInProcess(t, testToken, boundsToolset(nil, nil), withMaxCalls(2))
	for i := range 3 {
		c := dialRunner(t, base+"/mcp", testToken, "2025-11-25")
		require.NotEmpty(t, c.cs.ID())
		// The GET stream opens after initialize; a raw GET stands for it
		// for certain.
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Mcp-Session-Id", c.cs.ID())
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		text, isErr := c.call(t, "wait", map[string]any{"ms": 0})
		require.False(t, isErr, "session %d: %s", i, text)
		assert.Equal(t, "waited", text)
	}
}
