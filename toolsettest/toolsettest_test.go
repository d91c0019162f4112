package toolsettest

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// QueryArgs are the arguments of the database tools.
type QueryArgs struct {
	SQL   string `json:"sql" jsonschema:"The SQL to run"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100"`
}

func query(name, desc string) toolset.Tool {
	return toolset.NewTool(name, desc, func(_ context.Context, in QueryArgs) (string, error) {
		if strings.Contains(in.SQL, "DROP") {
			return "", errors.New("refusing to drop")
		}
		if in.SQL == "" {
			return "", toolset.NewModelError("the SQL is empty")
		}
		return "3 rows", nil
	})
}

// registry is a support agent's tools: the admin-only tools hidden from
// other roles.
// role is the caller's role, read by the registry's filter.
var role = toolset.NewKey[string]("role")

func registry() []toolset.Toolset {
	admin := func(ctx context.Context, _ toolset.Tool) (bool, error) {
		return role.Get(ctx) == "admin", nil
	}
	return []toolset.Toolset{
		toolset.NewFunction(query("query", "Run a read-only query.")).Prefixed("db"),
		toolset.NewFunction(query("migrate", "Run a migration.")).Prefixed("db").Filtered(admin),
	}
}

func TestGoldenPerRole(t *testing.T) {
	for _, r := range []string{"admin", "viewer"} {
		t.Run(r, func(t *testing.T) {
			ctx := NewRun(t, toolset.WithValue(role, r)).Turn(t.Context())
			AssertGolden(t, filepath.Join("testdata", "support_"+r+".golden.json"), Build(t, ctx, registry()...))
		})
	}
}

func TestGoldenMismatchIsReadable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.golden.json")
	viewer := Build(t, NewRun(t, toolset.WithValue(role, "viewer")).Turn(t.Context()), registry()...)
	admin := Build(t, NewRun(t, toolset.WithValue(role, "admin")).Turn(t.Context()), registry()...)

	tb := run("TestAgent/viewer", func(tb *fakeTB) { AssertGolden(tb, path, viewer) })
	assert.Equal(t, "toolsettest: golden file "+path+" does not exist; create it with\n\tgo test -run '^TestAgent$' -toolsettest.update", tb.output())

	*updateFlag = true
	tb = run("TestAgent/viewer", func(tb *fakeTB) { assert.True(t, AssertGolden(tb, path, viewer)) })
	*updateFlag = false
	assert.Empty(t, tb.errors)
	assert.Equal(t, []string{"toolsettest: wrote " + path}, tb.logs)
	written, err := os.ReadFile(path)
	require.NoError(t, err)
	view, err := ModelView(viewer)
	require.NoError(t, err)
	assert.Equal(t, string(view), string(written))

	tb = run("TestAgent/viewer", func(tb *fakeTB) { assert.True(t, AssertGolden(tb, path, viewer)) })
	assert.Empty(t, tb.errors, "an unchanged tool list matches")

	tb = run("TestAgent/admin", func(tb *fakeTB) { assert.False(t, AssertGolden(tb, path, admin)) })
	want := "toolsettest: the tools the model sees differ from " + path + ":\n" +
		"--- " + path + "\n" +
		"+++ current tools\n" +
		"@@ -20,5 +20,27 @@\n" +
		"         \"sql\"\n" +
		"       ]\n" +
		"     }\n" +
		"+  },\n" +
		"+  {\n" +
		"+    \"name\": \"db_migrate\",\n" +
		"+    \"description\": \"Run a migration.\",\n" +
		"+    \"parameters\": {\n" +
		"+      \"properties\": {\n" +
		"+        \"sql\": {\n" +
		"+          \"type\": \"string\",\n" +
		"+          \"description\": \"The SQL to run\"\n" +
		"+        },\n" +
		"+        \"limit\": {\n" +
		"+          \"type\": \"integer\",\n" +
		"+          \"maximum\": 100,\n" +
		"+          \"minimum\": 1\n" +
		"+        }\n" +
		"+      },\n" +
		"+      \"additionalProperties\": false,\n" +
		"+      \"type\": \"object\",\n" +
		"+      \"required\": [\n" +
		"+        \"sql\"\n" +
		"+      ]\n" +
		"+    }\n" +
		"   }\n" +
		" ]\n" +
		"\nIf the change is intended, update the file with\n\tgo test -run '^TestAgent$' -toolsettest.update"
	assert.Equal(t, want, tb.output())
}

