package toolset_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tool declares its effects, or is taken to do the worst.
func TestToolEffects(t *testing.T) {
	e, declared := echoTool("x").Effects()
	assert.False(t, declared)
	assert.Equal(t, toolset.UnknownEffects, e)
	read := toolset.NewTool("read", "Reads.", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithEffects(toolset.Effects{ReadOnly: true, Idempotent: true}))
	e, declared = read.Effects()
	assert.True(t, declared)
	assert.Equal(t, toolset.Effects{ReadOnly: true, Idempotent: true}, e)
}

// EffectPolicies has a human approve each call of a tool that may destroy
// (or declares nothing) and runs it alone; it leaves a read-only tool and
// one that only adds alone, and asks no second time of a tool that asks
// already.
func TestEffectPolicies(t *testing.T) {
	ran := map[string]int{}
	tool := func(name string, opts ...toolset.ToolOption) toolset.Tool {
		return toolset.NewTool(name, "A tool.", func(context.Context, struct{}) (string, error) { ran[name]++; return name, nil }, opts...)
	}
	ts := toolset.NewFunction(
		tool("read", toolset.WithEffects(toolset.Effects{ReadOnly: true})),
		tool("append", toolset.WithEffects(toolset.Effects{Destructive: false})),
		tool("drop", toolset.WithEffects(toolset.Effects{Destructive: true})),
		tool("unknown"),
		tool("asks", toolset.WithEffects(toolset.UnknownEffects), toolset.WithApprovalRequired(toolset.Always)),
	).Guarded(toolset.EffectPolicies)
	run := testRun(t, "effects")
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", ts)
	require.NoError(t, err)
	for _, name := range []string{"read", "append"} {
		_, err := list.Execute(turn, toolset.ToolCall{ID: name, Name: name, Args: json.RawMessage(`{}`)})
		require.NoError(t, err, name)
	}
	for _, name := range []string{"drop", "unknown", "asks"} {
		call := toolset.ToolCall{ID: name, Name: name, Args: json.RawMessage(`{}`)}
		_, err := list.Execute(turn, call)
		var asked *toolset.ApprovalRequiredError
		require.ErrorAs(t, err, &asked, name)
		run.RecordApproval(asked.Call)
		res, err := list.Execute(turn, call)
		require.NoError(t, err, "%s: approved once, it runs", name)
		assert.Equal(t, name, res)
	}
	assert.Equal(t, map[string]int{"read": 1, "append": 1, "drop": 1, "unknown": 1, "asks": 1}, ran)
	calls := []toolset.ToolCall{{Name: "read"}, {Name: "drop"}, {Name: "read"}}
	assert.Equal(t, [][]int{nil, {0}, {1}}, list.CallOrder(calls), "a destructive tool runs alone")
	drop, _ := list.Lookup("drop")
	e, declared := drop.Effects()
	assert.True(t, declared && e.Destructive, "a guarded tool keeps its declaration")
}
