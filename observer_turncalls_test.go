package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// callGate is a recorder whose turns are CallDecliners: they decline the
// calls under a context that does not carry gateKey, which then go on
// under a context that carries declinedKey, and panic under one that
// carries panicGateKey. It is an EnabledObserver too, which counts the
// calls it is asked about.
type callGate struct {
	recorder
	mu        sync.Mutex
	turnAsked int // DeclineCall
	obsAsked  int // Enabled
}

type gatedTurn struct {
	*recTurn
	g *callGate
}

func (g *callGate) StartTurn(ctx context.Context, info toolset.TurnInfo) (context.Context, toolset.TurnObservation) {
	ctx, t := g.recorder.StartTurn(ctx, info)
	return ctx, gatedTurn{t.(*recTurn), g}
}

func (g *callGate) Enabled(context.Context) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.obsAsked++
	return true
}

func (t gatedTurn) DeclineCall(ctx context.Context) (context.Context, bool) {
	t.g.mu.Lock()
	t.g.turnAsked++
	t.g.mu.Unlock()
	if ctx.Value(panicGateKey{}) != nil {
		panic("decline call")
	}
	if ctx.Value(gateKey{}) != nil {
		return nil, false
	}
	return context.WithValue(ctx, declinedKey{}, "declined"), true
}

// asked returns how often DeclineCall and Enabled were called.
func (g *callGate) asked() (turn, obs int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.turnAsked, g.obsAsked
}

// A turn's observation that declines a call of its list spares the call
// the observer: neither Enabled nor StartCall is called, and the call
// runs unobserved, under the context DeclineCall returned. One that does
// not decline it has it observed, with the turn's observation in its
// CallInfo. A call that is not of the turn (of another context of the
// run, or a direct call) is not asked about, and a panic in DeclineCall
// leaves the call unobserved, under its own context, and logged, with
// its outcome unchanged.
func TestCallDeclinerDeclinesItsCalls(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	g := &callGate{}
	run := testRun(t, "turn-declined-calls", toolset.WithObserver(g))
	turn := run.Turn(context.Background())
	s := &sawContext{}
	tools, err := toolset.BuildTools(turn, "a", s)
	require.NoError(t, err)
	require.Len(t, g.turns, 1)
	call := toolset.ToolCall{Name: "a", Args: json.RawMessage(`{}`)}
	execute := func(ctx context.Context) context.Context {
		t.Helper()
		res, err := tools.Execute(ctx, call)
		require.NoError(t, err)
		assert.Equal(t, "a", res)
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.run[len(s.run)-1]
	}

	ran := execute(turn)
	turnAsked, obsAsked := g.asked()
	assert.Equal(t, 1, turnAsked, "DeclineCall is asked about a call of the turn")
	assert.Equal(t, 1, obsAsked, "the observer's Enabled, for the turn only")
	assert.Empty(t, g.calls, "a call the turn declined is not started")
	assert.Equal(t, "declined", ran.Value(declinedKey{}), "the declined call runs under the context DeclineCall returned")
	assert.Equal(t, run.ID(), toolset.FromContext(ran).ID())

	execute(context.WithValue(turn, gateKey{}, true))
	turnAsked, obsAsked = g.asked()
	assert.Equal(t, 2, turnAsked)
	assert.Equal(t, 2, obsAsked, "an enabled call goes on to the observer's Enabled")
	require.Len(t, g.calls, 1)
	assert.Equal(t, gatedTurn{g.turns[0], g}, g.calls[0].info.Turn)
	assert.NotNil(t, g.calls[0].end)

	// Of the run, but not under a context of the turn: not asked.
	execute(toolset.NewContext(context.Background(), run))
	require.Len(t, g.calls, 2)
	assert.Nil(t, g.calls[1].info.Turn)
	// A direct call: no turn, not asked.
	_, err = echoTool("a").Execute(turn, call)
	require.NoError(t, err)
	require.Len(t, g.calls, 3)
	turnAsked, _ = g.asked()
	assert.Equal(t, 2, turnAsked, "only the calls of the turn are asked about")

	ran = execute(context.WithValue(turn, panicGateKey{}, true))
	turnAsked, _ = g.asked()
	assert.Equal(t, 3, turnAsked)
	assert.Len(t, g.calls, 3, "a call whose DeclineCall panicked is not observed")
	assert.Nil(t, ran.Value(declinedKey{}), "and runs under its own context")
	mu.Lock()
	logged := buf.String()
	mu.Unlock()
	assert.Contains(t, logged, "method=DeclineCall")
	assert.Contains(t, logged, "decline call")

	// After the turn ended, for as long as its list is used.
	require.NotNil(t, g.turns[0].end)
	execute(turn)
	turnAsked, _ = g.asked()
	assert.Equal(t, 4, turnAsked)
	assert.Len(t, g.calls, 3)
}

// A turn's observation speaks for its own observer only: under a
// context observer, a call whose observer is another one is observed by
// it as usual.
func TestCallDeclinerSpeaksForItsObserver(t *testing.T) {
	g, other := &callGate{}, &recorder{}
	ctx := toolset.ContextWithObserver(context.Background(), g)
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTool("a")))
	require.NoError(t, err)
	call := toolset.ToolCall{Name: "a", Args: json.RawMessage(`{}`)}
	_, err = tools.Execute(ctx, call)
	require.NoError(t, err)
	turnAsked, _ := g.asked()
	assert.Equal(t, 1, turnAsked, "a call of no run, under the turn's observer")
	assert.Empty(t, g.calls)

	_, err = tools.Execute(toolset.ContextWithObserver(ctx, other), call)
	require.NoError(t, err)
	turnAsked, _ = g.asked()
	assert.Equal(t, 1, turnAsked, "not asked about a call another observer observes")
	require.Len(t, other.calls, 1)
}

