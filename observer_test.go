package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// recorder is an Observer that writes down what it sees.
type recorder struct {
	mu    sync.Mutex
	turns []*recTurn
	calls []*recCall
}

type recTurn struct {
	info toolset.TurnInfo
	end  *toolset.TurnEnd
}

type recCall struct {
	info     toolset.CallInfo
	events   []toolset.CallEvent
	progress []toolset.Progress
	end      *toolset.CallEnd
	handler  bool // the handler saw the observer's context
}

type obsCtxKey struct{}

func (r *recorder) StartTurn(ctx context.Context, info toolset.TurnInfo) (context.Context, toolset.TurnObservation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := &recTurn{info: info}
	r.turns = append(r.turns, t)
	return ctx, t
}

func (t *recTurn) EndTurn(e toolset.TurnEnd) { t.end = &e }

func (r *recorder) StartCall(ctx context.Context, info toolset.CallInfo) (context.Context, toolset.CallObservation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &recCall{info: info}
	r.calls = append(r.calls, c)
	return context.WithValue(ctx, obsCtxKey{}, c), c
}

func (c *recCall) Event(e toolset.CallEvent)   { c.events = append(c.events, e) }
func (c *recCall) Progress(p toolset.Progress) { c.progress = append(c.progress, p) }
func (c *recCall) EndCall(e toolset.CallEnd)   { c.end = &e }

func (c *recCall) kinds() []toolset.CallEventKind {
	var out []toolset.CallEventKind
	for _, e := range c.events {
		out = append(out, e.Kind)
	}
	return out
}

func (r *recorder) lastCall(t *testing.T) *recCall {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.calls)
	return r.calls[len(r.calls)-1]
}

func TestObserverSeesEachTurnAndItsFingerprint(t *testing.T) {
	rec := &recorder{}
	run := testRun(t, "observed-turns", toolset.WithObserver(rec), toolset.WithValue(Role, "user"))
	tools := toolset.NewFunction(echoTools("a", "b")...)
	admin := toolset.NewFunction(toolset.NewTool("drop", "Drop it.", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithMetadata(map[string]string{"audience": "admin"}))).Filtered(adminsOnly)

	for range 2 {
		_, err := toolset.BuildTools(run.Turn(context.Background()), "agent", tools, admin)
		require.NoError(t, err)
	}
	require.Len(t, rec.turns, 2)
	first, second := rec.turns[0], rec.turns[1]
	assert.Equal(t, toolset.TurnInfo{Agent: "agent", RunID: run.ID(), Step: 0}, first.info)
	assert.Equal(t, 1, second.info.Step)
	require.NotNil(t, first.end)
	assert.Equal(t, 2, first.end.Tools)
	assert.Len(t, first.end.Fingerprint, 32)
	a, _ := echoTool("a").ParametersJSON()
	assert.Equal(t, 2*(1+len("The a tool.")+len(a)), first.end.DefinitionBytes)
	assert.Empty(t, first.end.PreviousFingerprint, "the run's first turn")
	assert.Equal(t, first.end.Fingerprint, second.end.Fingerprint, "the same tools, the same fingerprint")
	assert.Equal(t, first.end.Fingerprint, second.end.PreviousFingerprint)

	// A run whose caller sees one more tool has another fingerprint.
	rec2 := &recorder{}
	admins := testRun(t, "observed-admin", toolset.WithObserver(rec2), toolset.WithValue(Role, "admin"))
	_, err := toolset.BuildTools(admins.Turn(context.Background()), "agent", tools, admin)
	require.NoError(t, err)
	assert.Equal(t, 3, rec2.turns[0].end.Tools)
	assert.NotEqual(t, first.end.Fingerprint, rec2.turns[0].end.Fingerprint)

	// A failed turn reports its error and kind.
	_, err = toolset.BuildTools(run.Turn(context.Background()), "agent", tools, tools)
	require.Error(t, err)
	last := rec.turns[len(rec.turns)-1].end
	assert.Equal(t, "name_conflict", last.ErrorKind)
	assert.Equal(t, err, last.Err)
}

