package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrefixed(t *testing.T) {
	ctx := context.Background()
	base := toolset.NewFunction(echoTools("query", "migrate")...)
	assert.Equal(t, []string{"db_query", "db_migrate"}, names(t, ctx, base.Prefixed("db")))
	assert.Equal(t, []string{"db.query", "db.migrate"}, names(t, ctx, base.Prefixed("db", toolset.WithSeparator("."))))
	assert.Equal(t, []string{"b_a_query", "b_a_migrate"}, names(t, ctx, base.Prefixed("a").Prefixed("b")))

	_, err := base.Prefixed("").GetTools(ctx)
	require.EqualError(t, err, "toolset: Prefixed: empty prefix")

	// A prefixed copy is the same tool: it runs the same code.
	tools, err := toolset.BuildTools(ctx, "a", base.Prefixed("db"))
	require.NoError(t, err)
	got, err := tools.Execute(ctx, toolset.ToolCall{Name: "db_query", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "query", got)
	orig, _ := base.GetTools(ctx)
	clone, _ := tools.Lookup("db_query")
	assert.True(t, clone.Same(orig[0]))
	assert.False(t, clone.Same(orig[1]))
}

func TestRenamed(t *testing.T) {
	ctx := context.Background()
	base := toolset.NewFunction(echoTools("execute_query", "list_tables", "drop")...)
	assert.Equal(t, []string{"sql", "list_tables", "drop"}, names(t, ctx, base.Renamed(map[string]string{"execute_query": "sql", "missing": "x"})))

	t.Run("swap", func(t *testing.T) {
		swapped := base.Renamed(map[string]string{"execute_query": "list_tables", "list_tables": "execute_query"})
		assert.Equal(t, []string{"list_tables", "execute_query", "drop"}, names(t, ctx, swapped))
		tools, err := toolset.BuildTools(ctx, "a", swapped)
		require.NoError(t, err)
		got, err := tools.Execute(ctx, toolset.ToolCall{Name: "list_tables", Args: nil})
		require.NoError(t, err)
		assert.Equal(t, "execute_query", got, "the name follows the map, the code follows the tool")
	})

	t.Run("collision", func(t *testing.T) {
		_, err := base.Renamed(map[string]string{"execute_query": "drop"}).GetTools(ctx)
		require.EqualError(t, err, `toolset: Renamed has tool name conflicts:
  - "drop" contributed by: "execute_query" (renamed), "drop"
hint: rename the tools to different names`)
		_, err = base.Renamed(map[string]string{"execute_query": "x", "list_tables": "x"}).GetTools(ctx)
		require.EqualError(t, err, `toolset: Renamed has tool name conflicts:
  - "x" contributed by: "execute_query" (renamed), "list_tables" (renamed)
hint: rename the tools to different names`)
	})

	t.Run("collision with a hidden tool is fine", func(t *testing.T) {
		hideDrop := base.Filtered(func(_ context.Context, tool toolset.Tool) (bool, error) { return tool.Name != "drop", nil })
		assert.Equal(t, []string{"drop", "list_tables"}, names(t, ctx, hideDrop.Renamed(map[string]string{"execute_query": "drop"})))
	})
}

func TestFilteredPerTurn(t *testing.T) {
	users := toolset.NewFunction(
		echoTool("get_user"),
		toolset.NewTool("delete_user", "Delete a user.", func(context.Context, struct{}) (string, error) { return "deleted", nil },
			toolset.WithMetadata(map[string]string{"audience": "admin"})),
	).Filtered(adminsOnly)

	assert.Equal(t, []string{"get_user", "delete_user"}, names(t, withRole(t, "admin"), users))
	assert.Equal(t, []string{"get_user"}, names(t, withRole(t, "guest"), users))
	assert.Equal(t, []string{"get_user"}, names(t, context.Background(), users), "no run context: no role")

	// A tool hidden this turn cannot be called, even by a model that knows its name.
	guest := withRole(t, "guest")
	tools, err := toolset.BuildTools(guest, "a", users)
	require.NoError(t, err)
	_, err = tools.Execute(guest, toolset.ToolCall{Name: "delete_user", Args: nil})
	var ue *toolset.UnknownToolError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, []string{"get_user"}, ue.Available)

	adminCtx := withRole(t, "admin")
	admin, err := toolset.BuildTools(adminCtx, "a", users)
	require.NoError(t, err)
	got, err := admin.Execute(adminCtx, toolset.ToolCall{Name: "delete_user", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "deleted", got)
}

func TestFilteredFailsClosedAndLogs(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	broken := toolset.NewFunction(echoTools("a", "b")...).Filtered(func(_ context.Context, tool toolset.Tool) (bool, error) {
		if tool.Name == "b" {
			return true, errors.New("policy service unavailable")
		}
		return true, nil
	})
	assert.Equal(t, []string{"a"}, names(t, context.Background(), broken))
	log := buf.String()
	assert.Contains(t, log, "level=ERROR")
	assert.Contains(t, log, "tool=b")
	assert.Contains(t, log, "policy service unavailable")

	_, err := toolset.NewFiltered(toolset.NewFunction(), nil).GetTools(context.Background())
	require.EqualError(t, err, "toolset: Filtered: nil predicate")
}

func TestPrepared(t *testing.T) {
	ctx := context.Background()
	base := toolset.NewFunction(echoTools("a", "b", "c")...)
	edit := base.Prepared(func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
		out := []toolset.Tool{tools[2], tools[0]} // reorder, drop b
		out[0].Description = "edited"
		return out, nil
	})
	tools, err := edit.GetTools(ctx)
	require.NoError(t, err)
	require.Len(t, tools, 2)
	assert.Equal(t, "c", tools[0].Name)
	assert.Equal(t, "edited", tools[0].Description)
	assert.Equal(t, "a", tools[1].Name)
	again, _ := base.GetTools(ctx)
	assert.Equal(t, "The c tool.", again[2].Description, "the edit does not leak into the toolset")

	cases := map[string]struct {
		fn   toolset.PrepareFunc
		want string
	}{
		"add": {func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			return append(tools, echoTool("d")), nil
		}, `result[3] "d" is not one of the tools it was given`},
		"rename": {func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			tools[0].Name = "z"
			return tools, nil
		}, `result[0] "z" is not one of the tools it was given`},
		"impostor": {func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			tools[0] = echoTool("a")
			return tools, nil
		}, `result[0] "a" is a different tool`},
		"twice": {func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			return append(tools, tools[0]), nil
		}, `result lists "a" twice`},
		"error": {func(context.Context, []toolset.Tool) ([]toolset.Tool, error) {
			return nil, errors.New("nope")
		}, "toolset: Prepared: nope"},
		"nil": {nil, "nil prepare function"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := base.Prepared(c.fn).GetTools(ctx)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestPreparedEditedSchemaIsValidated(t *testing.T) {
	ctx := context.Background()
	narrowed := toolset.NewFunction(weatherTool()).Prepared(func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
		var s jsonschemaDoc
		require.NoError(t, json.Unmarshal([]byte(`{"type":"object","properties":{"city":{"type":"string","enum":["Paris"]},"days":{"type":"integer"}},"required":["city","days"],"additionalProperties":false}`), &s.Schema))
		tools[0].Parameters = &s.Schema
		return tools, nil
	})
	tools, err := toolset.BuildTools(ctx, "a", narrowed)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city":"Rome","days":2}`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae, "the schema the model saw is the one enforced")
	assert.Equal(t, `must be one of "Paris"; got "Rome"`, ae.Problems[0].Message)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","days":2}`)})
	require.NoError(t, err)
}

