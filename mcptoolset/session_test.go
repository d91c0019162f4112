package mcptoolset_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// searchable returns a toolset of a tool search over two deferred tools.
func searchable() toolset.Toolset {
	deferred := toolset.NewFunction(
		toolset.NewTool("create_invoice", "Create an invoice for a customer.", func(context.Context, struct{}) (string, error) {
			return "invoice created", nil
		}, toolset.WithDeferred()),
		toolset.NewTool("refund_payment", "Refund a payment.", func(context.Context, struct{}) (string, error) {
			return "refunded", nil
		}, toolset.WithDeferred()),
	)
	return toolset.NewCombined(deferred, toolset.NewToolSearch(deferred))
}

func listedNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	require.NotEmpty(t, res.Content)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// A deferred tool that the tool search reveals in one request is listed
// and callable in the next request of the same session, and in no other
// session.
func TestServedSessionKeepsToolSearchReveals(t *testing.T) {
	checkLeaks(t)
	srv := mcptoolset.NewServer(searchable())
	alice, bob := connect(t, srv, nil), connect(t, srv, nil)

	assert.Equal(t, []string{"tool_search"}, listedNames(t, alice))
	text, isErr := callText(t, alice, "tool_search", map[string]any{"query": "invoice", "top_k": 1})
	require.False(t, isErr, text)
	assert.Contains(t, text, "create_invoice")

	assert.Equal(t, []string{"create_invoice", "tool_search"}, listedNames(t, alice), "revealed from the session's next request")
	text, isErr = callText(t, alice, "create_invoice", nil)
	assert.False(t, isErr, text)
	assert.Equal(t, "invoice created", text)

	assert.Equal(t, []string{"tool_search"}, listedNames(t, bob), "another session does not see the reveal")
	text, isErr = callText(t, bob, "create_invoice", nil)
	assert.True(t, isErr, "another session cannot call it")
	assert.Contains(t, text, `unknown tool "create_invoice"`)
}

// The same over streamable HTTP, where every request is an HTTP request
// of its own and the session is named by its header: one run per session.
func TestServedHTTPSessionKeepsToolSearchReveals(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	srv := mcptoolset.NewServer(searchable())
	httpServer := httptest.NewServer(srv.HTTPHandler(nil))
	t.Cleanup(httpServer.Close) // after the sessions' cleanups
	session := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: httpServer.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, bob := session(), session()
	_, isErr := callText(t, alice, "tool_search", map[string]any{"query": "refund"})
	require.False(t, isErr)
	assert.Contains(t, listedNames(t, alice), "refund_payment")
	text, isErr := callText(t, alice, "refund_payment", nil)
	assert.False(t, isErr, text)
	assert.NotContains(t, listedNames(t, bob), "refund_payment")
}

// A run-scoped cache hits across the requests of one session, and not
// across sessions.
func TestServedSessionRunCacheHits(t *testing.T) {
	checkLeaks(t)
	var runs atomic.Int32
	lookup := toolset.NewTool("lookup", "Look a key up.", func(_ context.Context, in struct {
		Key string `json:"key"`
	}) (string, error) {
		runs.Add(1)
		return "value of " + in.Key, nil
	}, toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun}))
	srv := mcptoolset.NewServer(toolset.NewFunction(lookup))
	alice, bob := connect(t, srv, nil), connect(t, srv, nil)
	for range 3 {
		text, isErr := callText(t, alice, "lookup", map[string]any{"key": "k"})
		require.False(t, isErr)
		assert.Equal(t, "value of k", text)
	}
	assert.Equal(t, int32(1), runs.Load(), "the session's later requests hit its run's cache")
	assert.Equal(t, toolset.CacheStats{Hits: 2, Misses: 1}, lookup.CacheStats())
	callText(t, bob, "lookup", map[string]any{"key": "k"})
	assert.Equal(t, int32(2), runs.Load(), "another session has its own run")
}

