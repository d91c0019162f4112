package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stepOf begins the next step of run over ts and returns a function that
// makes one call of a tool of it by name.
func stepOf(t *testing.T, run *toolset.RunContext, ts toolset.Toolset) func(name string) error {
	t.Helper()
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", ts)
	require.NoError(t, err)
	return func(name string) error {
		_, err := list.Execute(turn, toolset.ToolCall{Name: name, Args: json.RawMessage(`{}`)})
		return err
	}
}

// A run's bound of calls refuses the calls past it: in the step it was
// reached, with a message for the model; in a later step, with an error
// that stops the run.
func TestCallLimitsOfARun(t *testing.T) {
	var ran atomic.Int32
	tool := toolset.NewTool("look", "Looks.", func(context.Context, struct{}) (string, error) { ran.Add(1); return "ok", nil })
	ts := toolset.NewFunction(tool, echoTool("other"))
	run := testRun(t, "limits", toolset.WithCallLimits(toolset.CallLimits{Calls: 2}))
	call := stepOf(t, run, ts)
	require.NoError(t, call("look"))
	require.NoError(t, call("other"))

	err := call("look")
	var cl *toolset.CallLimitError
	require.ErrorAs(t, err, &cl)
	assert.Equal(t, toolset.CallLimitError{Tool: "look", Limit: "calls", Max: 2}, *cl)
	msg, forModel := toolset.ErrorText(err)
	require.True(t, forModel, "the step that reached the bound tells the model")
	assert.Equal(t, `tool "look" was not called: the limit of 2 tool calls was reached; answer with what you have, without calling tools`, msg)
	assert.Equal(t, int32(1), ran.Load(), "the refused call did not run")

	err = stepOf(t, run, ts)("other")
	require.ErrorAs(t, err, &cl)
	assert.True(t, cl.Stop)
	_, forModel = toolset.ErrorText(err)
	assert.False(t, forModel, "a call after the model was told stops the run")
	assert.Contains(t, err.Error(), "the run must stop")
}