func TestDynamic(t *testing.T) {
	acme := toolset.NewFunction(echoTools("acme_crm")...)
	globex := toolset.NewFunction(echoTools("globex_erp", "globex_hr")...)
	perTenant := toolset.NewDynamic(func(ctx context.Context) (toolset.Toolset, error) {
		switch Tenant.Get(ctx) {
		case "acme":
			return acme, nil
		case "globex":
			return globex, nil
		case "":
			return nil, nil
		}
		return nil, errors.New("unknown tenant")
	})
	tenant := func(name string) context.Context { return newRun(t, "r", toolset.WithValue(Tenant, name)) }
	assert.Equal(t, []string{"acme_crm"}, names(t, tenant("acme"), perTenant))
	assert.Equal(t, []string{"globex_erp", "globex_hr"}, names(t, tenant("globex"), perTenant))
	assert.Equal(t, []string{"x_acme_crm"}, names(t, tenant("acme"), perTenant.Prefixed("x")))
	assert.Empty(t, names(t, tenant(""), perTenant))
	_, err := perTenant.GetTools(tenant("initech"))
	require.EqualError(t, err, "toolset: Dynamic: unknown tenant")
}

func TestUserToolsetComposes(t *testing.T) {
	ctx := context.Background()
	mine := listToolset{tools: echoTools("x", "y")}
	assert.Equal(t, []string{"p_x", "p_y"}, names(t, ctx, toolset.NewPrefixed(mine, "p")))
	_, err := toolset.NewPrefixed(listToolset{err: errors.New("backend down")}, "p").GetTools(ctx)
	require.EqualError(t, err, "backend down")
}

func TestLabels(t *testing.T) {
	f := toolset.NewFunction()
	assert.Equal(t, "Function", toolset.LabelOf(f))
	assert.Equal(t, "Prefixed", toolset.LabelOf(f.Prefixed("x")))
	assert.Equal(t, "weather", toolset.LabelOf(f.WithLabel("weather").Prefixed("x").Filtered(adminsOnly)))
	assert.Equal(t, "listToolset", toolset.LabelOf(listToolset{}))
	assert.Equal(t, "Combined", toolset.LabelOf(toolset.NewCombined()))
	assert.Equal(t, "Tool", toolset.LabelOf(echoTool("t")))
}