// The run context function begins the session's run, once; each request
// is the run's next turn, and predicates read the request itself.
func TestServedSessionStepsAndRunContextFunc(t *testing.T) {
	checkLeaks(t)
	type seen struct {
		step   int
		run    string
		role   string
		method string
	}
	var (
		mu     sync.Mutex
		steps  []seen
		starts atomic.Int32
	)
	probe := toolset.NewTool("probe", "Report the run context.", func(ctx context.Context, _ struct{}) (string, error) {
		rc := toolset.FromContext(ctx)
		mu.Lock()
		steps = append(steps, seen{rc.Step(), rc.ID(), role.Get(ctx), mcptoolset.RequestFromContext(ctx).Method})
		mu.Unlock()
		return "ok", nil
	})
	srv := mcptoolset.NewServer(toolset.NewCombined(searchable(), toolset.NewFunction(probe)),
		mcptoolset.WithRunContext(func(_ context.Context, req *mcptoolset.Request) (*toolset.RunContext, error) {
			n := starts.Add(1)
			return toolset.NewRun(fmt.Sprintf("session-%d", n), toolset.WithValue(role, "viewer")), nil
		}))
	cs := connect(t, srv, nil)
	callText(t, cs, "probe", nil)
	callText(t, cs, "tool_search", map[string]any{"query": "invoice"})
	callText(t, cs, "probe", nil)
	assert.Contains(t, listedNames(t, cs), "create_invoice", "the session's run keeps its reveals")
	other := connect(t, srv, nil)
	assert.NotContains(t, listedNames(t, other), "create_invoice", "another session has its own run")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, steps, 2)
	assert.Equal(t, seen{step: steps[0].step, run: "session-1", role: "viewer", method: "tools/call"}, steps[0])
	assert.Equal(t, seen{step: steps[0].step + 2, run: "session-1", role: "viewer", method: "tools/call"}, steps[1], "each request is the run's next turn")
	assert.Equal(t, int32(2), starts.Load(), "called once per session")
}

// A run the function returns that cannot be used fails the request.
func TestServedRunConflictIsAnInternalError(t *testing.T) {
	checkLeaks(t)
	live := toolset.NewRun("taken")
	defer live.End()
	log, buf := logBuffer()
	srv := mcptoolset.NewServer(searchable(), mcptoolset.WithServerLogger(log),
		mcptoolset.WithRunContext(func(context.Context, *mcptoolset.Request) (*toolset.RunContext, error) {
			return toolset.NewRun("taken"), nil
		}))
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	require.NoError(t, err)
	defer func() { _ = ss.Close(); _ = ss.Wait() }()
	_, err = mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	requireInternal(t, err, buf, `run \"taken\" is already live`)
}

// A tool that needs a human's approval tells the MCP client it cannot be
// approved here, instead of failing the request.
func TestServedApprovalRequiredIsAnErrorResult(t *testing.T) {
	checkLeaks(t)
	wipe := toolset.NewTool("wipe", "Wipe.", func(context.Context, struct{}) (string, error) { return "wiped", nil },
		toolset.WithApprovalRequired(toolset.Always))
	cs := connect(t, mcptoolset.NewServer(wipe), nil)
	text, isErr := callText(t, cs, "wipe", nil)
	assert.True(t, isErr)
	assert.Equal(t, `the call of tool "wipe" needs a human's approval, which cannot be asked for here; do without it`, text)
}

// The runs kept are bounded: beyond the bound the least recently used
// session loses its run, and a session's run goes when it ends.
func TestServedSessionRunsAreBounded(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		log, buf := logBuffer()
		srv := mcptoolset.NewServer(searchable(), mcptoolset.WithMaxSessionRuns(2), mcptoolset.WithServerLogger(log))
		a, b := connect(t, srv, nil), connect(t, srv, nil)
		callText(t, a, "tool_search", map[string]any{"query": "invoice"})
		callText(t, b, "tool_search", map[string]any{"query": "invoice"})
		assert.Contains(t, listedNames(t, a), "create_invoice")
		assert.Equal(t, 2, mcptoolset.SessionRuns(srv))
		c := connect(t, srv, nil)
		listedNames(t, c)
		assert.Equal(t, 2, mcptoolset.SessionRuns(srv), "bounded")
		assert.Contains(t, buf.String(), "ending the least recently used one's run")
		assert.NotContains(t, listedNames(t, b), "create_invoice", "b, the least recently used, lost its run")
		assert.Contains(t, listedNames(t, c), "tool_search")

		// Ending sessions forgets their runs.
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(context.Background(), st, nil)
		require.NoError(t, err)
		d, err := mcp.NewClient(&mcp.Implementation{Name: "d", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
		require.NoError(t, err)
		listedNames(t, d)
		require.NoError(t, d.Close())
		_ = ss.Wait()
		require.Eventually(t, func() bool { return !slices.Contains(mcptoolset.Sessions(srv), ss) }, 5*time.Second, 5*time.Millisecond,
			"a session that ended is forgotten")
	})
}