func TestGoldenToleratesCRLF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crlf.golden.json")
	tools := Build(t, t.Context(), registry()...)
	view, err := ModelView(tools)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(string(view), "\n", "\r\n")), 0o644))
	tb := run("TestCRLF", func(tb *fakeTB) { AssertGolden(tb, path, tools) })
	assert.Empty(t, tb.errors, "a golden file checked out with CRLF line ends still matches")
}

func TestBuildFailsTheTest(t *testing.T) {
	tb := run("TestBuild", func(tb *fakeTB) {
		Build(tb, t.Context(), toolset.NewFunction(query("q", "")), toolset.NewFunction(query("q", "")))
		t.Error("Build must stop the test")
	})
	assert.True(t, tb.fatal)
	assert.Contains(t, tb.output(), `toolsettest: building the tools: toolset: agent "test-agent" has tool name conflicts:`)
}

func TestAssertNames(t *testing.T) {
	tools := Build(t, NewRun(t, toolset.WithValue(role, "admin")).Turn(t.Context()), registry()...)
	assert.True(t, AssertNames(t, tools, "db_query", "db_migrate"))
	tests := []struct {
		name string
		want []string
		msg  string
	}{
		{"order", []string{"db_migrate", "db_query"},
			"toolsettest: tool names differ\n  want: db_migrate, db_query\n  got:  db_query, db_migrate\n  (same names, different order)"},
		{"missing and unexpected", []string{"db_query", "db_exec"},
			"toolsettest: tool names differ\n  want: db_query, db_exec\n  got:  db_query, db_migrate\n  missing: db_exec\n  unexpected: db_migrate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := run(t.Name(), func(tb *fakeTB) { assert.False(t, AssertNames(tb, tools, tt.want...)) })
			assert.Equal(t, tt.msg, tb.output())
		})
	}
}

func TestAssertSchema(t *testing.T) {
	tools := Build(t, t.Context(), registry()...)
	schema := `{"type":"object","additionalProperties":false,"required":["sql"],
		"properties":{"limit":{"type":"integer","minimum":1,"maximum":100},"sql":{"type":"string","description":"The SQL to run"}}}`
	assert.True(t, AssertSchema(t, tools, "db_query", schema), "key order and spacing do not matter")

	tb := run("TestSchema", func(tb *fakeTB) {
		AssertSchema(tb, tools, "db_query", strings.Replace(schema, `"maximum":100`, `"maximum":50`, 1))
	})
	assert.Equal(t, "toolsettest: the parameter schema of \"db_query\" differs:\n--- want\n+++ got\n@@ -2,7 +2,7 @@\n"+
		"   \"additionalProperties\": false,\n   \"properties\": {\n     \"limit\": {\n-      \"maximum\": 50,\n+      \"maximum\": 100,\n       \"minimum\": 1,\n       \"type\": \"integer\"\n     },\n", tb.output())

	tb = run("TestSchema", func(tb *fakeTB) { AssertSchema(tb, tools, "db_migrate", schema) })
	assert.Equal(t, `toolsettest: no tool "db_migrate" this turn; the tools are: db_query`, tb.output())

	tb = run("TestSchema", func(tb *fakeTB) { AssertSchema(tb, tools, "db_query", `{"type":`) })
	assert.Equal(t, `toolsettest: the wanted schema of "db_query" is not valid JSON: unexpected EOF`, tb.output())
}

