package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Every test here would end the test binary on code that does not recover
// the callback's panic: a panic on one of the goroutines of BuildTools or
// Combined cannot be recovered by the test.

// panicky is a user toolset whose GetTools, Label, Instructions or Close
// panics, as its fields say.
type panicky struct {
	tools                               []toolset.Tool
	getTools, label, instructions, shut bool
}

func (p panicky) GetTools(context.Context) ([]toolset.Tool, error) {
	if p.getTools {
		panic("GetTools exploded")
	}
	return p.tools, nil
}

func (p panicky) Label() string {
	if p.label {
		panic("Label exploded")
	}
	return "mine"
}

func (p panicky) Instructions(context.Context) (string, error) {
	if p.instructions {
		panic("Instructions exploded")
	}
	return "Use my tools.", nil
}

func (p panicky) Close() error {
	if p.shut {
		panic("Close exploded")
	}
	return nil
}

func explodingPredicate(_ context.Context, t toolset.Tool) (bool, error) {
	if t.Name == "b" {
		panic("predicate exploded")
	}
	return true, nil
}

// turnCallbacks are toolsets whose turn-time callback panics, with the
// *PanicError each must produce.
func turnCallbacks() []struct {
	name string
	ts   toolset.Toolset
	want toolset.PanicError
} {
	return []struct {
		name string
		ts   toolset.Toolset
		want toolset.PanicError
	}{
		{"filter predicate", toolset.NewFunction(echoTools("a", "b")...).WithLabel("users").Filtered(explodingPredicate),
			toolset.PanicError{Callback: "filter predicate", Tool: "b", Toolset: "users", Value: "predicate exploded"}},
		{"enabled predicate", toolset.NewFunction(echoTool("a"), toolset.NewTool("b", "", okHandler, toolset.WithEnabled(explodingPredicate))),
			toolset.PanicError{Callback: "enabled predicate", Tool: "b", Value: "predicate exploded"}},
		{"prepare function", toolset.NewFunction(toolset.NewTool("b", "", okHandler, toolset.WithPrepare(func(context.Context, toolset.Tool) (toolset.Tool, bool, error) {
			panic("prepare exploded")
		}))), toolset.PanicError{Callback: "prepare function", Tool: "b", Value: "prepare exploded"}},
		{"Prepared function", toolset.NewFunction(echoTool("a")).WithLabel("users").Prepared(func(context.Context, []toolset.Tool) ([]toolset.Tool, error) {
			panic("Prepared exploded")
		}), toolset.PanicError{Callback: "Prepared function", Toolset: "users", Value: "Prepared exploded"}},
		{"Dynamic function", toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) { panic("Dynamic exploded") }),
			toolset.PanicError{Callback: "Dynamic function", Toolset: "Dynamic", Value: "Dynamic exploded"}},
		{"GetTools", panicky{getTools: true},
			toolset.PanicError{Callback: "GetTools", Toolset: "mine", Value: "GetTools exploded"}},
	}
}

func okHandler(context.Context, struct{}) (string, error) { return "ok", nil }

func requirePanic(t *testing.T, err error, want toolset.PanicError) {
	t.Helper()
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, want.Callback, pe.Callback)
	assert.Equal(t, want.Tool, pe.Tool)
	assert.Equal(t, want.Toolset, pe.Toolset)
	assert.Equal(t, want.Value, pe.Value)
	assert.NotEmpty(t, pe.Stack, "the stack stays in the value, for logs")
	assert.NotContains(t, err.Error(), "goroutine", "the message leaves the stack out")
	_, forModel := toolset.ErrorText(err)
	assert.False(t, forModel, "a panic stops the run")
}

func TestPanickingTurnCallbackFailsTheTurn(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := newRun(t, "r")
	for _, c := range turnCallbacks() {
		t.Run(c.name, func(t *testing.T) {
			// Alone, the entry is materialised on the caller's goroutine.
			_, err := toolset.BuildTools(ctx, "a", c.ts)
			requirePanic(t, err, c.want)
			if _, mine := c.ts.(panicky); !mine {
				_, err = c.ts.GetTools(ctx)
				requirePanic(t, err, c.want)
			}

			// With another entry that runs code, each runs on a goroutine
			// of its own.
			other := toolset.NewFunction(echoTool("z")).Filtered(func(context.Context, toolset.Tool) (bool, error) { return true, nil })
			_, err = toolset.BuildTools(ctx, "a", c.ts, other)
			requirePanic(t, err, c.want)

			_, err = toolset.NewCombined(other, c.ts).GetTools(ctx)
			requirePanic(t, err, c.want)
			_, err = toolset.BuildTools(ctx, "a", toolset.NewCombined(c.ts, other).Prefixed("p"))
			requirePanic(t, err, c.want)
		})
	}
}

