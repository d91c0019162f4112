package toolset_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tool called directly with Tool.Execute under a turn's context makes
// a call of that turn: it shares the turn's budget with the calls of the
// turn's list, and is cut as theirs are once the budget is spent.
func TestTurnResultBudgetDirectCalls(t *testing.T) {
	text := bigText(3000)
	dump := toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil })
	run := testRun(t, "turn-budget-direct", toolset.WithTurnResultBudget(toolset.ResultBudget{MaxBytes: 5000}))
	call := toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{}`)}

	for turnNo := range 2 {
		turn := run.Turn(context.Background())
		list, err := toolset.BuildTools(turn, "a", dump)
		require.NoError(t, err)
		first, err := dump.Execute(turn, call)
		require.NoError(t, err)
		assert.Equal(t, text, first, "turn %d: the first result fits", turnNo)
		second, err := list.Execute(turn, call)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(second.(string)), 2000, "turn %d: the list's call gets what the direct call left", turnNo)
		assert.Regexp(t, markerRE, second)
		third, err := dump.Execute(turn, call)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(third.(string)), 256, "turn %d: past the budget, a direct call gets the least a budget gives", turnNo)
		assert.Regexp(t, markerRE, third)
	}
}

// A direct call under a context that carries the run but no turn counts
// against the run's latest turn; before the first turn, the calls share
// a budget of their own.
func TestTurnResultBudgetDirectCallsOutsideTurns(t *testing.T) {
	text := bigText(3000)
	dump := toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil })
	run := testRun(t, "turn-budget-noturn", toolset.WithTurnResultBudget(toolset.ResultBudget{MaxBytes: 4000}))
	call := toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{}`)}
	inRun := toolset.NewContext(context.Background(), run)

	sizes := func(ctxs ...context.Context) []int {
		var out []int
		for _, ctx := range ctxs {
			res, err := dump.Execute(ctx, call)
			require.NoError(t, err)
			out = append(out, len(res.(string)))
		}
		return out
	}
	got := sizes(inRun, inRun)
	assert.Equal(t, 3000, got[0], "before any turn: the first fits")
	assert.LessOrEqual(t, got[1], 1000+80, "before any turn: the second gets what is left")

	turn := run.Turn(context.Background())
	got = sizes(turn, inRun)
	assert.Equal(t, 3000, got[0], "a new turn begins afresh")
	assert.LessOrEqual(t, got[1], 1000+80, "a call outside the turns counts against the latest one")

	// An older turn's context keeps counting against its own turn.
	later := run.Turn(context.Background())
	got = sizes(later, turn)
	assert.Equal(t, 3000, got[0])
	assert.LessOrEqual(t, got[1], 256, "the older turn's budget was spent")
}

// Without a turn budget, a direct call is not cut, however large.
func TestTurnResultBudgetNoneDirect(t *testing.T) {
	text := bigText(50000)
	dump := toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil })
	run := testRun(t, "turn-budget-none")
	turn := run.Turn(context.Background())
	for range 3 {
		res, err := dump.Execute(turn, toolset.ToolCall{Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		assert.Equal(t, text, res)
	}
}

// BenchmarkCallDirect calls a tool with Tool.Execute under a turn's
// context: without a turn budget (none), and with one never spent
// (budget), which counts each result against the turn.
func BenchmarkCallDirect(b *testing.B) {
	tool := toolset.NewTool("get_weather", "Weather.", benchHandler)
	for _, bc := range []struct {
		name string
		opts []toolset.RunOption
	}{
		{"none", nil},
		{"budget", []toolset.RunOption{toolset.WithTurnResultBudget(toolset.ResultBudget{MaxBytes: 1 << 62})}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			run := toolset.NewRun("", bc.opts...)
			defer run.End()
			turn := run.Turn(context.Background())
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tool.Execute(turn, toolset.ToolCall{Args: benchCallArgs}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