func TestAssertConflicts(t *testing.T) {
	search := func() toolset.Tool { return query("search", "Search.") }
	_, err := toolset.BuildTools(t.Context(), "ops",
		toolset.NewFunction(search()).WithLabel("docs"),
		search(),
		toolset.NewFunction(search(), query("bad name", "")).WithLabel("tracker"),
	)
	require.Error(t, err)
	want := toolset.NameConflict{Name: "search", Contributors: []string{`Function#0 "docs"`, `Tool#1 "search"`, `Function#2 "tracker"`}}
	assert.True(t, AssertConflicts(t, err, want))
	assert.True(t, AssertInvalidNames(t, err, "bad name"))

	tb := run("TestConflicts", func(tb *fakeTB) {
		AssertConflicts(tb, err, toolset.NameConflict{Name: "search", Contributors: []string{`Function#0 "docs"`, `Function#2 "tracker"`}})
	})
	assert.Equal(t, "toolsettest: name conflicts differ:\n--- want\n+++ got\n@@ -1 +1 @@\n"+
		"-\"search\" contributed by: Function#0 \"docs\", Function#2 \"tracker\"\n+\"search\" contributed by: Function#0 \"docs\", Tool#1 \"search\", Function#2 \"tracker\"\n", tb.output())

	tb = run("TestConflicts", func(tb *fakeTB) { AssertConflicts(tb, errors.New("boom"), want) })
	assert.Equal(t, "toolsettest: want a *toolset.NameConflictError, got *errors.errorString: boom", tb.output())
	tb = run("TestConflicts", func(tb *fakeTB) { AssertConflicts(tb, nil, want) })
	assert.Equal(t, "toolsettest: want a *toolset.NameConflictError, got no error", tb.output())
	tb = run("TestConflicts", func(tb *fakeTB) { AssertInvalidNames(tb, err, "other") })
	assert.Equal(t, "toolsettest: invalid names differ\n  want: [\"other\"]\n  got:  [\"bad name\"]", tb.output())
}

func TestNewRunEndsWithTheTest(t *testing.T) {
	type DB struct{ DSN string }
	var run *toolset.RunContext
	t.Run("inner", func(t *testing.T) {
		run = NewRun(t, toolset.WithValue(role, "admin"), toolset.WithDeps(&DB{DSN: "x"}))
		ctx := run.Turn(t.Context())
		assert.Equal(t, "admin", role.Get(ctx))
		db, ok := toolset.DepsAs[*DB](ctx)
		require.True(t, ok)
		assert.Equal(t, "x", db.DSN)
		assert.Equal(t, 0, toolset.FromContext(ctx).Step())
		require.NoError(t, run.Err())
	})
	require.ErrorIs(t, run.Err(), toolset.ErrRunEnded, "the run ends with its test")
}