func TestPanickingPredicateErrorStillHides(t *testing.T) {
	// A predicate's error is a verdict: the tool is hidden, the turn goes on.
	ts := toolset.NewFunction(echoTools("a", "b")...).Filtered(func(_ context.Context, t toolset.Tool) (bool, error) {
		if t.Name == "b" {
			return false, errors.New("no role")
		}
		return true, nil
	})
	assert.Equal(t, []string{"a"}, names(t, newRun(t, "r"), ts))
}

func TestPanickingLabelFailsTheTurn(t *testing.T) {
	ts := panicky{label: true, tools: echoTools("a")}
	_, err := toolset.BuildTools(newRun(t, "r"), "a", ts)
	requirePanic(t, err, toolset.PanicError{Callback: "Label", Toolset: "panicky", Value: "Label exploded"})
	_, err = toolset.NewCombined(ts).GetTools(newRun(t, "r"))
	requirePanic(t, err, toolset.PanicError{Callback: "Label", Toolset: "panicky", Value: "Label exploded"})
	assert.Equal(t, "panicky", toolset.LabelOf(ts), "LabelOf falls back to the type name")
}

func TestPanickingInstructionsAndClose(t *testing.T) {
	ctx := newRun(t, "r")
	ts := panicky{instructions: true, shut: true, tools: echoTools("a")}
	_, err := toolset.Instructions(ctx, ts)
	requirePanic(t, err, toolset.PanicError{Callback: "Instructions", Toolset: "mine", Value: "Instructions exploded"})
	_, err = toolset.NewCombined(ts).Instructions(ctx)
	requirePanic(t, err, toolset.PanicError{Callback: "Instructions", Toolset: "mine", Value: "Instructions exploded"})
	_, err = toolset.NewFiltered(ts, func(context.Context, toolset.Tool) (bool, error) { return true, nil }).Instructions(ctx)
	requirePanic(t, err, toolset.PanicError{Callback: "Instructions", Toolset: "mine", Value: "Instructions exploded"})

	err = toolset.NewCombined(ts, echoTool("b")).Close()
	requirePanic(t, err, toolset.PanicError{Callback: "Close", Toolset: "mine", Value: "Close exploded"})
	err = toolset.NewPrefixed(ts, "p").Close()
	requirePanic(t, err, toolset.PanicError{Callback: "Close", Toolset: "mine", Value: "Close exploded"})
}

func TestGoexitInTurnCallbackFailsTheTurn(t *testing.T) {
	defer goleak.VerifyNone(t)
	// On a goroutine of BuildTools, a callback that calls runtime.Goexit
	// (as t.FailNow does) used to leave that entry's view empty and its
	// error nil.
	quits := toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) {
		runtime.Goexit()
		return nil, nil
	})
	other := toolset.NewFunction(echoTool("z")).Filtered(func(context.Context, toolset.Tool) (bool, error) { return true, nil })
	_, err := toolset.BuildTools(newRun(t, "r"), "a", other, quits)
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, toolset.ErrGoexit)
	assert.Equal(t, "Dynamic", pe.Toolset)
	assert.Contains(t, err.Error(), "called runtime.Goexit")
}

// callbackTool returns a tool whose callbacks of the call path panic as
// kind says.
func callPathCases() []struct {
	name string
	tool toolset.Tool
	want toolset.PanicError
} {
	handler := func(context.Context, struct{}) (string, error) { return "ok", nil }
	exploding := func(context.Context, struct{}) (string, error) { panic("handler exploded") }
	mw := func(next toolset.Handler) toolset.Handler {
		return func(ctx context.Context, c toolset.ToolCall) (any, error) { return next(ctx, c) }
	}
	badMW := func(toolset.Handler) toolset.Handler {
		return func(context.Context, toolset.ToolCall) (any, error) { panic("middleware exploded") }
	}
	return []struct {
		name string
		tool toolset.Tool
		want toolset.PanicError
	}{
		{"handler", toolset.NewTool("t", "", exploding),
			toolset.PanicError{Callback: "handler", Tool: "t", Value: "handler exploded"}},
		{"handler under middleware", toolset.NewTool("t", "", exploding, toolset.WithMiddleware(mw)),
			toolset.PanicError{Callback: "handler", Tool: "t", Value: "handler exploded"}},
		{"middleware", toolset.NewTool("t", "", handler, toolset.WithMiddleware(badMW)),
			toolset.PanicError{Callback: "middleware", Tool: "t", Value: "middleware exploded"}},
		{"approval predicate", toolset.NewTool("t", "", handler, toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) {
			panic("approval exploded")
		})), toolset.PanicError{Callback: "approval predicate", Tool: "t", Value: "approval exploded"}},
		{"cache key", toolset.NewTool("t", "", handler, toolset.WithCache(toolset.CachePolicy{Key: func(context.Context, json.RawMessage) (string, error) {
			panic("key exploded")
		}})), toolset.PanicError{Callback: "cache key", Tool: "t", Value: "key exploded"}},
		{"cache ShouldCache", toolset.NewTool("t", "", handler, toolset.WithCache(toolset.CachePolicy{ShouldCache: func(any) bool {
			panic("ShouldCache exploded")
		}})), toolset.PanicError{Callback: "cache ShouldCache", Tool: "t", Value: "ShouldCache exploded"}},
	}
}