func TestObserverSeesACallsCompositionAndOutcome(t *testing.T) {
	rec := &recorder{}
	run := testRun(t, "observed-call", toolset.WithObserver(rec))
	read := toolset.NewTool("read_file", "Read a file.", func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "reading", Fraction: 0.5})
		c, _ := ctx.Value(obsCtxKey{}).(*recCall)
		c.handler = true
		assert.Equal(t, run.ID(), toolset.FromContext(ctx).ID(), "the handler still reads its run")
		return "contents of " + in.Path, nil
	})
	fs := toolset.NewFunction(read).Prefixed("fs").Renamed(map[string]string{"fs_read_file": "cat"})
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "agent", toolset.NewCombined(toolset.NewFunction(echoTool("x")), fs))
	require.NoError(t, err)

	var outer []toolset.Progress
	callCtx := toolset.WithProgress(turn, func(p toolset.Progress) { outer = append(outer, p) })
	res, err := tools.Execute(callCtx, toolset.ToolCall{ID: "c1", Name: "cat", Args: json.RawMessage(`{"path":"/etc/motd"}`)})
	require.NoError(t, err)
	c := rec.lastCall(t)
	assert.True(t, c.info.Found)
	assert.Equal(t, "cat", c.info.Tool.Name)
	assert.Equal(t, "read_file", c.info.OriginalName)
	assert.Equal(t, "agent", c.info.Agent)
	assert.Equal(t, "Combined#0/Renamed#1", c.info.Path)
	assert.Equal(t, "c1", c.info.Call.ID)
	assert.Same(t, rec.turns[0], c.info.Turn, "a call under the turn's context is of the turn")
	assert.True(t, c.handler, "the handler runs under the observer's context")
	assert.Equal(t, []toolset.Progress{{Message: "reading", Fraction: 0.5}}, c.progress)
	assert.Equal(t, c.progress, outer, "the caller's callback still gets the reports")
	require.NotNil(t, c.end)
	assert.Equal(t, res, c.end.Result)
	assert.Equal(t, -1, c.end.FailuresLeft)
	assert.Empty(t, c.end.ErrorKind)

	// Under another context of the run, the call is not the turn's.
	_, err = tools.Execute(toolset.NewContext(context.Background(), run), toolset.ToolCall{Name: "x", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Nil(t, rec.lastCall(t).info.Turn)

	// An unknown name is observed too.
	_, err = tools.Execute(turn, toolset.ToolCall{Name: "read_file", Args: json.RawMessage(`{}`)})
	require.Error(t, err)
	c = rec.lastCall(t)
	assert.False(t, c.info.Found)
	assert.Equal(t, "unknown_tool", c.end.ErrorKind)
	assert.Equal(t, err, c.end.Err)
	assert.Nil(t, c.end.Result)

	// So are bad arguments.
	_, err = tools.Execute(turn, toolset.ToolCall{Name: "cat", Args: json.RawMessage(`{"path":1}`)})
	require.Error(t, err)
	assert.Equal(t, "invalid_arguments", rec.lastCall(t).end.ErrorKind)
}

func TestObserverSeesPolicyDecisions(t *testing.T) {
	t.Run("cache", func(t *testing.T) {
		rec := &recorder{}
		run := testRun(t, "observed-cache", toolset.WithObserver(rec))
		tools := clones(t, run.Turn(context.Background()), toolset.NewTool("c", "", func(context.Context, struct{}) (int, error) { return 1, nil },
			toolset.WithCache(toolset.CachePolicy{})))
		for range 2 {
			_, err := tools.Execute(toolset.NewContext(context.Background(), run), toolset.ToolCall{Name: "c", Args: json.RawMessage(`{}`)})
			require.NoError(t, err)
		}
		assert.Equal(t, []toolset.CallEventKind{toolset.EventCacheMiss}, rec.calls[0].kinds())
		assert.Equal(t, []toolset.CallEventKind{toolset.EventCacheHit}, rec.calls[1].kinds())
	})
	t.Run("rate limit", func(t *testing.T) {
		rec := &recorder{}
		run := testRun(t, "observed-rate", toolset.WithObserver(rec))
		tools := clones(t, run.Turn(context.Background()), toolset.NewTool("r", "", func(context.Context, struct{}) (int, error) { return 1, nil },
			toolset.WithRateLimit(toolset.RateLimit{Requests: 1, Interval: time.Hour, Reject: true})))
		ctx := toolset.NewContext(bounded(t), run)
		_, err := tools.Execute(ctx, toolset.ToolCall{Name: "r", Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "r", Args: json.RawMessage(`{}`)})
		require.Error(t, err)
		assert.Empty(t, rec.calls[0].events)
		c := rec.calls[1]
		require.Equal(t, []toolset.CallEventKind{toolset.EventRateLimitReject}, c.kinds())
		assert.Greater(t, c.events[0].Wait, 59*time.Minute)
		assert.Equal(t, "rate_limited", c.end.ErrorKind)
	})
	t.Run("approval", func(t *testing.T) {
		rec := &recorder{}
		run := testRun(t, "observed-approval", toolset.WithObserver(rec))
		tools := clones(t, run.Turn(context.Background()), toolset.NewTool("pay", "", func(context.Context, struct{}) (int, error) { return 1, nil },
			toolset.WithApprovalRequired(toolset.Always)))
		ctx := toolset.NewContext(context.Background(), run)
		call := toolset.ToolCall{ID: "p1", Name: "pay", Args: json.RawMessage(`{}`)}
		_, err := tools.Execute(ctx, call)
		var are *toolset.ApprovalRequiredError
		require.ErrorAs(t, err, &are)
		run.RecordApproval(call)
		_, err = tools.Execute(ctx, call)
		require.NoError(t, err)
		run.RecordDenial(call, "no")
		_, err = tools.Execute(ctx, call)
		require.Error(t, err)
		assert.Equal(t, []toolset.CallEventKind{toolset.EventApprovalAsked}, rec.calls[0].kinds())
		assert.Equal(t, "approval_required", rec.calls[0].end.ErrorKind)
		assert.Equal(t, []toolset.CallEventKind{toolset.EventApprovalGranted}, rec.calls[1].kinds())
		assert.Equal(t, []toolset.CallEventKind{toolset.EventApprovalDenied}, rec.calls[2].kinds())
		assert.Equal(t, "approval_denied", rec.calls[2].end.ErrorKind)
	})
	t.Run("failure budget", func(t *testing.T) {
		rec := &recorder{}
		run := testRun(t, "observed-budget", toolset.WithObserver(rec))
		tool := toolset.NewTool("flaky", "", func(context.Context, struct{}) (int, error) { return 0, errors.New("down") },
			toolset.WithMaxFailures(2))
		for range 3 {
			tools, err := toolset.BuildTools(run.Turn(context.Background()), "a", toolset.NewFunction(tool))
			require.NoError(t, err)
			_, _ = tool.Execute(toolset.NewContext(context.Background(), run), toolset.ToolCall{Name: "flaky", Args: json.RawMessage(`{}`)})
			_ = tools
		}
		require.Len(t, rec.calls, 3)
		assert.Equal(t, []toolset.CallEvent{{Kind: toolset.EventFailureCounted, FailuresLeft: 1}}, rec.calls[0].events)
		assert.Equal(t, "tool_error", rec.calls[0].end.ErrorKind)
		assert.Equal(t, 1, rec.calls[0].end.FailuresLeft)
		assert.Equal(t, []toolset.CallEvent{{Kind: toolset.EventFailureCounted, FailuresLeft: 0}}, rec.calls[1].events)
		assert.Equal(t, []toolset.CallEventKind{toolset.EventBudgetSpent}, rec.calls[2].kinds())
		assert.Equal(t, "unavailable", rec.calls[2].end.ErrorKind)
		assert.Equal(t, 1, rec.turns[2].end.Spent, "the third turn dropped the spent tool")
		assert.Equal(t, 0, rec.turns[2].end.Tools)
	})
	t.Run("deferred", func(t *testing.T) {
		rec := &recorder{}
		run := testRun(t, "observed-deferred", toolset.WithObserver(rec))
		hidden := toolset.NewFunction(toolset.NewTool("weather_forecast", "Weather forecast for a city.",
			func(context.Context, struct{}) (int, error) { return 1, nil }, toolset.WithDeferred()))
		search := toolset.NewToolSearch(hidden)
		tools, err := toolset.BuildTools(run.Turn(context.Background()), "a", hidden, search)
		require.NoError(t, err)
		assert.Equal(t, 1, rec.turns[0].end.Unrevealed)
		ctx := toolset.NewContext(context.Background(), run)
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "tool_search", Args: json.RawMessage(`{"query":"weather"}`)})
		require.NoError(t, err)
		tools, err = toolset.BuildTools(run.Turn(context.Background()), "a", hidden, search)
		require.NoError(t, err)
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "weather_forecast", Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		c := rec.lastCall(t)
		assert.True(t, c.info.Deferred)
		assert.Equal(t, []toolset.CallEventKind{toolset.EventDeferredRevealed}, c.kinds())
	})
}

