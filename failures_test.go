package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run made once and turned each step keeps its failure budget across
// its turns: the natural loop spends it.
func TestMaxFailuresAcrossTurns(t *testing.T) {
	var runs atomic.Int64
	flaky := toolset.NewTool("flaky", "Sometimes fails.", func(_ context.Context, in lookupArgs) (string, error) {
		runs.Add(1)
		if in.ID == 0 {
			return "", toolset.NewModelError("id must not be zero")
		}
		return "ok", nil
	}, toolset.WithMaxFailures(2))
	f := toolset.NewFunction(flaky, echoTool("steady"))
	entries := []toolset.Toolset{f.Prefixed("p"), f.Renamed(map[string]string{"flaky": "renamed", "steady": "steady2"})}
	loop := func(run *toolset.RunContext) func() (context.Context, *toolset.ToolList) {
		return func() (context.Context, *toolset.ToolList) {
			ctx := run.Turn(context.Background())
			tools, err := toolset.BuildTools(ctx, "a", entries...)
			require.NoError(t, err)
			return ctx, tools
		}
	}
	turn := loop(testRun(t, "r"))

	c0, tools := turn()
	assert.Equal(t, []string{"p_flaky", "p_steady", "renamed", "steady2"}, tools.Names())
	for _, name := range []string{"p_flaky", "renamed"} { // two failures, one step
		_, err := call(t, c0, tools, name, `{"id":0}`)
		msg, visible := toolset.ErrorText(err)
		require.True(t, visible)
		assert.Equal(t, "id must not be zero", msg)
	}
	c1, tools := turn()
	assert.Equal(t, []string{"p_flaky", "p_steady", "renamed", "steady2"}, tools.Names(), "one failed step is within a budget of two")
	_, err := call(t, c1, tools, "renamed", `{"bad":true}`) // argument errors count too
	require.Error(t, err)

	_, tools = turn()
	assert.Equal(t, []string{"p_steady", "steady2"}, tools.Names(), "spent after failing in two steps: left out under every name")
	_, tools = turn()
	assert.Equal(t, []string{"p_steady", "steady2"}, tools.Names(), "and stays spent")

	// A stable list keeps it, marked unavailable.
	stable := loop(testRun(t, "stable", toolset.WithStableToolList()))
	for range 2 {
		ctx, tools := stable()
		_, err := call(t, ctx, tools, "p_flaky", `{"id":0}`)
		require.Error(t, err)
	}
	c3, tools := stable()
	assert.Equal(t, []string{"p_flaky", "p_steady", "renamed", "steady2"}, tools.Names(), "a stable list keeps it")
	tool, _ := tools.Lookup("renamed")
	assert.Equal(t, "[UNAVAILABLE] Sometimes fails.", tool.Description)
	before := runs.Load()
	_, err = call(t, c3, tools, "p_flaky", `{"id":1}`)
	var ue *toolset.UnavailableToolError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, `tool "p_flaky" is not available: it has failed in 2 steps, its budget for this run; do without it`, ue.ModelText())
	assert.Equal(t, before, runs.Load())

	// Another run has its own budget.
	other, err := toolset.BuildTools(newRun(t, "r2"), "a", entries...)
	require.NoError(t, err)
	assert.Len(t, other.Names(), 4)
}

// The old loop, which made a RunContext per turn with the same ID, never
// spent a budget. The same loop now fails at its second turn, saying why.
func TestFreshRunPerTurnIsRefused(t *testing.T) {
	flaky := toolset.NewTool("flaky", "", func(context.Context, struct{}) (string, error) {
		return "", toolset.NewModelError("no")
	}, toolset.WithMaxFailures(1))
	first := toolset.NewRun("req-1")
	defer first.End()
	ctx := first.Turn(context.Background())
	tools, err := toolset.BuildTools(ctx, "a", flaky)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "flaky"})
	require.Error(t, err)

	second := toolset.NewRun("req-1") // the next turn, made wrongly
	defer second.End()
	var conflict *toolset.RunConflictError
	require.ErrorAs(t, second.Err(), &conflict)
	assert.Equal(t, "req-1", conflict.ID)
	_, err = toolset.BuildTools(second.Turn(context.Background()), "a", flaky)
	require.ErrorAs(t, err, &conflict)
	assert.EqualError(t, err, `toolset: run "req-1" is already live: make one RunContext per run with NewRun, derive each turn's context with Turn, and End a run when it is over`)
	_, err = tools.Execute(toolset.NewContext(context.Background(), second), toolset.ToolCall{Name: "flaky"})
	require.ErrorAs(t, err, &conflict, "calls under it fail too")
	second.End() // does not end the live run of that ID
	require.NoError(t, first.Err())
}

