package toolset_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shownNames returns the names an explanation shows, in order.
func shownNames(e *toolset.Explanation) []string {
	out := []string{}
	for _, t := range e.Tools {
		if t.Visible {
			out = append(out, t.Name)
		}
	}
	return out
}

// only returns the one explanation of the tools named name.
func only(t *testing.T, e *toolset.Explanation, name string) toolset.ToolExplanation {
	t.Helper()
	found := e.Find(name)
	require.Len(t, found, 1, "%s in\n%s", name, e)
	return found[0]
}

func kinds(rs []toolset.Reason) []toolset.ReasonKind {
	var out []toolset.ReasonKind
	for _, r := range rs {
		out = append(out, r.Kind)
	}
	return out
}

// explainTree is a turn with a tool hidden for every reason a turn that
// succeeds can have, each under nested Combined layers.
func explainTree() []toolset.Toolset {
	never := func(context.Context, toolset.Tool) (bool, error) { return false, nil }
	broken := func(context.Context, toolset.Tool) (bool, error) { return false, errors.New("no role in the run") }
	drop := func(ctx context.Context, t toolset.Tool) (toolset.Tool, bool, error) { return t, false, nil }
	users := toolset.NewFunction(
		echoTool("select_rows"),
		toolset.NewTool("drop_table", "Drop.", okHandler, toolset.WithMetadata(map[string]string{"audience": "admin"})),
	).WithLabel("users")
	misc := toolset.NewFunction(
		toolset.NewTool("gamma", "Off.", okHandler, toolset.WithEnabled(never)),
		toolset.NewTool("beta", "Broken.", okHandler, toolset.WithEnabled(broken)),
		toolset.NewTool("delta", "Dropped.", okHandler, toolset.WithPrepare(drop)),
		toolset.NewTool("refund", "Deferred.", okHandler, toolset.WithDeferred()),
		echoTool("alpha"),
	)
	omit := toolset.NewPrepared(toolset.NewFunction(echoTools("omit", "kept", "hidden_below")...).Filtered(
		func(_ context.Context, t toolset.Tool) (bool, error) { return t.Name != "hidden_below", nil }),
		func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			var out []toolset.Tool
			for _, t := range tools {
				if t.Name != "omit" {
					out = append(out, t)
				}
			}
			return out, nil
		})
	inner := toolset.NewCombined(
		users.Prefixed("db").Filtered(adminsOnly),
		toolset.NewCombined(misc.Renamed(map[string]string{"alpha": "first"}).Prefixed("x")),
		omit,
	)
	flaky := toolset.NewFunction(echoTool("steady"), echoTool("query")).Filtered(broken).Prefixed("f")
	return []toolset.Toolset{
		inner,
		toolset.Wrapper{Wrapped: toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) { return flaky, nil })},
		echoTool("solo"),
		toolset.NewTool("solo", "The later one.", okHandler),
	}
}