// A deferred tool called directly before a search revealed it is refused,
// and the observer is told why.
func TestObserverSeesAnUnrevealedCall(t *testing.T) {
	rec := &recorder{}
	run := testRun(t, "observed-unrevealed", toolset.WithObserver(rec))
	tool := toolset.NewTool("later", "", func(context.Context, struct{}) (int, error) { return 1, nil }, toolset.WithDeferred())
	_, err := tool.Execute(toolset.NewContext(context.Background(), run), toolset.ToolCall{Args: json.RawMessage(`{}`)})
	require.Error(t, err)
	c := rec.lastCall(t)
	assert.Equal(t, []toolset.CallEventKind{toolset.EventDeferredUnrevealed}, c.kinds())
	assert.Equal(t, "unavailable", c.end.ErrorKind)
	assert.Empty(t, c.info.Path, "a direct call has no composition")
}

// A sub-agent's run is a child of the caller's and reports to its observer.
func TestChildRunInheritsTheObserver(t *testing.T) {
	rec := &recorder{}
	run := testRun(t, "observed-parent", toolset.WithObserver(rec))
	child := run.NewChild("")
	t.Cleanup(child.End)
	_, err := toolset.BuildTools(child.Turn(context.Background()), "sub", toolset.NewFunction(echoTool("a")))
	require.NoError(t, err)
	require.Len(t, rec.turns, 1)
	assert.Equal(t, run.ID(), rec.turns[0].info.ParentRunID)
}