func TestMaxFailuresBelowOneIsAnError(t *testing.T) {
	for _, n := range []int{0, -1} {
		tool := toolset.NewTool("t", "", okHandler, toolset.WithMaxFailures(n))
		require.ErrorContains(t, tool.Err(), "the budget must be at least 1", "n=%d", n)
	}
}

// A run's failure counts move with it: a step's failures count once,
// and the next process spends what is left of the budget.
func TestFailureBudgetMovesWithItsRun(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	failing := func() toolset.Tool {
		return toolset.NewTool("lookup", "Look up.", func(context.Context, lookupArgs) (string, error) {
			return "", toolset.NewModelError("down")
		}, toolset.WithMaxFailures(2))
	}
	run, err := toolset.ResumeRun(ctx, store, "budget")
	require.NoError(t, err)
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", failing())
	require.NoError(t, err)
	for _, id := range []string{"c1", "c2"} {
		_, err = execute(t, turn, tools, id, "lookup", `{"id":1}`)
		require.Error(t, err)
	}
	require.NoError(t, run.Suspend(ctx))
	data, _, err := store.Load(ctx, "budget")
	require.NoError(t, err)
	var st struct {
		Failures []map[string]any `json:"failures"`
	}
	require.NoError(t, json.Unmarshal(data, &st))
	require.Len(t, st.Failures, 1)
	assert.Equal(t, float64(1), st.Failures[0]["steps"], "two failures of one step count once")

	run, err = toolset.ResumeRun(ctx, store, "budget")
	require.NoError(t, err)
	defer run.End()
	later := failing() // a new process: a new tool
	turn = run.Turn(ctx)
	tools, err = toolset.BuildTools(turn, "a", later)
	require.NoError(t, err)
	require.Equal(t, []string{"lookup"}, tools.Names(), "one failing step of two: not spent yet")
	_, err = execute(t, turn, tools, "c3", "lookup", `{"id":1}`)
	require.Error(t, err)
	tools, err = toolset.BuildTools(run.Turn(ctx), "a", later)
	require.NoError(t, err)
	assert.Empty(t, tools.Names(), "the second failing step, in the next process, spends the budget")
}

// Saved counts that no run could have made are refused: a count below
// one, a last failing step after the run's step or before the first, a
// tool counted twice.
func TestResumeRefusesImpossibleFailureCounts(t *testing.T) {
	ctx := context.Background()
	for name, failures := range map[string]string{
		"no steps":       `[{"tool":"t","schema":"s","steps":0,"last_step":0}]`,
		"a later step":   `[{"tool":"t","schema":"s","steps":1,"last_step":4}]`,
		"before the run": `[{"tool":"t","schema":"s","steps":1,"last_step":-2}]`,
		"counted twice":  `[{"tool":"t","schema":"s","steps":1,"last_step":0},{"tool":"t","schema":"s","steps":2,"last_step":1}]`,
	} {
		store := toolset.NewMemoryRunStore()
		_, err := store.Save(ctx, "r", []byte(`{"version":1,"id":"r","step":3,"failures":`+failures+`}`), 0, 0)
		require.NoError(t, err)
		run, err := toolset.ResumeRun(ctx, store, "r")
		require.Error(t, err, name)
		assert.Nil(t, run, name)
		assert.Contains(t, err.Error(), "failures[", name)
	}
}