// A bound per tool refuses that tool only; a tool's own bound and the
// run's both apply, the lower first, and copies of a tool share its count
// under the name they are called by.
func TestCallLimitsPerTool(t *testing.T) {
	a := toolset.NewTool("a", "A.", func(context.Context, struct{}) (string, error) { return "a", nil }, toolset.WithCallLimit(1))
	ts := toolset.NewFunction(a, echoTool("b"))
	run := testRun(t, "per-tool", toolset.WithCallLimits(toolset.CallLimits{PerTool: 2}))
	call := stepOf(t, run, ts)
	require.NoError(t, call("a"))
	err := call("a")
	var cl *toolset.CallLimitError
	require.ErrorAs(t, err, &cl)
	assert.Equal(t, "tool calls", cl.Limit)
	assert.Equal(t, 1, cl.Max, "the tool's own bound is the lower")
	msg, _ := toolset.ErrorText(err)
	assert.Contains(t, msg, "do without it")

	require.NoError(t, call("b"))
	require.NoError(t, call("b"))
	require.ErrorAs(t, call("b"), &cl)
	assert.Equal(t, 2, cl.Max, "the run's bound per tool")

	// Without a run's bounds, a tool's own applies, to direct calls too.
	direct := testRun(t, "direct")
	ctx := direct.Turn(context.Background())
	_, err = a.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	_, err = a.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{}`)})
	require.ErrorAs(t, err, &cl)

	// A call without a run is not bounded.
	for range 3 {
		_, err = a.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
	}
}

// A bound of failures counts the calls that fail, whatever made them fail.
func TestCallLimitsOfFailures(t *testing.T) {
	boom := toolset.NewTool("boom", "Fails.", func(context.Context, struct{}) (string, error) { return "", errors.New("down") })
	ts := toolset.NewFunction(boom, echoTool("fine"))
	run := testRun(t, "failures", toolset.WithCallLimits(toolset.CallLimits{Failures: 2}))
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", ts)
	require.NoError(t, err)
	call := func(name, args string) error {
		_, err := list.Execute(turn, toolset.ToolCall{Name: name, Args: json.RawMessage(args)})
		return err
	}
	require.Error(t, call("boom", `{}`))
	require.NoError(t, call("fine", `{}`))
	var ae *toolset.ArgumentError
	require.ErrorAs(t, call("fine", `{"x":1}`), &ae, "invalid arguments fail the call, and count")
	var cl *toolset.CallLimitError
	require.ErrorAs(t, call("fine", `{}`), &cl)
	assert.Equal(t, "failures", cl.Limit)
}

// Calls made at once never run past the bound.
func TestCallLimitsHoldUnderConcurrentCalls(t *testing.T) {
	var ran atomic.Int32
	tool := toolset.NewTool("t", "T.", func(context.Context, struct{}) (string, error) { ran.Add(1); return "ok", nil })
	run := testRun(t, "concurrent", toolset.WithCallLimits(toolset.CallLimits{Calls: 10}))
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", toolset.NewFunction(tool))
	require.NoError(t, err)
	var wg sync.WaitGroup
	var refused atomic.Int32
	for i := range 40 {
		wg.Go(func() {
			_, err := list.Execute(turn, toolset.ToolCall{ID: fmt.Sprint(i), Name: "t", Args: json.RawMessage(`{}`)})
			var cl *toolset.CallLimitError
			if errors.As(err, &cl) {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(10), ran.Load())
	assert.Equal(t, int32(30), refused.Load())
}

// A child run has the parent's bounds and counts of its own.
func TestCallLimitsOfAChildRun(t *testing.T) {
	ts := toolset.NewFunction(echoTool("x"))
	parent := testRun(t, "parent", toolset.WithCallLimits(toolset.CallLimits{Calls: 1}))
	require.NoError(t, stepOf(t, parent, ts)("x"))
	child := parent.NewChild("")
	defer child.End()
	call := stepOf(t, child, ts)
	require.NoError(t, call("x"), "the child counts its own calls")
	var cl *toolset.CallLimitError
	require.ErrorAs(t, call("x"), &cl)
}

// A resumed run keeps its counts, and a bound reached before the save
// stops the run after it.
func TestCallLimitsSurviveAResume(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	limits := toolset.WithCallLimits(toolset.CallLimits{Calls: 1, PerTool: 1})
	ts := toolset.NewFunction(echoTool("x"))
	run, err := toolset.ResumeRun(ctx, store, "resumed", limits)
	require.NoError(t, err)
	call := stepOf(t, run, ts)
	require.NoError(t, call("x"))
	var cl *toolset.CallLimitError
	require.ErrorAs(t, call("x"), &cl)
	require.False(t, cl.Stop)
	require.NoError(t, run.Suspend(ctx))
	data, _, err := store.Load(ctx, "resumed")
	require.NoError(t, err)
	assert.Contains(t, string(data), `"limits":{"calls":1,"tools":{"x":1},"reached":{"calls":0}}`)

	run, err = toolset.ResumeRun(ctx, store, "resumed", limits)
	require.NoError(t, err)
	defer run.End()
	require.ErrorAs(t, stepOf(t, run, ts)("x"), &cl)
	assert.True(t, cl.Stop, "the bound was reached in an earlier step")
}

// The counts of a forged or damaged state are refused.
func TestResumeRefusesBadCallCounts(t *testing.T) {
	ctx := context.Background()
	many := map[string]int{}
	for i := range 4097 {
		many[fmt.Sprint("t", i)] = 1
	}
	for name, limits := range map[string]any{
		"negative":      map[string]any{"calls": -1},
		"bad name":      map[string]any{"tools": map[string]int{"": 1}},
		"long name":     map[string]any{"tools": map[string]int{strings.Repeat("x", 300): 1}},
		"negative tool": map[string]any{"tools": map[string]int{"x": -1}},
		"future step":   map[string]any{"reached": map[string]int{"calls": 9}},
		"unknown bound": map[string]any{"reached": map[string]int{"minutes": 0}},
		"too many":      map[string]any{"tools": many},
		"not an object": []int{1},
	} {
		t.Run(name, func(t *testing.T) {
			store := toolset.NewMemoryRunStore()
			data, err := json.Marshal(map[string]any{"version": 1, "id": "forged", "step": 0, "limits": limits})
			require.NoError(t, err)
			_, err = store.Save(ctx, "forged", data, 0, 0)
			require.NoError(t, err)
			_, err = toolset.ResumeRun(ctx, store, "forged")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "limits")
		})
	}
}