func TestExplainEveryHiddenToolThroughNestedCombined(t *testing.T) {
	ctx := withRole(t, "guest")
	entries := explainTree()
	e, err := toolset.Explain(ctx, "a", entries...)
	require.NoError(t, err)
	require.NoError(t, e.Err)

	tools, err := toolset.BuildTools(ctx, "a", entries...)
	require.NoError(t, err, "explaining does not build the turn")
	assert.Equal(t, tools.Names(), shownNames(e), "the explanation shows what the turn shows")
	assert.Equal(t, []string{"db_select_rows", "x_first", "kept", "solo"}, shownNames(e))

	cases := []struct {
		name, path string
		kind       toolset.ReasonKind
		at, detail string
	}{
		{"db_drop_table", `Combined#0/Filtered#0/Prefixed "db"/Function "users"`, toolset.ReasonFiltered, "Combined#0/Filtered#0", ""},
		{"x_gamma", `Combined#0/Combined#1/Prefixed#0 "x"/Renamed/Function`, toolset.ReasonDisabled, `Combined#0/Combined#1/Prefixed#0 "x"/Renamed/Function`, ""},
		{"x_beta", `Combined#0/Combined#1/Prefixed#0 "x"/Renamed/Function`, toolset.ReasonDisabled, `Combined#0/Combined#1/Prefixed#0 "x"/Renamed/Function`, "predicate failed: no role in the run"},
		{"x_delta", `Combined#0/Combined#1/Prefixed#0 "x"/Renamed/Function`, toolset.ReasonDroppedByPrepare, `Combined#0/Combined#1/Prefixed#0 "x"/Renamed/Function`, ""},
		{"x_refund", `Combined#0/Combined#1/Prefixed#0 "x"/Renamed/Function`, toolset.ReasonNotRevealed, "", ""},
		{"omit", `Combined#0/Prepared#2/Filtered/Function`, toolset.ReasonDroppedByPrepared, "Combined#0/Prepared#2", ""},
		{"hidden_below", `Combined#0/Prepared#2/Filtered/Function`, toolset.ReasonFiltered, "Combined#0/Prepared#2/Filtered", ""},
		{"f_steady", `Wrapper#1/Dynamic/Prefixed "f"/Filtered/Function`, toolset.ReasonFiltered, `Wrapper#1/Dynamic/Prefixed "f"/Filtered`, "predicate failed: no role in the run"},
		{"solo", `Tool#2 "solo"`, toolset.ReasonReplaced, "", "a later standalone tool of the same name replaced it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got toolset.ToolExplanation
			for _, x := range e.Find(c.name) {
				if !x.Visible {
					got = x
				}
			}
			require.Equal(t, c.name, got.Name, "%s", e)
			assert.Equal(t, c.path, got.Path)
			require.Len(t, got.Reasons, 1)
			assert.Equal(t, toolset.Reason{Kind: c.kind, Path: c.at, Detail: c.detail}, got.Reasons[0])
		})
	}

	solo := e.Find("solo")
	require.Len(t, solo, 2)
	assert.True(t, solo[0].Visible)
	assert.Equal(t, `Tool#3 "solo"`, solo[0].Path, "the later standalone tool, at the earlier one's position")

	first := only(t, e, "x_first")
	assert.True(t, first.Visible)
	assert.Empty(t, first.Reasons)
	assert.Equal(t, "alpha", first.Original)
	assert.Equal(t, []toolset.Rename{
		{From: "alpha", To: "first", By: `Combined#0/Combined#1/Prefixed#0 "x"/Renamed`},
		{From: "first", To: "x_first", By: `Combined#0/Combined#1/Prefixed#0 "x"`},
	}, first.Renames)
	assert.Equal(t, []toolset.ToolExplanation{first}, e.Find("alpha"), "found by its original name")
	assert.Equal(t, []toolset.ToolExplanation{first}, e.Find("first"), "and by a name between")

	text := e.String()
	assert.Contains(t, text, `agent "a": 4 of 14 tools shown`)
	assert.Contains(t, text, "x_first: shown, from Combined#0/Combined#1/Prefixed#0 \"x\"/Renamed/Function\n"+
		"  - was \"alpha\", renamed at Combined#0/Combined#1/Prefixed#0 \"x\"/Renamed\n"+
		"  - was \"first\", prefixed at Combined#0/Combined#1/Prefixed#0 \"x\"\n")
	assert.Contains(t, text, "x_beta: hidden, from Combined#0/Combined#1/Prefixed#0 \"x\"/Renamed/Function\n"+
		"  - was \"beta\", prefixed at Combined#0/Combined#1/Prefixed#0 \"x\"\n"+
		"  - disabled by its enabled predicate at Combined#0/Combined#1/Prefixed#0 \"x\"/Renamed/Function: predicate failed: no role in the run\n")
	assert.Contains(t, text, "x_refund: hidden, from Combined#0/Combined#1/Prefixed#0 \"x\"/Renamed/Function\n"+
		"  - was \"refund\", prefixed at Combined#0/Combined#1/Prefixed#0 \"x\"\n"+
		"  - deferred, not revealed by a tool search of this run")

	// The admin's turn of the same toolsets shows the admin's tool.
	admin := withRole(t, "admin")
	e, err = toolset.Explain(admin, "a", entries...)
	require.NoError(t, err)
	drop := only(t, e, "db_drop_table")
	assert.True(t, drop.Visible)
	assert.Empty(t, drop.Reasons)
}