// remote makes the tool "search" as a client of a remote server makes it
// at each announcement: a new value, with the description of this
// announcement, given the same options.
func remote(description string, opts ...toolset.ToolOption) toolset.Tool {
	return toolset.NewRawTool("search", description, nil, func(context.Context, json.RawMessage) (any, error) {
		return nil, toolset.NewModelError("the index is down")
	}, opts...)
}

// A tool made again with the same name and origin (a server announcing its
// tools anew after a change) keeps the failure budget of the one before:
// the budget binds the tool, not each announcement of it. A tool without
// an origin made anew starts afresh, as before; copies share a budget.
func TestFailureBudgetFollowsTheOrigin(t *testing.T) {
	ctx := context.Background()
	run := testRun(t, "r")
	opts := []toolset.ToolOption{toolset.WithOrigin("mcp:web"), toolset.WithMaxFailures(2)}
	for i, desc := range []string{"Search.", "Search the web."} {
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "a", remote(desc, opts...))
		require.NoError(t, err)
		require.Equal(t, []string{"search"}, tools.Names(), "announcement %d", i)
		_, err = call(t, turn, tools, "search", `{}`)
		require.Error(t, err)
	}
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", remote("Search it all.", opts...))
	require.NoError(t, err)
	assert.Empty(t, tools.Names(), "failed in two steps under two announcements: spent")
	_, err = remote("x", opts...).Execute(turn, toolset.ToolCall{Name: "search", Args: json.RawMessage(`{}`)})
	var ue *toolset.UnavailableToolError
	require.ErrorAs(t, err, &ue, "a call of the next announcement is refused")

	other, err := toolset.BuildTools(run.Turn(ctx), "a", remote("Search.", toolset.WithOrigin("mcp:other"), toolset.WithMaxFailures(2)))
	require.NoError(t, err)
	assert.Equal(t, []string{"search"}, other.Names(), "another origin is another tool")

	fresh := testRun(t, "fresh")
	for range 3 {
		turn := fresh.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "a", remote("Search.", toolset.WithMaxFailures(2)))
		require.NoError(t, err)
		require.Equal(t, []string{"search"}, tools.Names(), "a tool with no origin made anew starts afresh")
		_, err = call(t, turn, tools, "search", `{}`)
		require.Error(t, err)
	}
}

// A run whose tool is made anew each turn (a Dynamic toolset) and fails in
// two of them saves a state the next process resumes: the saved state
// counts the tool once, by its name. With an origin, the two failures are
// one budget, which the next process finishes spending.
func TestRunOfAToolMadeEachTurnResumes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		opts  []toolset.ToolOption
		steps float64
	}{
		{"no origin", []toolset.ToolOption{toolset.WithMaxFailures(3)}, 1},
		{"origin", []toolset.ToolOption{toolset.WithOrigin("pkg:a"), toolset.WithMaxFailures(3)}, 2},
	} {
		store := toolset.NewMemoryRunStore()
		turns := 0
		dyn := toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) {
			turns++ // a new tool value each turn, of one name and schema
			return remote("Search.", append([]toolset.ToolOption{toolset.WithMetadata(map[string]string{"turn": string(rune('0' + turns))})}, tc.opts...)...), nil
		})
		run, err := toolset.ResumeRun(ctx, store, "dyn")
		require.NoError(t, err, tc.name)
		for range 2 {
			turn := run.Turn(ctx)
			tools, err := toolset.BuildTools(turn, "a", dyn)
			require.NoError(t, err, tc.name)
			_, err = execute(t, turn, tools, "c", "search", `{}`)
			require.Error(t, err, tc.name)
		}
		require.NoError(t, run.Suspend(ctx), tc.name)
		data, _, err := store.Load(ctx, "dyn")
		require.NoError(t, err)
		var st struct{ Failures []map[string]any }
		require.NoError(t, json.Unmarshal(data, &st))
		require.Len(t, st.Failures, 1, "%s: %s", tc.name, data)
		assert.Equal(t, tc.steps, st.Failures[0]["steps"], tc.name)

		run, err = toolset.ResumeRun(ctx, store, "dyn")
		require.NoError(t, err, "%s: the saved state resumes", tc.name)
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "a", dyn)
		require.NoError(t, err, tc.name)
		require.Equal(t, []string{"search"}, tools.Names(), tc.name)
		_, err = execute(t, turn, tools, "c", "search", `{}`)
		require.Error(t, err, tc.name)
		tools, err = toolset.BuildTools(run.Turn(ctx), "a", dyn)
		require.NoError(t, err, tc.name)
		if tc.steps == 2 {
			assert.Empty(t, tools.Names(), "%s: the third failing step, in the next process, spends the budget", tc.name)
		}
		run.End()
	}
}