// valueObserver is an Observer of a type that is not comparable, whose
// turns are CallDecliners that decline every call.
type valueObserver struct {
	calls *int
	_     []int // not comparable
}

type offTurn struct{}

func (offTurn) EndTurn(toolset.TurnEnd) {}
func (offTurn) DeclineCall(ctx context.Context) (context.Context, bool) {
	return ctx, true
}

func (v valueObserver) StartTurn(ctx context.Context, _ toolset.TurnInfo) (context.Context, toolset.TurnObservation) {
	return ctx, offTurn{}
}

func (v valueObserver) StartCall(ctx context.Context, _ toolset.CallInfo) (context.Context, toolset.CallObservation) {
	*v.calls++
	return ctx, nil
}

// An observer of a type that is not comparable observes turns and calls
// without a panic: as the run's, its turns speak for it; as a context's,
// which cannot be told from another of its type, they do not, and its
// calls are started.
func TestObserverOfAnIncomparableType(t *testing.T) {
	n := 0
	obs := valueObserver{calls: &n}
	run := testRun(t, "incomparable", toolset.WithObserver(obs))
	call := toolset.ToolCall{Name: "a", Args: json.RawMessage(`{}`)}
	for range 2 { // the second turn measures against the first
		turn := run.Turn(context.Background())
		tools, err := toolset.BuildTools(turn, "a", toolset.NewFunction(echoTool("a")))
		require.NoError(t, err)
		_, err = tools.Execute(turn, call)
		require.NoError(t, err)
	}
	assert.Equal(t, 0, n, "the run's turns decline every call")

	ctx := toolset.ContextWithObserver(context.Background(), obs)
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTool("a")))
	require.NoError(t, err)
	_, err = tools.Execute(ctx, call)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "a context's observer of an incomparable type is started")
}

// A call its turn's observation declines costs no allocation more than
// one of no observer at all.
func TestDeclinedCallAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	allocs := func(opts ...toolset.RunOption) float64 {
		run := testRun(t, "turn-disabled-allocs", opts...)
		tc := run.Turn(context.Background())
		tools, err := toolset.BuildTools(tc, "a", toolset.NewFunction(echoTool("a")).Prefixed("p"))
		require.NoError(t, err)
		c := toolset.ToolCall{ID: "c", Name: "p_a", Args: json.RawMessage(`{}`)}
		return testing.AllocsPerRun(100, func() {
			if _, err := tools.Execute(tc, c); err != nil {
				t.Fatal(err)
			}
		})
	}
	n := 0
	assert.Equal(t, allocs(), allocs(toolset.WithObserver(valueObserver{calls: &n})),
		"allocations of a call: no observer, then one whose turn declines it")
	assert.Equal(t, 0, n)
}

// declining is an Observer that declines every turn and call, returning
// a context of its own: derived from the one given, or made afresh.
type declining struct{ fresh bool }

type declinedKey struct{}

func (d declining) ctx(ctx context.Context) context.Context {
	if d.fresh {
		ctx = context.Background()
	}
	return context.WithValue(ctx, declinedKey{}, "declined")
}

func (d declining) StartTurn(ctx context.Context, _ toolset.TurnInfo) (context.Context, toolset.TurnObservation) {
	return d.ctx(ctx), nil
}

func (d declining) StartCall(ctx context.Context, _ toolset.CallInfo) (context.Context, toolset.CallObservation) {
	return d.ctx(ctx), nil
}

// sawContext is a toolset that records the contexts it lists its tools
// under, and whose tool records the contexts it is called under.
type sawContext struct {
	mu        sync.Mutex
	list, run []context.Context
}

func (s *sawContext) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	s.mu.Lock()
	s.list = append(s.list, ctx)
	s.mu.Unlock()
	return []toolset.Tool{toolset.NewTool("a", "The a tool.", func(ctx context.Context, _ struct{}) (string, error) {
		s.mu.Lock()
		s.run = append(s.run, ctx)
		s.mu.Unlock()
		return "a", nil
	})}, nil
}

// A turn or a call whose observer declines it still goes on under the
// context the observer returned, in its run even when that context was
// made afresh; a direct call too.
func TestDeclinedWorkGoesOnUnderTheObserversContext(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		run := testRun(t, "declined", toolset.WithObserver(declining{fresh}))
		s := &sawContext{}
		turn := run.Turn(context.Background())
		tools, err := toolset.BuildTools(turn, "a", s)
		require.NoError(t, err)
		_, err = tools.Execute(turn, toolset.ToolCall{Name: "a", Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		tool, ok := tools.Lookup("a")
		require.True(t, ok)
		_, err = tool.Execute(turn, toolset.ToolCall{Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		require.Len(t, s.list, 1)
		require.Len(t, s.run, 2)
		for what, ctx := range map[string]context.Context{"list": s.list[0], "call": s.run[0], "direct call": s.run[1]} {
			assert.Equal(t, "declined", ctx.Value(declinedKey{}), "fresh=%v: %s under the observer's context", fresh, what)
			assert.Equal(t, run.ID(), toolset.FromContext(ctx).ID(), "fresh=%v: %s in its run", fresh, what)
		}
	}
}
