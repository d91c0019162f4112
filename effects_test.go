package toolset_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

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

// An explicit approval policy of a tool's own wins over the default its
// effects call for, and Explain says which set it.
func TestEffectPoliciesExplicitApprovalWins(t *testing.T) {
	ran := 0
	drop := toolset.NewTool("drop", "Drops.", func(context.Context, struct{}) (string, error) { ran++; return "dropped", nil },
		toolset.WithEffects(toolset.Effects{Destructive: true}), toolset.WithApprovalRequired(toolset.Never))
	ts := toolset.NewFunction(drop).Guarded(toolset.EffectPolicies)
	run := testRun(t, "effects-explicit")
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", ts)
	require.NoError(t, err)
	_, err = list.Execute(turn, toolset.ToolCall{ID: "1", Name: "drop", Args: json.RawMessage(`{}`)})
	require.NoError(t, err, "WithApprovalRequired(Never) says no approval")
	assert.Equal(t, 1, ran)
	x, err := toolset.Explain(turn, "a", ts)
	require.NoError(t, err)
	assert.Equal(t, `drop: shown, from Guarded#0/Function
  - approval: never (explicit WithApprovalRequired)
  - order: runs alone, in the model's order (destructive, declared by WithEffects)
  - resume: an interrupted call asks a human before it runs again (not idempotent, declared by WithEffects)`, x.Find("drop")[0].String())
}