// A budget saved for a tool with an origin resumes for the tool of its
// name and origin whatever its schema: a server that changed the tool's
// schema since has not given it a new budget. The saved entry names the
// origin; another origin's tool of the name does not get it.
func TestSavedBudgetOfAnOriginIgnoresTheSchema(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	run, err := toolset.ResumeRun(ctx, store, "r")
	require.NoError(t, err)
	opts := []toolset.ToolOption{toolset.WithOrigin("mcp:web"), toolset.WithMaxFailures(2)}
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", remote("Search.", opts...))
	require.NoError(t, err)
	_, err = execute(t, turn, tools, "c", "search", `{}`)
	require.Error(t, err)
	require.NoError(t, run.Suspend(ctx))
	saved, _, err := store.Load(ctx, "r")
	require.NoError(t, err)
	var st struct{ Failures []map[string]any }
	require.NoError(t, json.Unmarshal(saved, &st))
	require.Len(t, st.Failures, 1, "%s", saved)
	assert.Equal(t, "mcp:web", st.Failures[0]["origin"])

	changed := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties()}
	changed.Properties.Set("q", &jsonschema.Schema{Type: "string"})
	announced := func(origin string) toolset.Tool {
		return toolset.NewRawTool("search", "Search, now with a query.", changed, func(context.Context, json.RawMessage) (any, error) {
			return nil, toolset.NewModelError("the index is down")
		}, toolset.WithOrigin(origin), toolset.WithMaxFailures(2))
	}
	for origin, spent := range map[string]bool{"mcp:web": true, "mcp:other": false} {
		store := toolset.NewMemoryRunStore()
		_, err := store.Save(ctx, "r", saved, 0, 0)
		require.NoError(t, err)
		run, err := toolset.ResumeRun(ctx, store, "r")
		require.NoError(t, err)
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "a", announced(origin))
		require.NoError(t, err)
		_, err = execute(t, turn, tools, "c", "search", `{}`)
		require.Error(t, err)
		tools, err = toolset.BuildTools(run.Turn(ctx), "a", announced(origin))
		require.NoError(t, err)
		if spent {
			assert.Empty(t, tools.Names(), "%s: the saved failing step and this one spend the budget", origin)
		} else {
			assert.Equal(t, []string{"search"}, tools.Names(), "%s: another origin's budget is not this one's", origin)
		}
		run.End()
	}
}

// A state lists a tool with an origin once under its name and origin; one
// that lists it twice is refused.
func TestResumeRefusesAnOriginCountedTwice(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	_, err := store.Save(ctx, "r", []byte(`{"version":1,"id":"r","step":3,"failures":[`+
		`{"tool":"t","schema":"a","origin":"mcp:web","steps":1,"last_step":0},`+
		`{"tool":"t","schema":"b","origin":"mcp:web","steps":1,"last_step":1}]}`), 0, 0)
	require.NoError(t, err)
	run, err := toolset.ResumeRun(ctx, store, "r")
	require.ErrorContains(t, err, "failures[1]")
	assert.Nil(t, run)
}