func TestExplainRevealedDeferredTool(t *testing.T) {
	catalog := deferredCatalog().Prefixed("billing")
	search := toolset.NewToolSearch(catalog)
	ctx := newRun(t, "r")
	e, err := toolset.Explain(ctx, "a", toolset.NewCombined(catalog), search)
	require.NoError(t, err)
	inv := only(t, e, "billing_create_invoice")
	assert.False(t, inv.Visible)
	assert.Equal(t, []toolset.ReasonKind{toolset.ReasonNotRevealed}, kinds(inv.Reasons))

	tools, err := toolset.BuildTools(ctx, "a", toolset.NewCombined(catalog), search)
	require.NoError(t, err)
	again, err := toolset.Explain(ctx, "a", toolset.NewCombined(catalog), search)
	require.NoError(t, err, "a turn that built its tools can still be explained")
	assert.Equal(t, tools.Names(), shownNames(again))
	_, err = call(t, ctx, tools, "tool_search", `{"query":"invoice","top_k":1}`)
	require.NoError(t, err)

	e, err = toolset.Explain(nextTurn(ctx), "a", toolset.NewCombined(catalog), search)
	require.NoError(t, err)
	inv = only(t, e, "billing_create_invoice")
	assert.True(t, inv.Visible, "revealed by the search")
	assert.Empty(t, inv.Reasons)
}

func TestExplainSpentBudget(t *testing.T) {
	flaky := toolset.NewTool("flaky", "Fails.", func(context.Context, struct{}) (string, error) {
		return "", toolset.NewModelError("no")
	}, toolset.WithMaxFailures(1))
	entries := []toolset.Toolset{toolset.NewCombined(toolset.NewFunction(flaky, echoTool("steady")).Prefixed("p"))}
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprint("stable=", stable), func(t *testing.T) {
			var opts []toolset.RunOption
			if stable {
				opts = append(opts, toolset.WithStableToolList())
			}
			run := testRun(t, "r", opts...)
			ctx := run.Turn(context.Background())
			tools, err := toolset.BuildTools(ctx, "a", entries...)
			require.NoError(t, err)
			_, err = call(t, ctx, tools, "p_flaky", `{}`)
			require.Error(t, err)

			ctx = run.Turn(context.Background())
			e, err := toolset.Explain(ctx, "a", entries...)
			require.NoError(t, err)
			got := only(t, e, "p_flaky")
			assert.Equal(t, stable, got.Visible)
			assert.Equal(t, []toolset.ReasonKind{toolset.ReasonBudgetSpent}, kinds(got.Reasons))
			assert.Equal(t, `Combined#0/Prefixed#0 "p"/Function`, got.Path)
			if stable {
				assert.Contains(t, got.Reasons[0].Detail, "marked unavailable")
			}
			tools, err = toolset.BuildTools(ctx, "a", entries...)
			require.NoError(t, err)
			assert.Equal(t, tools.Names(), shownNames(e))
		})
	}
}

func TestExplainTurnThatFails(t *testing.T) {
	const unset = "TOOLSET_EXPLAIN_TEST_UNSET"
	t.Setenv(unset, "")
	needsEnv := toolset.NewTool("mail", "Mail.", okHandler, toolset.WithRequiredEnv(unset))
	hiddenEnv := toolset.NewTool("hidden_mail", "Hidden.", okHandler, toolset.WithRequiredEnv(unset),
		toolset.WithEnabled(func(context.Context, toolset.Tool) (bool, error) { return false, nil }))
	ctx := newRun(t, "r")

	e, err := toolset.Explain(ctx, "a", toolset.NewCombined(toolset.NewFunction(needsEnv, hiddenEnv)))
	require.NoError(t, err)
	var envErr *toolset.EnvError
	require.ErrorAs(t, e.Err, &envErr)
	_, buildErr := toolset.BuildTools(ctx, "a", toolset.NewCombined(toolset.NewFunction(needsEnv, hiddenEnv)))
	assert.Equal(t, buildErr.Error(), e.Err.Error(), "the error BuildTools fails with")
	mail := only(t, e, "mail")
	assert.Equal(t, []toolset.Reason{{Kind: toolset.ReasonMissingEnv, Detail: unset}}, mail.Reasons)
	assert.Equal(t, []toolset.ReasonKind{toolset.ReasonDisabled}, kinds(only(t, e, "hidden_mail").Reasons), "a hidden tool needs no environment")

	shared := toolset.NewFunction(echoTool("query"))
	bad := toolset.NewFunction(echoTool("bad name"))
	clash := toolset.NewFunction(echoTools("a", "b")...).Renamed(map[string]string{"a": "b"})
	e, err = toolset.Explain(ctx, "a",
		toolset.NewCombined(shared.Prefixed("db"), toolset.NewCombined(shared)),
		shared, bad, toolset.NewCombined(clash))
	require.NoError(t, err, "conflicts are reasons, not errors of Explain")
	var nce *toolset.NameConflictError
	require.ErrorAs(t, e.Err, &nce)
	var query []toolset.ToolExplanation
	for _, x := range e.Find("query") {
		if x.Name == "query" {
			query = append(query, x)
		}
	}
	require.Len(t, query, 2)
	assert.Equal(t, toolset.Reason{Kind: toolset.ReasonNameConflict, Detail: "also shown by Function#1"}, query[0].Reasons[0])
	assert.Equal(t, "Combined#0/Combined#1/Function#0", query[0].Path)
	assert.Equal(t, toolset.Reason{Kind: toolset.ReasonNameConflict, Detail: "also shown by Combined#0/Combined#1/Function#0"}, query[1].Reasons[0])
	assert.Equal(t, []toolset.Reason{{Kind: toolset.ReasonInvalidName, Detail: `character ' ' not allowed (only letters, digits, '_' and '-')`}},
		only(t, e, "bad name").Reasons)
	renamed := e.Find("b")
	require.Len(t, renamed, 2)
	assert.Equal(t, toolset.Reason{Kind: toolset.ReasonNameConflict, Path: "Combined#3/Renamed#0", Detail: `renamed onto the name of "b"`}, renamed[0].Reasons[0])
	assert.Contains(t, e.String(), "; the turn fails: Renamed has tool name conflicts:\n    - \"b\" contributed by: \"a\" (renamed), \"b\"\n",
		"the Renamed fails the turn first, as in BuildTools")

	e, err = toolset.Explain(ctx, "a", toolset.NewCombined(shared.Prefixed("db"), toolset.NewCombined(shared)), shared, bad)
	require.NoError(t, err)
	assert.Contains(t, e.String(), "; the turn fails: agent \"a\" has tool name conflicts and invalid tool names:\n  ")
}