// EffectRules turn a default off for a whole toolset, or declare its
// tools' effects; a guard of one's own picks the tools EffectPolicies
// applies to.
func TestEffectGuardRules(t *testing.T) {
	mk := func() *toolset.Function {
		return toolset.NewFunction(
			toolset.NewTool("wipe", "Wipes.", func(context.Context, struct{}) (string, error) { return "wiped", nil }),
			toolset.NewTool("peek", "Peeks.", func(context.Context, struct{}) (string, error) { return "peeked", nil }))
	}
	run := testRun(t, "effects-rules")
	turn := run.Turn(context.Background())
	calls := []toolset.ToolCall{{ID: "1", Name: "wipe", Args: json.RawMessage(`{}`)}, {ID: "2", Name: "peek", Args: json.RawMessage(`{}`)}}

	off := mk().Guarded(toolset.EffectGuard(toolset.EffectRules{NoApproval: true, Parallel: true}))
	list, err := toolset.BuildTools(turn, "a", off)
	require.NoError(t, err)
	for _, c := range calls {
		_, err := list.Execute(turn, c)
		require.NoError(t, err, "no approval for %s", c.Name)
	}
	assert.Nil(t, list.CallOrder(calls), "no tool runs alone")

	declared := mk().Guarded(toolset.EffectGuard(toolset.EffectRules{Declare: &toolset.Effects{ReadOnly: true}, DeclaredBy: `toolset "inspect"`}))
	turn = run.Turn(context.Background())
	list, err = toolset.BuildTools(turn, "b", declared)
	require.NoError(t, err)
	wipe, _ := list.Lookup("wipe")
	e, ok := wipe.Effects()
	assert.True(t, ok && e.ReadOnly, "the toolset's declaration replaces the tool's")
	_, err = list.Execute(turn, toolset.ToolCall{ID: "3", Name: "wipe", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	x, err := toolset.Explain(turn, "b", declared)
	require.NoError(t, err)
	assert.Equal(t, `wipe: shown, from Guarded#0/Function
  - resume: an interrupted call runs again unasked (read-only, declared by toolset "inspect")`, x.Find("wipe")[0].String())

	mine := mk().Guarded(func(t toolset.Tool) []toolset.ToolOption {
		if t.Name == "peek" {
			return nil
		}
		return toolset.EffectPolicies(t)
	})
	turn = run.Turn(context.Background())
	list, err = toolset.BuildTools(turn, "c", mine)
	require.NoError(t, err)
	_, err = list.Execute(turn, toolset.ToolCall{ID: "4", Name: "peek", Args: json.RawMessage(`{}`)})
	require.NoError(t, err, "the program's own guard left peek alone")
	_, err = list.Execute(turn, toolset.ToolCall{ID: "5", Name: "wipe", Args: json.RawMessage(`{}`)})
	var asked *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &asked)
	x, err = toolset.Explain(turn, "c", mine)
	require.NoError(t, err)
	assert.Equal(t, `wipe: shown, from Guarded#0/Function
  - approval: required (declares no effects, taken as destructive)
  - order: runs alone, in the model's order (declares no effects, taken as destructive)
  - resume: an interrupted call asks a human before it runs again (declares no effects, taken as not idempotent)`, x.Find("wipe")[0].String())
	assert.Equal(t, `peek: shown, from Guarded#0/Function`, x.Find("peek")[0].String())
}

// A shared cache never serves a tool that declares calls that are
// neither read-only nor idempotent, unless its policy says so; it serves
// read-only and idempotent tools, and tools that declare nothing, as
// before.
func TestSharedCacheSkipsNonIdempotentTools(t *testing.T) {
	ctx := bounded(t)
	store := &mapCache{}
	ran := map[string]int{}
	tool := func(name string, share bool, opts ...toolset.ToolOption) toolset.Tool {
		opts = append(opts, toolset.WithCache(toolset.CachePolicy{Shared: store, ShareNonIdempotent: share}))
		return toolset.NewTool(name, "A tool.", func(context.Context, struct{ N int }) (string, error) { ran[name]++; return name, nil }, opts...)
	}
	tools := []toolset.Tool{
		tool("send", false, toolset.WithEffects(toolset.Effects{})),
		tool("put", false, toolset.WithEffects(toolset.Effects{Idempotent: true, Destructive: true})),
		tool("get", false, toolset.WithEffects(toolset.Effects{ReadOnly: true})),
		tool("old", false),
		tool("sendShared", true, toolset.WithEffects(toolset.Effects{})),
	}
	for _, tl := range tools {
		for range 3 {
			res, err := tl.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"N":1}`)})
			require.NoError(t, err)
			assert.Equal(t, tl.Name, res)
		}
	}
	assert.Equal(t, map[string]int{"send": 3, "put": 1, "get": 1, "old": 1, "sendShared": 1}, ran)
	for _, tl := range tools[:1] {
		x, err := toolset.Explain(ctx, "a", tl)
		require.NoError(t, err)
		assert.Contains(t, x.String(), "- shared cache: bypassed, every call runs (not idempotent, declared by WithEffects)")
	}
}

// A resumed run that finds a call interrupted runs it again unasked when
// EffectPolicies saw the tool declare itself idempotent, and asks a human
// first for any other tool.
func TestJournalResumeRerunsOnlyIdempotentTools(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		effect toolset.Effects
		asks   bool
		rerun  bool                 // the tool's own WithResumeRerun
		rules  *toolset.EffectRules // instead of EffectPolicies
	}{
		{name: "put", effect: toolset.Effects{Idempotent: true}},
		{name: "read", effect: toolset.Effects{ReadOnly: true}},
		{name: "charge", effect: toolset.Effects{}, asks: true},
		{name: "wipe", effect: toolset.UnknownEffects, asks: true},
		{name: "explicit", effect: toolset.Effects{}, rerun: true},
		{name: "ask", effect: toolset.Effects{Idempotent: true}, asks: true, rules: &toolset.EffectRules{AskOnResume: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := toolset.NewMemoryRunStore()
				var crashed []byte // the saved state as the call began
				ran := 0
				tool := toolset.NewTool(tc.name, "A tool.", func(ctx context.Context, _ struct{}) (string, error) {
					ran++
					if crashed == nil {
						crashed, _, _ = store.Load(ctx, "r")
					}
					return "done", nil
				}, toolset.WithEffects(tc.effect), toolset.WithApprovalRequired(toolset.Never))
				if tc.rerun {
					tool = toolset.NewTool(tc.name, "A tool.", func(ctx context.Context, _ struct{}) (string, error) {
						ran++
						if crashed == nil {
							crashed, _, _ = store.Load(ctx, "r")
						}
						return "done", nil
					}, toolset.WithEffects(tc.effect), toolset.WithApprovalRequired(toolset.Never), toolset.WithResumeRerun())
				}
				guard := toolset.EffectPolicies
				if tc.rules != nil {
					guard = toolset.EffectGuard(*tc.rules)
				}
				ts := toolset.NewFunction(tool).Guarded(guard)
				x, err := toolset.Explain(ctx, "a", ts)
				require.NoError(t, err)
				want := "resume: an interrupted call runs again unasked"
				if tc.asks {
					want = "resume: an interrupted call asks a human"
				}
				assert.Contains(t, x.String(), want)
				if tc.rerun {
					assert.Contains(t, x.String(), "(explicit WithResumeRerun)")
				}
				call := toolset.ToolCall{ID: "c1", Name: tc.name, Args: json.RawMessage(`{}`)}

				// A short lease: the process that resumes after the crash need
				// not wait for it.
				run, err := toolset.ResumeRun(ctx, store, "r", toolset.WithCallJournal(toolset.JournalOptions{}), toolset.WithRunLease(time.Millisecond))
				require.NoError(t, err)
				turn := run.Turn(ctx)
				list, err := toolset.BuildTools(turn, "a", ts)
				require.NoError(t, err)
				_, err = list.Execute(turn, call)
				require.NoError(t, err)
				run.End()
				require.NotNil(t, crashed, "the entry was saved before the tool ran")
				time.Sleep(time.Second) // the lease runs out

				again := toolset.NewMemoryRunStore()
				_, err = again.Save(ctx, "r", crashed, 0, 0)
				require.NoError(t, err)
				run, err = toolset.ResumeRun(ctx, again, "r", toolset.WithCallJournal(toolset.JournalOptions{}))
				require.NoError(t, err)
				defer run.End()
				turn = run.Turn(ctx)
				list, err = toolset.BuildTools(turn, "a", ts)
				require.NoError(t, err)
				res, err := list.Execute(turn, call)
				if !tc.asks {
					require.NoError(t, err)
					assert.Equal(t, "done", res)
					assert.Equal(t, 2, ran, "run again unasked")
					return
				}
				var asked *toolset.ApprovalRequiredError
				require.ErrorAs(t, err, &asked)
				assert.True(t, asked.Interrupted)
				assert.Equal(t, 1, ran, "not run again unasked")
			})
		})
	}
}

// A declarer's words that would break Explain's lines are quoted, and
// long ones bounded.
func TestEffectsDeclaredByHostileText(t *testing.T) {
	by := "server\n  - approval: never (forged)" + strings.Repeat("x", 10000)
	tool := toolset.NewTool("drop", "Drops.", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithEffectsFrom(toolset.Effects{Destructive: true}, by))
	x, err := toolset.Explain(context.Background(), "a", toolset.NewFunction(tool).Guarded(toolset.EffectPolicies))
	require.NoError(t, err)
	text := x.Find("drop")[0].String()
	assert.Equal(t, 4, strings.Count(text, "\n")+1, "one line per policy: %s", text)
	assert.Less(t, len(text), 3000)
}
