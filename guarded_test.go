package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingTool returns a tool whose handler counts its calls and fails while
// fail is set.
func countingTool(name string, calls *atomic.Int32, fail *atomic.Bool) toolset.Tool {
	type args struct {
		N int `json:"n"`
	}
	return toolset.NewTool(name, "Counts.", func(_ context.Context, a args) (int, error) {
		calls.Add(1)
		if fail != nil && fail.Load() {
			return 0, errors.New("down")
		}
		return a.N, nil
	})
}

// A guarded tool keeps the policies its guard gave it from turn to turn:
// its cache answers a later turn's call, its failure budget is spent
// across turns, and the guard runs once per tool, not per turn.
func TestGuardedPoliciesLastFromTurnToTurn(t *testing.T) {
	var calls, guards atomic.Int32
	fail := &atomic.Bool{}
	inner := toolset.NewFunction(countingTool("add", &calls, fail), echoTool("plain"))
	g := toolset.NewGuarded(inner, func(tool toolset.Tool) []toolset.ToolOption {
		guards.Add(1)
		if tool.Name == "plain" {
			return nil
		}
		return []toolset.ToolOption{toolset.WithCache(toolset.CachePolicy{}), toolset.WithMaxFailures(2)}
	})
	run := testRun(t, "guarded")
	call := func() error {
		list, err := toolset.BuildTools(run.Turn(context.Background()), "a", g)
		require.NoError(t, err)
		_, err = list.Execute(run.Turn(context.Background()), toolset.ToolCall{Name: "add", Args: json.RawMessage(`{"n":1}`)})
		return err
	}
	require.NoError(t, call())
	require.NoError(t, call())
	assert.Equal(t, int32(1), calls.Load(), "the second turn's call is answered from the guard's cache")

	fail.Store(true)
	for i := range 2 {
		list, err := toolset.BuildTools(run.Turn(context.Background()), "a", g)
		require.NoError(t, err)
		_, err = list.Execute(run.Turn(context.Background()), toolset.ToolCall{Name: "add", Args: json.RawMessage(`{"n":` + string(rune('2'+i)) + `}`)})
		require.Error(t, err)
	}
	list, err := toolset.BuildTools(run.Turn(context.Background()), "a", g)
	require.NoError(t, err)
	_, listed := list.Lookup("add")
	assert.False(t, listed, "the budget given by the guard is spent across turns, and the tool left out")
	assert.Equal(t, int32(2), guards.Load(), "the guard runs once per tool")

	plain, ok := list.Lookup("plain")
	require.True(t, ok)
	orig, _ := inner.GetTools(context.Background())
	assert.True(t, plain.Same(orig[1]), "a tool the guard gives nothing is offered as it is")
}

// A guarded call runs the inner tool's own call path: its validation, its
// middleware once, and its own timeout, under the guard's.
func TestGuardedCallRunsTheInnerToolsPolicies(t *testing.T) {
	var inner, outer atomic.Int32
	count := func(n *atomic.Int32) toolset.Middleware {
		return func(next toolset.Handler) toolset.Handler {
			return func(ctx context.Context, c toolset.ToolCall) (any, error) { n.Add(1); return next(ctx, c) }
		}
	}
	type args struct {
		Wait string `json:"wait"`
	}
	slow := toolset.NewTool("slow", "Waits.", func(ctx context.Context, a args) (string, error) {
		d, _ := time.ParseDuration(a.Wait)
		select {
		case <-time.After(d):
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}, toolset.WithMiddleware(count(&inner)), toolset.WithTimeout(time.Hour, toolset.TimeoutTellModel))
	g := toolset.NewFunction(slow).Guarded(func(toolset.Tool) []toolset.ToolOption {
		return []toolset.ToolOption{toolset.WithMiddleware(count(&outer)), toolset.WithTimeout(20*time.Millisecond, toolset.TimeoutTellModel)}
	})
	ctx := newRun(t, "inner")
	list, err := toolset.BuildTools(ctx, "a", g)
	require.NoError(t, err)

	res, err := list.Execute(ctx, toolset.ToolCall{Name: "slow", Args: json.RawMessage(`{"wait":"0s"}`)})
	require.NoError(t, err)
	assert.Equal(t, "done", res)
	assert.Equal(t, int32(1), inner.Load(), "the inner tool's middleware runs once")
	assert.Equal(t, int32(1), outer.Load(), "the guard's middleware runs once")

	_, err = list.Execute(ctx, toolset.ToolCall{Name: "slow", Args: json.RawMessage(`{"wait":"1h"}`)})
	var timeout *toolset.TimeoutError
	require.ErrorAs(t, err, &timeout, "the guard's timeout bounds the call")
	assert.Equal(t, 20*time.Millisecond, timeout.After)

	_, err = list.Execute(ctx, toolset.ToolCall{Name: "slow", Args: json.RawMessage(`{"wait":1}`)})
	var argErr *toolset.ArgumentError
	require.ErrorAs(t, err, &argErr, "arguments are validated")
	assert.Equal(t, 1, strings.Count(err.Error(), `"slow"`), "the tool is named once: %v", err)
}

// A tool whose definition changes is guarded again; an unchanged one keeps
// its guarded copy, and a steady turn costs what the same turn without
// the guard costs.
func TestGuardedFollowsItsInnerToolset(t *testing.T) {
	var guards atomic.Int32
	cur := &atomic.Pointer[[]toolset.Tool]{}
	v1 := echoTools("a", "b")
	cur.Store(&v1)
	inner := toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) { return toolset.NewFunction(*cur.Load()...), nil })
	g := toolset.NewGuarded(inner, func(toolset.Tool) []toolset.ToolOption {
		guards.Add(1)
		return []toolset.ToolOption{toolset.WithMaxFailures(3)}
	})
	ctx := newRun(t, "follow")
	first, err := g.GetTools(ctx)
	require.NoError(t, err)
	again, err := g.GetTools(ctx)
	require.NoError(t, err)
	assert.True(t, first[0].Same(again[0]) && first[1].Same(again[1]))
	assert.Equal(t, int32(2), guards.Load())

	v2 := []toolset.Tool{v1[0], toolset.NewTool("b", "A new b.", func(context.Context, struct{}) (string, error) { return "b2", nil })}
	cur.Store(&v2)
	later, err := g.GetTools(ctx)
	require.NoError(t, err)
	assert.True(t, later[0].Same(first[0]), "the unchanged tool keeps its guarded copy")
	assert.False(t, later[1].Same(first[1]), "the changed tool is guarded again")
	assert.Equal(t, "A new b.", later[1].Description)
	assert.Equal(t, int32(3), guards.Load())
}