// The saved form of budgets is stable: a run in which a tool without an
// origin failed, and one with an origin failed under two announcements,
// saves to the bytes of testdata/runstate_v1_origin.json, and that file
// resumes both budgets, the second for a tool announced with yet another
// schema.
func TestSavedBudgetFormat(t *testing.T) {
	golden := filepath.Join("testdata", "runstate_v1_origin.json")
	ctx := context.Background()
	lookup := func() toolset.Tool {
		return toolset.NewRawTool("lookup", "Look up.", nil, func(context.Context, json.RawMessage) (any, error) {
			return nil, toolset.NewModelError("down")
		}, toolset.WithMaxFailures(2))
	}
	search := func(desc string) toolset.Tool {
		params := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties()}
		params.Properties.Set(desc, &jsonschema.Schema{Type: "string"})
		return toolset.NewRawTool("search", "Search.", params, func(context.Context, json.RawMessage) (any, error) {
			return nil, toolset.NewModelError("the index is down")
		}, toolset.WithOrigin("mcp:web"), toolset.WithMaxFailures(3))
	}
	t.Run("save", func(t *testing.T) {
		store := toolset.NewMemoryRunStore()
		run, err := toolset.ResumeRun(ctx, store, "req-7")
		require.NoError(t, err)
		lk := lookup()
		for _, q := range []string{"q", "query"} {
			turn := run.Turn(ctx)
			tools, err := toolset.BuildTools(turn, "a", lk, search(q))
			require.NoError(t, err)
			for _, name := range []string{"lookup", "search"} {
				_, err = execute(t, turn, tools, "c", name, `{}`)
				require.Error(t, err)
			}
		}
		require.NoError(t, run.Suspend(ctx))
		data, _, err := store.Load(ctx, "req-7")
		require.NoError(t, err)
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, data, "", "  "))
		pretty.WriteByte('\n')
		if *updateGolden {
			require.NoError(t, os.WriteFile(golden, pretty.Bytes(), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err)
		assert.Equal(t, string(want), pretty.String())
	})
	t.Run("restore", func(t *testing.T) {
		data, err := os.ReadFile(golden)
		require.NoError(t, err)
		store := toolset.NewMemoryRunStore()
		_, err = store.Save(ctx, "req-7", data, 0, 0)
		require.NoError(t, err)
		run, err := toolset.ResumeRun(ctx, store, "req-7")
		require.NoError(t, err)
		defer run.End()
		lk, s := lookup(), search("text")
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "a", lk, s)
		require.NoError(t, err)
		assert.Equal(t, []string{"search"}, tools.Names(), "lookup failed in two steps: spent")
		_, err = execute(t, turn, tools, "c", "search", `{}`)
		require.Error(t, err)
		tools, err = toolset.BuildTools(run.Turn(ctx), "a", lk, s)
		require.NoError(t, err)
		assert.Empty(t, tools.Names(), "search failed in two steps, and a third with another schema: spent")
	})
}

// A tool whose handler says its call waits for approval (a remote server's
// tool that asks its client, say) has not failed: the wait does not spend
// its failure budget, and the approved call runs.
func TestWaitingForApprovalIsNotAFailure(t *testing.T) {
	var approved atomic.Bool
	remote := toolset.NewRawTool("remote", "Asks first.", nil, func(ctx context.Context, _ json.RawMessage) (any, error) {
		if !approved.Load() {
			return nil, &toolset.ApprovalRequiredError{Call: toolset.ToolCall{ID: "c1", Name: "remote"}}
		}
		return "done", nil
	}, toolset.WithMaxFailures(1))
	run := testRun(t, "r")
	for range 3 {
		ctx := run.Turn(context.Background())
		tools, err := toolset.BuildTools(ctx, "a", remote)
		require.NoError(t, err)
		_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "remote", Args: json.RawMessage(`{}`)})
		var ar *toolset.ApprovalRequiredError
		require.ErrorAs(t, err, &ar)
	}
	approved.Store(true)
	ctx := run.Turn(context.Background())
	tools, err := toolset.BuildTools(ctx, "a", remote)
	require.NoError(t, err)
	res, err := tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "remote", Args: json.RawMessage(`{}`)})
	require.NoError(t, err, "three waits spent nothing of a budget of one")
	assert.Equal(t, "done", res)
}