// Work of no run is observed through the context.
func TestContextObserverSeesWorkOfNoRun(t *testing.T) {
	rec := &recorder{}
	ctx := toolset.ContextWithObserver(context.Background(), rec)
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTool("a")))
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "a", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Len(t, rec.turns, 1)
	assert.Equal(t, -1, rec.turns[0].info.Step)
	require.Len(t, rec.calls, 1)
	assert.Same(t, rec.turns[0], rec.calls[0].info.Turn)
	// Without one, nothing is seen.
	_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "a", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Len(t, rec.calls, 1)
}

// panickyObserver panics in every method.
type panickyObserver struct{}

func (panickyObserver) StartTurn(context.Context, toolset.TurnInfo) (context.Context, toolset.TurnObservation) {
	panic("turn")
}

func (panickyObserver) StartCall(ctx context.Context, _ toolset.CallInfo) (context.Context, toolset.CallObservation) {
	return ctx, panickyObserver{}
}
func (panickyObserver) Event(toolset.CallEvent)   { panic("event") }
func (panickyObserver) Progress(toolset.Progress) { panic("progress") }
func (panickyObserver) EndCall(toolset.CallEnd)   { panic("end") }

// An observer that panics never changes a turn's or a call's outcome.
func TestPanickingObserverChangesNoOutcome(t *testing.T) {
	run := testRun(t, "observed-panickyObserver", toolset.WithObserver(panickyObserver{}))
	tool := toolset.NewTool("p", "", func(ctx context.Context, _ struct{}) (int, error) {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "x"})
		return 7, nil
	}, toolset.WithCache(toolset.CachePolicy{}))
	tools, err := toolset.BuildTools(run.Turn(context.Background()), "a", toolset.NewFunction(tool))
	require.NoError(t, err)
	var outer int
	ctx := toolset.WithProgress(toolset.NewContext(context.Background(), run), func(toolset.Progress) { outer++ })
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "p", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, 7, res)
	assert.Equal(t, 1, outer, "the caller's progress callback still runs")
}