// In stateless HTTP every request is a session of its own, closed with
// the request: a client that does not send back the run handle of a
// result (see revisions_test.go for one that does) makes each request a
// run of its own, and no session is kept.
func TestStatelessHTTPRequestsKeepNoRuns(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	srv := mcptoolset.NewServer(searchable())
	httpServer := httptest.NewServer(srv.HTTPHandler(&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(httpServer.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: httpServer.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	for range 5 {
		_, isErr := callText(t, cs, "tool_search", map[string]any{"query": "refund"})
		require.False(t, isErr)
	}
	assert.NotContains(t, listedNames(t, cs), "refund_payment", "no session, no run across requests")
	// Real time, not synctest: the requests cross a real socket.
	require.Eventually(t, func() bool { return len(mcptoolset.Sessions(srv)) == 0 }, 5*time.Second, 5*time.Millisecond,
		"the requests' sessions are forgotten")
}

// An MCP client may send a session's tool calls at once, as a model's
// parallel calls are: each request is a turn of the session's one run,
// and none fails for a turn another request began meanwhile.
func TestServedParallelCallsOfOneSessionAllRun(t *testing.T) {
	checkLeaks(t)
	echo := toolset.NewTool("echo", "Echo.", func(context.Context, struct{}) (string, error) { return "ok", nil })
	cs := connect(t, mcptoolset.NewServer(toolset.NewFunction(echo)), nil)
	// Collections in the background preempt the requests' goroutines at
	// any point, as a loaded server's do.
	stop := make(chan struct{})
	var gc sync.WaitGroup
	gc.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	})
	defer func() { close(stop); gc.Wait() }()
	const n = 64
	for range 64 {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"})
				if err == nil && res.IsError {
					err = errorText(res)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
	}
}

type resultError string

func (e resultError) Error() string { return string(e) }

func errorText(res *mcp.CallToolResult) error {
	if len(res.Content) == 0 {
		return resultError("empty error result")
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return resultError(tc.Text)
	}
	return resultError("error result")
}

// A run context function that hands every session the same run would let
// one session's reveals, failures and caches reach the others, and end the
// run under all of them when one ends. The second session is refused.
func TestServedRunSharedBySessionsIsRefused(t *testing.T) {
	checkLeaks(t)
	shared := toolset.NewRun("shared")
	defer shared.End()
	log, buf := logBuffer()
	srv := mcptoolset.NewServer(searchable(), mcptoolset.WithServerLogger(log),
		mcptoolset.WithRunContext(func(context.Context, *mcptoolset.Request) (*toolset.RunContext, error) {
			return shared, nil
		}))
	alice := connect(t, srv, nil)
	callText(t, alice, "tool_search", map[string]any{"query": "invoice"})
	assert.Contains(t, listedNames(t, alice), "create_invoice")

	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	require.NoError(t, err)
	defer func() { _ = ss.Close(); _ = ss.Wait() }()
	// Bob's first request, his initialization (the toolset has
	// instructions), begins his session's run.
	_, err = mcp.NewClient(&mcp.Implementation{Name: "bob", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	requireInternal(t, err, buf, `begin a new run (toolset.NewRun) for each session`)
}

// A run that already began a turn is not a new session's run: the
// application's own loop is using it.
func TestServedRunAlreadyTurnedIsRefused(t *testing.T) {
	checkLeaks(t)
	used := toolset.NewRun("used")
	defer used.End()
	_ = used.Turn(context.Background())
	log, buf := logBuffer()
	srv := mcptoolset.NewServer(searchable(), mcptoolset.WithServerLogger(log),
		mcptoolset.WithRunContext(func(context.Context, *mcptoolset.Request) (*toolset.RunContext, error) {
			return used, nil
		}))
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	require.NoError(t, err)
	defer func() { _ = ss.Close(); _ = ss.Wait() }()
	_, err = mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	requireInternal(t, err, buf, `has begun a turn already`)
	assert.NoError(t, used.Err(), "the server leaves a run it refused alone")
}

// Two sessions that begin at once, given one run by the run context
// function before either took a turn of it: the second is refused.
func TestServedRunSharedBySessionsBegunAtOnceIsRefused(t *testing.T) {
	checkLeaks(t)
	shared := toolset.NewRun("shared")
	defer shared.End()
	var (
		arrived sync.WaitGroup
		calls   atomic.Int32
	)
	arrived.Add(2)
	log, buf := logBuffer()
	srv := mcptoolset.NewServer(searchable(), mcptoolset.WithServerLogger(log),
		mcptoolset.WithRunContext(func(context.Context, *mcptoolset.Request) (*toolset.RunContext, error) {
			if calls.Add(1) <= 2 {
				arrived.Done()
				arrived.Wait()
			}
			return shared, nil
		}))
	errs := make([]error, 2)
	clients := make([]*mcp.ClientSession, 2)
	var wg sync.WaitGroup
	for i := range errs {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(context.Background(), st, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ss.Close(); _ = ss.Wait() })
		wg.Go(func() {
			// The session's first request (its initialization, for a
			// toolset with instructions) begins its run.
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
			if err == nil {
				// Kept open until both are done: a session that ends
				// ends its run, and the other would then be told that.
				clients[i] = cs
				_, err = cs.ListTools(context.Background(), nil)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, cs := range clients {
		if cs != nil {
			cs.Close()
		}
	}
	if errs[0] == nil {
		errs[0], errs[1] = errs[1], errs[0]
	}
	requireInternal(t, errs[0], buf, "begin a new run (toolset.NewRun) for each session")
	assert.NoError(t, errs[1], "the first session keeps the run")
}
