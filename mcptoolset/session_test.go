package mcptoolset_test

import (
	"context"
	"fmt"
	"net/http/httptest"
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
// and none fails for a turn another request began meanwhile, while their
// calls still run side by side.
//
// In fake time, every turn dwells a second in its start (an observer's
// StartTurn, which BuildTools calls before it checks the turn): were a
// session's turns not taken one at a time, every request would begin its
// turn before any had built its tools, and all but the latest would fail
// as stale. Each call then waits until all n are running at once, which
// they are only if the turns' order holds for building alone.
func TestServedParallelCallsOfOneSessionAllRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 16
		var running atomic.Int32
		all := make(chan struct{})
		wait := toolset.NewTool("wait", "Wait for the others.", func(context.Context, struct{}) (string, error) {
			if running.Add(1) == n {
				close(all)
			}
			select {
			case <-all:
				return "ok", nil
			case <-time.After(time.Minute):
				return "", fmt.Errorf("only %d of the %d calls ran at once", running.Load(), n)
			}
		})
		log, buf := logBuffer()
		srv := mcptoolset.NewServer(toolset.NewFunction(wait), mcptoolset.WithServerLogger(log),
			mcptoolset.WithRunContext(func(context.Context, *mcptoolset.Request) (*toolset.RunContext, error) {
				return toolset.NewRun("session", toolset.WithObserver(dwellObserver{})), nil
			}))
		cs := connect(t, srv, nil)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
				if err == nil && res.IsError {
					err = errorText(res)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "call %d of %d; the server logged:\n%s", i, n, buf)
		}
	})
}

// dwellObserver makes every turn dwell a second, in the time of the
// test's bubble, before BuildTools checks it.
type dwellObserver struct{}

func (dwellObserver) StartTurn(ctx context.Context, _ toolset.TurnInfo) (context.Context, toolset.TurnObservation) {
	time.Sleep(time.Second)
	return ctx, nil
}

func (dwellObserver) StartCall(ctx context.Context, _ toolset.CallInfo) (context.Context, toolset.CallObservation) {
	return ctx, nil
}

// A request waiting while another request of its session builds its
// tools gives up once it is cancelled: a slow build (a toolset listing a
// slow server, say) does not hold the requests whose clients have gone.
func TestServedRequestCancelledWhileAnotherBuildsReturns(t *testing.T) {
	checkLeaks(t)
	building, release := make(chan struct{}), make(chan struct{})
	echo := toolset.NewTool("echo", "Echo.", func(context.Context, struct{}) (string, error) { return "ok", nil })
	srv := mcptoolset.NewServer(toolset.NewFunction(echo),
		mcptoolset.WithRunContext(func(context.Context, *mcptoolset.Request) (*toolset.RunContext, error) {
			return toolset.NewRun("session", toolset.WithObserver(&holdFirstTurn{building: building, release: release})), nil
		}))
	arrived, returned := make(chan struct{}, 2), make(chan error, 2)
	srv.MCP().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			arrived <- struct{}{}
			res, err := next(ctx, method, req)
			returned <- err
			return res, err
		}
	})
	cs := connect(t, srv, nil)

	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	wg.Go(func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"})
		if assert.NoError(t, err) {
			assert.False(t, res.IsError, "the first request, let go, makes its call")
		}
	})
	<-arrived
	<-building
	ctx, cancel := context.WithCancel(context.Background())
	wg.Go(func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo"})
		assert.ErrorIs(t, err, context.Canceled)
	})
	<-arrived
	cancel()
	select {
	case err := <-returned:
		require.ErrorContains(t, err, "waiting while another request of the run builds its tools")
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled request still waits for the other request's turn")
	}
}

// holdFirstTurn holds the first turn in its start, once it has closed
// building, until release is closed.
type holdFirstTurn struct {
	once              sync.Once
	building, release chan struct{}
}

func (h *holdFirstTurn) StartTurn(ctx context.Context, _ toolset.TurnInfo) (context.Context, toolset.TurnObservation) {
	h.once.Do(func() {
		close(h.building)
		<-h.release
	})
	return ctx, nil
}

func (*holdFirstTurn) StartCall(ctx context.Context, _ toolset.CallInfo) (context.Context, toolset.CallObservation) {
	return ctx, nil
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