// gatedObserver is a recorder that is enabled only under a context that
// carries gateKey, and panics in Enabled under one that carries
// panicGateKey.
type gatedObserver struct {
	recorder
	asked int
}

type gateKey struct{}

type panicGateKey struct{}

func (g *gatedObserver) Enabled(ctx context.Context) bool {
	g.mu.Lock()
	g.asked++
	g.mu.Unlock()
	if ctx.Value(panicGateKey{}) != nil {
		panic("enabled")
	}
	return ctx.Value(gateKey{}) != nil
}

// An EnabledObserver that reports false is not started for that work;
// one that reports true is; one whose Enabled panics observes nothing and
// changes no outcome.
func TestEnabledObserverGatesItsStarts(t *testing.T) {
	for _, viaContext := range []bool{false, true} {
		obs := &gatedObserver{}
		run := testRun(t, fmt.Sprint("gated-", viaContext), toolset.WithObserver(obs))
		base := func() context.Context {
			if viaContext {
				return toolset.ContextWithObserver(context.Background(), obs)
			}
			return run.Turn(context.Background())
		}
		call := toolset.ToolCall{Name: "a", Args: json.RawMessage(`{}`)}
		phases := []struct {
			name         string
			gate, broken bool
			turns, calls int
		}{
			{"disabled", false, false, 0, 0},
			{"enabled", true, false, 1, 1},
			{"Enabled panics", true, true, 1, 1},
		}
		for _, p := range phases {
			ctx := base()
			if p.gate {
				ctx = context.WithValue(ctx, gateKey{}, true)
			}
			if p.broken {
				ctx = context.WithValue(ctx, panicGateKey{}, true)
			}
			tools, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTool("a")))
			require.NoError(t, err, p.name)
			res, err := tools.Execute(ctx, call)
			require.NoError(t, err, p.name)
			assert.Equal(t, "a", res, p.name)
			assert.Len(t, obs.turns, p.turns, p.name)
			require.Len(t, obs.calls, p.calls, p.name)
			if p.calls > 0 {
				assert.NotNil(t, obs.calls[0].end, p.name)
			}
		}
		assert.Equal(t, 6, obs.asked, "Enabled is asked once per turn and per call")
	}
}

// offObserver is an EnabledObserver that is never enabled, and fails the
// test if it is started.
type offObserver struct{ t *testing.T }

func (o offObserver) Enabled(context.Context) bool { return false }

func (o offObserver) StartTurn(ctx context.Context, _ toolset.TurnInfo) (context.Context, toolset.TurnObservation) {
	o.t.Error("StartTurn of a disabled observer")
	return ctx, nil
}

func (o offObserver) StartCall(ctx context.Context, _ toolset.CallInfo) (context.Context, toolset.CallObservation) {
	o.t.Error("StartCall of a disabled observer")
	return ctx, nil
}

// A disabled EnabledObserver costs a call and a turn no allocation more
// than no observer at all.
func TestDisabledObserverAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	allocs := func(opts ...toolset.RunOption) (call, turn float64) {
		run := testRun(t, "disabled-allocs", opts...)
		ts := toolset.NewFunction(echoTool("a")).Prefixed("p")
		tc := run.Turn(context.Background())
		tools, err := toolset.BuildTools(tc, "a", ts)
		require.NoError(t, err)
		c := toolset.ToolCall{ID: "c", Name: "p_a", Args: json.RawMessage(`{}`)}
		call = testing.AllocsPerRun(100, func() {
			if _, err := tools.Execute(tc, c); err != nil {
				t.Fatal(err)
			}
		})
		turn = testing.AllocsPerRun(100, func() {
			if _, err := toolset.BuildTools(run.Turn(context.Background()), "a", ts); err != nil {
				t.Fatal(err)
			}
		})
		return call, turn
	}
	noneCall, noneTurn := allocs()
	call, turn := allocs(toolset.WithObserver(offObserver{t}))
	assert.Equal(t, noneCall, call, "allocations of a call: no observer, then a disabled one")
	assert.Equal(t, noneTurn, turn, "allocations of a turn: no observer, then a disabled one")
}