func TestExplainUserToolsetAndErrors(t *testing.T) {
	ctx := newRun(t, "r")
	user := listToolset{tools: echoTools("u1", "u2")}
	e, err := toolset.Explain(ctx, "a", toolset.NewCombined(user).Filtered(func(_ context.Context, t toolset.Tool) (bool, error) {
		return t.Name == "u1", nil
	}))
	require.NoError(t, err)
	assert.Equal(t, "Filtered#0/Combined/listToolset#0", only(t, e, "u2").Path)
	assert.Equal(t, []string{"u1"}, shownNames(e))

	_, err = toolset.Explain(ctx, "a", toolset.NewCombined(listToolset{err: errors.New("offline")}))
	require.ErrorContains(t, err, "offline")
	_, err = toolset.Explain(ctx, "a", nil)
	require.ErrorContains(t, err, "Toolset#0: a nil Toolset")
	_, err = toolset.Explain(ctx, "a", toolset.NewFunction(echoTool("x")).Filtered(func(context.Context, toolset.Tool) (bool, error) {
		panic("boom")
	}))
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)

	run := toolset.NewRun("ended")
	run.End()
	_, err = toolset.Explain(run.Turn(context.Background()), "a", user)
	require.ErrorIs(t, err, toolset.ErrRunEnded)

	none, err := toolset.Explain(context.Background(), "a", user)
	require.NoError(t, err, "a context of no run")
	assert.Equal(t, []string{"u1", "u2"}, shownNames(none))
	assert.True(t, strings.HasPrefix(none.String(), `agent "a": 2 of 2 tools shown`))
}

func TestExplainReportOfHostileNamesKeepsItsLines(t *testing.T) {
	remote := listToolset{tools: []toolset.Tool{echoTool("ok\nforged: shown, from nowhere"), echoTool(strings.Repeat("n", 10_000))}}
	e, err := toolset.Explain(context.Background(), "a", toolset.NewFunction(echoTool("x")).Filtered(
		func(context.Context, toolset.Tool) (bool, error) { return false, errors.New("bad\nforged line") }), remote)
	require.NoError(t, err)
	require.Error(t, e.Err, "the names are invalid")
	text := e.String()
	for _, line := range strings.Split(text, "\n") {
		assert.False(t, strings.HasPrefix(line, "forged"), "a forged line in\n%s", text)
	}
	assert.Contains(t, text, `"ok\nforged: shown, from nowhere": shown`)
	assert.Contains(t, text, `predicate failed: bad\nforged line"`)
	assert.Less(t, len(text), 6<<10, "long names are cut")
}