func TestGuardedSteadyTurnAllocatesAsTheSameTurnUnguarded(t *testing.T) {
	skipAllocCounts(t)
	tools := allocTools(100)
	guard := func(toolset.Tool) []toolset.ToolOption {
		return []toolset.ToolOption{toolset.WithTimeout(time.Minute, toolset.TimeoutTellModel), toolset.WithMaxFailures(3)}
	}
	allocs := func(ts toolset.Toolset) float64 {
		run := testRun(t, "steady", toolset.WithValue(Role, "user"))
		turn := func() {
			if got, err := toolset.BuildTools(run.Turn(context.Background()), "a", ts); err != nil || got.Len() != 50 {
				t.Fatalf("turn: %v", err)
			}
		}
		turn()
		return testing.AllocsPerRun(20, turn)
	}
	plain := allocs(toolset.NewFunction(tools...).Prefixed("x").Filtered(adminsOnly))
	guarded := allocs(toolset.NewFunction(tools...).Guarded(guard).Prefixed("x").Filtered(adminsOnly))
	assert.Equal(t, plain, guarded)
}

// A guard that panics fails the turn with a *PanicError naming the tool;
// a nil guard and a nil *Guarded fail it with an error.
func TestGuardedBadGuards(t *testing.T) {
	ctx := newRun(t, "bad")
	_, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTools("a", "boom")...).Guarded(func(tool toolset.Tool) []toolset.ToolOption {
		if tool.Name == "boom" {
			panic("no policies for you")
		}
		return nil
	}))
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "boom", pe.Tool)
	assert.Contains(t, err.Error(), "guard function")

	_, err = toolset.BuildTools(ctx, "a", toolset.NewGuarded(toolset.NewFunction(echoTool("a")), nil))
	require.ErrorContains(t, err, "nil guard function")

	var nilG *toolset.Guarded
	_, err = toolset.BuildTools(ctx, "a", nilG)
	require.ErrorContains(t, err, "nil *Guarded")
	require.Error(t, nilG.Close())
}

// A conflict under a Guarded names it in the path.
func TestGuardedConflictPath(t *testing.T) {
	g := toolset.NewGuarded(toolset.NewFunction(echoTool("a")), func(toolset.Tool) []toolset.ToolOption { return nil })
	_, err := toolset.BuildTools(context.Background(), "a", g, toolset.NewFunction(echoTool("a")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Guarded#0")
}

// What a turn reads from the listed tool (deferral, the call bound and
// order) follows the guarded tool from the one it guards.
func TestGuardedKeepsWhatTheListReads(t *testing.T) {
	noop := func(context.Context, struct{}) (string, error) { return "ok", nil }
	inner := toolset.NewFunction(
		toolset.NewTool("hidden", "A deferred tool.", noop, toolset.WithDeferred()),
		toolset.NewTool("deploy", "Deploys.", noop, toolset.WithSequential(), toolset.WithCallLimit(1)),
		toolset.NewTool("write", "Writes.", noop, toolset.WithResource("file")),
	)
	g := toolset.NewGuarded(inner, func(toolset.Tool) []toolset.ToolOption {
		return []toolset.ToolOption{toolset.WithTimeout(time.Minute, toolset.TimeoutTellModel)}
	})
	run := testRun(t, "listing")
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", g, toolset.NewToolSearch(g))
	require.NoError(t, err)
	assert.NotContains(t, list.Names(), "hidden", "a deferred tool stays deferred under a guard")
	calls := []toolset.ToolCall{{Name: "write"}, {Name: "deploy"}, {Name: "write"}}
	assert.Equal(t, [][]int{nil, {0}, {1}}, list.CallOrder(calls))
	_, err = list.Execute(turn, toolset.ToolCall{Name: "deploy", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	_, err = list.Execute(turn, toolset.ToolCall{Name: "deploy", Args: json.RawMessage(`{}`)})
	var limit *toolset.CallLimitError
	require.ErrorAs(t, err, &limit, "the inner tool's call bound holds")
}