func TestInstructions(t *testing.T) {
	ctx := context.Background()
	db := toolset.NewFunction(echoTool("q")).WithInstructions("Use db_q for reads.")
	web := toolset.NewFunction(echoTool("w")).WithInstructions("  Cite your sources.\n")
	quiet := toolset.NewFunction(echoTool("z"))
	combined := toolset.NewCombined(db.Prefixed("db"), quiet, listToolset{}, web.Filtered(adminsOnly))
	got, err := combined.Instructions(ctx)
	require.NoError(t, err)
	assert.Equal(t, "Use db_q for reads.\n\nCite your sources.", got)

	got, err = toolset.Instructions(ctx, combined.Prefixed("x"), db)
	require.NoError(t, err)
	assert.Equal(t, "Use db_q for reads.\n\nCite your sources.\n\nUse db_q for reads.", got)

	// A toolset whose tools are all hidden this turn says nothing about them.
	hideAll := func(context.Context, toolset.Tool) (bool, error) { return false, nil }
	dropAll := func(context.Context, []toolset.Tool) ([]toolset.Tool, error) { return nil, nil }
	got, err = toolset.Instructions(ctx, db.Filtered(hideAll), db.Prepared(dropAll).Prefixed("p"), web)
	require.NoError(t, err)
	assert.Equal(t, "Cite your sources.", got)

	// Dynamic forwards the instructions of the toolset it picks this turn.
	pick := toolset.NewDynamic(func(ctx context.Context) (toolset.Toolset, error) {
		if Role.Get(ctx) == "admin" {
			return db, nil
		}
		return quiet, nil
	})
	got, err = pick.Instructions(withRole(t, "admin"))
	require.NoError(t, err)
	assert.Equal(t, "Use db_q for reads.", got)
	got, err = pick.Instructions(ctx)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestUnknownToolMessage(t *testing.T) {
	var many []toolset.Tool
	for _, n := range strings.Fields("alpha beta gamma delta") {
		many = append(many, echoTool(n))
	}
	tools, err := toolset.BuildTools(context.Background(), "a", toolset.NewFunction(many...))
	require.NoError(t, err)
	_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "gama", Args: nil})
	msg, visible := toolset.ErrorText(err)
	require.True(t, visible)
	assert.Equal(t, `unknown tool "gama"; did you mean gamma? available tools: alpha, beta, delta, gamma`, msg)

	var empty *toolset.ToolList
	_, err = empty.Execute(context.Background(), toolset.ToolCall{Name: "x", Args: nil})
	msg, _ = toolset.ErrorText(err)
	assert.Equal(t, `unknown tool "x": no tools are available in this turn`, msg)
}

func TestUnknownToolMessageCapsLongLists(t *testing.T) {
	var many []toolset.Tool
	for i := range 100 {
		many = append(many, echoTool("tool_"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26))))
	}
	tools, err := toolset.BuildTools(context.Background(), "a", toolset.NewFunction(many...))
	require.NoError(t, err)
	_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "tool_aa_", Args: nil})
	var ue *toolset.UnknownToolError
	require.ErrorAs(t, err, &ue)
	// The error lists what the message shows, not all 100 names: copying
	// and sorting every name on each unknown call made a long list
	// expensive to get wrong.
	assert.Len(t, ue.Available, 40)
	assert.Equal(t, 60, ue.More)
	assert.Equal(t, []string{"tool_aa"}, ue.Suggestions)
	msg := ue.ModelText()
	assert.Contains(t, msg, "(and 60 more)")
	assert.Contains(t, msg, "available tools: tool_aa,", "the closest name comes first")
}

// TestRenameCollisionIsNameConflictError brings two tools onto one name,
// and a tool onto the name of another: the error is the *NameConflictError
// of every other conflict, however deep the Renamed sits, and names both
// tools by their old names.
func TestRenameCollisionIsNameConflictError(t *testing.T) {
	ctx := context.Background()
	base := toolset.NewFunction(echoTools("execute_query", "list_tables", "drop")...).WithLabel("db")
	cases := []struct {
		name  string
		names map[string]string
		want  toolset.NameConflict
	}{
		{"two onto one", map[string]string{"execute_query": "x", "list_tables": "x"},
			toolset.NameConflict{Name: "x", Contributors: []string{`"execute_query" (renamed)`, `"list_tables" (renamed)`}}},
		{"onto an existing name", map[string]string{"execute_query": "drop"},
			toolset.NameConflict{Name: "drop", Contributors: []string{`"execute_query" (renamed)`, `"drop"`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base.Renamed(c.names)
			for _, ts := range []toolset.Toolset{r, toolset.NewCombined(echoTool("other"), r), r.Prefixed("p")} {
				_, err := toolset.BuildTools(ctx, "a", ts)
				var nce *toolset.NameConflictError
				require.ErrorAs(t, err, &nce)
				assert.Equal(t, "db", nce.Toolset)
				assert.Equal(t, []toolset.NameConflict{c.want}, nce.Conflicts)
				assert.Contains(t, err.Error(), "hint: rename the tools to different names")
			}
		})
	}
}