func TestRecorder(t *testing.T) {
	rec := Record(toolset.NewFunction(
		query("query", "Run a query."),
		toolset.NewTool("explode", "Explode.", func(context.Context, struct{}) (string, error) { panic("boom") }),
	).WithLabel("db"))
	ctx := NewRun(t, toolset.WithValue(role, "admin")).Turn(t.Context())
	tools := Build(t, ctx, rec)

	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "query", Args: json.RawMessage(`{"sql":"SELECT 1"}`)})
	require.NoError(t, err)
	assert.Equal(t, "3 rows", res)
	_, retryErr := tools.Execute(ctx, toolset.ToolCall{Name: "query", Args: json.RawMessage(`{"sql":""}`)})
	_, runErr := tools.Execute(ctx, toolset.ToolCall{Name: "query", Args: json.RawMessage(`{"sql":"DROP TABLE t"}`)})
	_, panicErr := tools.Execute(ctx, toolset.ToolCall{Name: "explode", Args: nil})
	_, argErr := tools.Execute(ctx, toolset.ToolCall{Name: "query", Args: json.RawMessage(`{"sql":1}`)})

	// Errors read as they would without the recorder.
	plain := Build(t, toolset.FromContext(ctx).Turn(ctx), toolset.NewFunction(query("query", "Run a query.")))
	_, plainRun := plain.Execute(ctx, toolset.ToolCall{Name: "query", Args: json.RawMessage(`{"sql":"DROP TABLE t"}`)})
	assert.EqualError(t, runErr, plainRun.Error())
	assert.EqualError(t, panicErr, `toolset: tool "explode" panicked: boom`)
	var pe *toolset.PanicError
	assert.ErrorAs(t, panicErr, &pe)
	msg, ok := toolset.ErrorText(retryErr)
	assert.True(t, ok)
	assert.Equal(t, "the SQL is empty", msg)
	_, ok = toolset.ErrorText(argErr)
	assert.True(t, ok)

	calls := rec.Calls()
	require.Len(t, calls, 4, "the call with bad arguments never reached the tool")
	assert.Equal(t, "query", calls[0].Tool)
	assert.JSONEq(t, `{"sql":"SELECT 1"}`, string(calls[0].Args))
	assert.Equal(t, "3 rows", calls[0].Result)
	assert.NoError(t, calls[0].Err)
	assert.Equal(t, "admin", calls[0].Run.Value("role"))
	assert.ErrorContains(t, calls[1].Err, "the SQL is empty")
	var te *toolset.ToolError
	require.ErrorAs(t, runErr, &te)
	assert.Equal(t, te.Err, calls[2].Err, "the recorder sees the handler's own error")
	require.ErrorAs(t, calls[3].Err, &pe)
	assert.Equal(t, "boom", pe.Value)
	assert.Equal(t, "explode", pe.Tool)
	assert.Len(t, rec.CallsTo("query"), 3)
	rec.Reset()
	assert.Empty(t, rec.Calls())
}

func TestRecorderLooksLikeTheWrappedToolset(t *testing.T) {
	inner := toolset.NewFunction(
		toolset.NewTool("query", "Run a query.", func(context.Context, QueryArgs) (string, error) { return "", nil },
			toolset.WithMetadata(map[string]string{"owner": "data"})),
	).WithLabel("db").WithInstructions("Prefer small queries.")
	rec := Record(inner)
	ctx := t.Context()

	plain := Build(t, ctx, inner)
	recorded := Build(t, ctx, rec)
	a, b := plain.Tools()[0], recorded.Tools()[0]
	assert.Equal(t, a.Name, b.Name)
	assert.Equal(t, a.Description, b.Description)
	assert.Same(t, a.Parameters, b.Parameters)
	assert.Equal(t, a.Returns, b.Returns)
	assert.Equal(t, a.Metadata, b.Metadata)
	pv, _ := ModelView(plain)
	rv, _ := ModelView(recorded)
	assert.Equal(t, string(pv), string(rv))

	assert.True(t, b.Same(a), "the recorded tool is the wrapped tool, with its state")

	assert.Equal(t, "db", rec.Label())
	text, err := toolset.Instructions(ctx, rec)
	require.NoError(t, err)
	assert.Equal(t, "Prefer small queries.", text)
	assert.NoError(t, rec.Close())

	_, err = toolset.BuildTools(ctx, "ops", rec, toolset.NewFunction(query("query", "")))
	AssertConflicts(t, err, toolset.NameConflict{Name: "query", Contributors: []string{`Recorder#0 "db"`, "Function#1"}})

	_, err = Record(nil).GetTools(ctx)
	assert.EqualError(t, err, "toolsettest: Recorder wraps no toolset")
}