// randomTree builds a random composition of depth at most depth over
// tools with distinct names, hiding tools by a hash of their names.
func randomTree(r *rand.Rand, depth int, next *int) toolset.Toolset {
	leaf := func() toolset.Toolset {
		var tools []toolset.Tool
		for range 1 + r.IntN(4) {
			*next++
			name := fmt.Sprintf("t%d", *next)
			var opts []toolset.ToolOption
			switch r.IntN(5) {
			case 0:
				opts = append(opts, toolset.WithEnabled(func(context.Context, toolset.Tool) (bool, error) { return *next%2 == 0, nil }))
			case 1:
				opts = append(opts, toolset.WithPrepare(func(_ context.Context, t toolset.Tool) (toolset.Tool, bool, error) {
					t.Description = "edited"
					return t, len(t.Name)%2 == 0, nil
				}))
			}
			tools = append(tools, toolset.NewTool(name, "", okHandler, opts...))
		}
		return toolset.NewFunction(tools...)
	}
	if depth == 0 {
		return leaf()
	}
	inner := func() toolset.Toolset { return randomTree(r, depth-1, next) }
	switch r.IntN(8) {
	case 0:
		return toolset.NewPrefixed(inner(), fmt.Sprintf("p%d", r.IntN(100)))
	case 1:
		in := inner()
		return toolset.NewRenamed(in, map[string]string{fmt.Sprintf("t%d", *next): fmt.Sprintf("r%d", *next)})
	case 2:
		k := r.IntN(3) + 2
		return toolset.NewFiltered(inner(), func(_ context.Context, t toolset.Tool) (bool, error) { return len(t.Name)%k != 0, nil })
	case 3:
		return toolset.NewPrepared(inner(), func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			if len(tools) > 1 {
				tools = tools[1:]
			}
			return tools, nil
		})
	case 4:
		in := inner()
		return toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) { return in, nil })
	case 5:
		return toolset.Wrapper{Wrapped: inner()}
	default:
		var children []toolset.Toolset
		for range 1 + r.IntN(3) {
			children = append(children, inner())
		}
		return toolset.NewCombined(children...)
	}
}

func TestExplainShowsWhatBuildToolsShows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	built, hidden := 0, 0
	defer func() { t.Logf("%d of 300 turns built, %d tools hidden", built, hidden) }()
	for i := range 300 {
		next := 0
		var entries []toolset.Toolset
		for range 1 + r.IntN(3) {
			entries = append(entries, randomTree(r, 4, &next))
		}
		ctx := newRun(t, fmt.Sprint("r", i))
		e, err := toolset.Explain(ctx, "a", entries...)
		require.NoError(t, err)
		tools, buildErr := toolset.BuildTools(ctx, "a", entries...)
		if buildErr != nil {
			require.Error(t, e.Err, "tree %d: BuildTools failed with %v", i, buildErr)
			continue
		}
		require.NoError(t, e.Err, "tree %d", i)
		require.Equal(t, tools.Names(), shownNames(e), "tree %d:\n%s", i, e)
		built++
		for _, x := range e.Tools {
			if !x.Visible {
				hidden++
				require.NotEmpty(t, x.Reasons, "tree %d: %s is hidden for no reason:\n%s", i, x.Name, e)
			}
			if x.Name != x.Original {
				require.NotEmpty(t, x.Renames, "tree %d: %s", i, x.Name)
				require.Equal(t, x.Original, x.Renames[0].From)
				require.Equal(t, x.Name, x.Renames[len(x.Renames)-1].To)
			}
		}
	}
}

func TestExplainRenameClashHiddenAboveStillFailsTheTurn(t *testing.T) {
	clash := toolset.NewFunction(echoTools("a", "b")...).Renamed(map[string]string{"a": "b"}).
		Filtered(func(_ context.Context, t toolset.Tool) (bool, error) { return t.Description != "The a tool.", nil })
	ctx := newRun(t, "r")
	_, buildErr := toolset.BuildTools(ctx, "agent", toolset.NewCombined(clash))
	var want *toolset.NameConflictError
	require.ErrorAs(t, buildErr, &want, "the Renamed fails before the filter above it hides one")

	e, err := toolset.Explain(ctx, "agent", toolset.NewCombined(clash))
	require.NoError(t, err)
	var got *toolset.NameConflictError
	require.ErrorAs(t, e.Err, &got)
	assert.Equal(t, want.Conflicts, got.Conflicts)
	assert.Equal(t, []string{"b"}, shownNames(e))
}