func TestPanickingCallPathCallbackFailsTheCall(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, c := range callPathCases() {
		t.Run(c.name, func(t *testing.T) {
			ctx := newRun(t, "r")
			tools, err := toolset.BuildTools(ctx, "a", c.tool)
			require.NoError(t, err)
			_, err = tools.Execute(ctx, toolset.ToolCall{ID: "1", Name: "t", Args: json.RawMessage(`{}`)})
			requirePanic(t, err, c.want)

			// Concurrent calls recover on their own goroutines.
			errs := make(chan error, 2)
			for range 2 {
				go func() {
					_, err := tools.Execute(ctx, toolset.ToolCall{ID: "2", Name: "t", Args: json.RawMessage(`{}`)})
					errs <- err
				}()
			}
			for range 2 {
				requirePanic(t, <-errs, c.want)
			}
		})
	}
}

func TestPanickingWrapperMiddlewareIsNamed(t *testing.T) {
	ctx := newRun(t, "r")
	w := toolset.Wrapper{Wrapped: toolset.NewFunction(toolset.NewTool("t", "", func(context.Context, struct{}) (string, error) {
		panic("handler exploded")
	})), Middleware: []toolset.Middleware{func(next toolset.Handler) toolset.Handler { return next }}}
	tools, err := toolset.BuildTools(ctx, "a", w)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "t", Args: nil})
	requirePanic(t, err, toolset.PanicError{Callback: "handler", Tool: "t", Value: "handler exploded"})

	bad := toolset.Wrapper{Wrapped: toolset.NewFunction(echoTool("t")), Middleware: []toolset.Middleware{func(toolset.Handler) toolset.Handler {
		panic("middleware exploded")
	}}}
	tools, err = toolset.BuildTools(nextTurn(ctx), "a", bad)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "t", Args: nil})
	requirePanic(t, err, toolset.PanicError{Callback: "middleware", Tool: "t", Value: "middleware exploded"})
}

func TestPanicMessageIsShort(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	tool := toolset.NewTool("t", "", func(context.Context, struct{}) (string, error) { panic(huge) })
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: nil})
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, huge, pe.Value, "the value is kept whole")
	assert.Less(t, len(err.Error()), 300)
	assert.True(t, strings.HasPrefix(err.Error(), `toolset: tool "t" panicked: xxx`), err.Error())
}

type explodingAgent struct{ name bool }

func (a explodingAgent) Name() string {
	if a.name {
		panic("Name exploded")
	}
	return "helper"
}

func (a explodingAgent) Description() string { panic("Description exploded") }

func (a explodingAgent) Run(context.Context, string) (string, error) { return "", nil }

func TestPanickingAgentMakesTheToolUnusable(t *testing.T) {
	tool := toolset.NewAgentTool(explodingAgent{name: true})
	var pe *toolset.PanicError
	require.ErrorAs(t, tool.Err(), &pe)
	assert.Equal(t, "agent Name", pe.Callback)
	tool = toolset.NewAgentTool(explodingAgent{})
	require.ErrorAs(t, tool.Err(), &pe)
	assert.Equal(t, "agent Description", pe.Callback)
	assert.Equal(t, "helper", pe.Tool)
	_, err := toolset.BuildTools(newRun(t, "r"), "a", tool)
	require.ErrorAs(t, err, &pe)
}

type explodingResult struct{}

func (explodingResult) MarshalJSON() ([]byte, error) { panic("MarshalJSON exploded") }

func TestPanickingResultEncoding(t *testing.T) {
	_, err := toolset.ResultText(explodingResult{})
	requirePanic(t, err, toolset.PanicError{Callback: "result encoding", Value: "MarshalJSON exploded"})
	_, err = toolset.ResultText(&toolset.Content{Structured: explodingResult{}})
	requirePanic(t, err, toolset.PanicError{Callback: "result encoding", Value: "MarshalJSON exploded"})
}

func TestPanickingResultEncodingUnderCacheBudgetFailsTheCall(t *testing.T) {
	tool := toolset.NewTool("t", "", func(context.Context, struct{}) (explodingResult, error) { return explodingResult{}, nil },
		toolset.WithCache(toolset.CachePolicy{MaxBytes: 1 << 10}))
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: nil})
	requirePanic(t, err, toolset.PanicError{Callback: "result encoding", Tool: "t", Value: "MarshalJSON exploded"})
}