func TestRecorderConcurrent(t *testing.T) {
	rec := Record(toolset.NewFunction(query("query", "Run a query.")))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ctx := t.Context()
			tools, err := toolset.BuildTools(ctx, "a", rec)
			if !assert.NoError(t, err) {
				return
			}
			for range 10 {
				_, err := tools.Execute(ctx, toolset.ToolCall{Name: "query", Args: json.RawMessage(`{"sql":"SELECT 1"}`)})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	assert.Len(t, rec.Calls(), 80)
}

func TestFake(t *testing.T) {
	f := NewFake("get_weather", Return("22°C"), Fail(toolset.NewModelError("unknown city")), Fail(errors.New("service down")))
	tools := Build(t, t.Context(), f.Tool())
	call := func(args string) (any, error) {
		return tools.Execute(t.Context(), toolset.ToolCall{Name: "get_weather", Args: json.RawMessage(args)})
	}

	res, err := call(`{"city":"Paris"}`)
	require.NoError(t, err)
	assert.Equal(t, "22°C", res)
	_, err = call(`{"city":"Atlantis"}`)
	msg, ok := toolset.ErrorText(err)
	assert.True(t, ok)
	assert.Equal(t, "unknown city", msg)
	_, err = call(`{}`)
	assert.EqualError(t, err, `toolset: tool "get_weather": service down`)
	_, err = call(`{}`)
	var se *ScriptError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, ScriptError{Tool: "get_weather", Call: 4, Scripted: 3}, *se)
	assert.EqualError(t, err, `toolset: tool "get_weather": toolsettest: fake tool "get_weather" has no result for call 4 (3 scripted); add results or set Repeat`)

	assert.Equal(t, 4, f.Calls())
	assert.Equal(t, []json.RawMessage{json.RawMessage(`{"city":"Paris"}`), json.RawMessage(`{"city":"Atlantis"}`), json.RawMessage(`{}`), json.RawMessage(`{}`)}, f.Args())
	assert.True(t, f.Tool().Same(f.Tool()))
	assert.True(t, tools.Tools()[0].Same(f.Tool()))
}

func TestFakeRepeatAndSchema(t *testing.T) {
	f := &Fake{Name: "count", Results: []Result{Return(1), Return(2)}, Repeat: true,
		Parameters: toolset.NewTool("x", "", func(context.Context, QueryArgs) (int, error) { return 0, nil }).Parameters}
	tools := Build(t, t.Context(), f)
	var got []any
	for range 4 {
		res, err := tools.Execute(t.Context(), toolset.ToolCall{Name: "count", Args: json.RawMessage(`{"sql":"x"}`)})
		require.NoError(t, err)
		got = append(got, res)
	}
	assert.Equal(t, []any{1, 2, 2, 2}, got)
	_, err := tools.Execute(t.Context(), toolset.ToolCall{Name: "count", Args: json.RawMessage(`{"limit":0}`)})
	_, ok := toolset.ErrorText(err)
	assert.True(t, ok, "arguments are checked against the fake's schema")
	assert.Equal(t, 4, f.Calls(), "refused calls are not counted")

	empty := &Fake{Name: "none", Repeat: true}
	_, err = empty.Tool().Execute(t.Context(), toolset.ToolCall{Args: nil})
	assert.ErrorContains(t, err, `no result for call 1 (0 scripted)`)
}

func TestFakeConcurrent(t *testing.T) {
	f := &Fake{Name: "n", Results: []Result{Return("ok")}, Repeat: true}
	tool := f.Tool()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			_, err := tool.Execute(t.Context(), toolset.ToolCall{Args: json.RawMessage(`{"i":1}`)})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.Equal(t, 16, f.Calls())
}

// userUpdate is the -update flag a test package defines for golden files
// of its own, as many do: it does not clash with this package's, and
// rewrites its golden files too.
var userUpdate = flag.Bool("update", false, "a test package's own flag")

func TestATestPackagesOwnUpdateFlagRewritesGoldenFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.golden.json")
	tools := Build(t, NewRun(t, toolset.WithValue(role, "viewer")).Turn(t.Context()), registry()...)
	*userUpdate = true
	tb := run("TestAgent", func(tb *fakeTB) { assert.True(t, AssertGolden(tb, path, tools)) })
	*userUpdate = false
	assert.Empty(t, tb.errors)
	require.FileExists(t, path)
	tb = run("TestAgent", func(tb *fakeTB) { assert.True(t, AssertGolden(tb, path, tools)) })
	assert.Empty(t, tb.errors, "the file written is the one compared")
}
