package toolset_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unknownCall calls name, which must not be in tools, and returns the
// error.
func unknownCall(t *testing.T, ctx context.Context, tools *toolset.ToolList, name string) *toolset.UnknownToolError {
	t.Helper()
	_, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: nil})
	var ue *toolset.UnknownToolError
	require.ErrorAs(t, err, &ue)
	return ue
}

func TestUnknownToolSuggestsThePrefixedName(t *testing.T) {
	fs := toolset.NewFunction(echoTools("read_file", "write_file")...).Prefixed("fs")
	other := toolset.NewFunction(echoTools("search", "fetch")...)
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewCombined(other, fs))
	require.NoError(t, err)

	ue := unknownCall(t, ctx, tools, "read_file")
	assert.Equal(t, []string{"fs_read_file"}, ue.Suggestions)
	msg, forModel := toolset.ErrorText(ue)
	require.True(t, forModel)
	assert.Equal(t, `unknown tool "read_file"; did you mean fs_read_file? available tools: fetch, fs_read_file, fs_write_file, search`, msg)
}

func TestUnknownToolSuggestsEveryNameOfTheRenameChain(t *testing.T) {
	db := toolset.NewFunction(echoTool("query")).
		Renamed(map[string]string{"query": "sql_query"}).
		Prefixed("db").
		Renamed(map[string]string{"db_sql_query": "run_sql"})
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewCombined(db, toolset.NewFunction(echoTool("other"))))
	require.NoError(t, err)
	require.Equal(t, []string{"run_sql", "other"}, tools.Names())
	for _, old := range []string{"query", "sql_query", "db_sql_query"} {
		assert.Equal(t, []string{"run_sql"}, unknownCall(t, ctx, tools, old).Suggestions, old)
	}
}

func TestUnknownToolSuggestsHistoryBeforeEditDistance(t *testing.T) {
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a",
		toolset.NewFunction(echoTool("read_fils")),
		toolset.NewFunction(echoTool("read_file")).Prefixed("fs"),
		toolset.NewFunction(echoTool("read_file")).Prefixed("s3"))
	require.NoError(t, err)
	ue := unknownCall(t, ctx, tools, "read_file")
	assert.Equal(t, []string{"fs_read_file", "s3_read_file", "read_fils"}, ue.Suggestions)
	assert.Contains(t, ue.ModelText(), "did you mean fs_read_file, s3_read_file or read_fils?")

	// Far names are not suggested; of the near ones, only the nearest.
	assert.Empty(t, unknownCall(t, ctx, tools, "delete_everything").Suggestions)
	assert.Equal(t, []string{"read_fils"}, unknownCall(t, ctx, tools, "read_filz").Suggestions)
}

func TestUnknownToolNeverSuggestsAHiddenTool(t *testing.T) {
	admin := toolset.NewTool("drop_table", "Drop.", okHandler, toolset.WithMetadata(map[string]string{"audience": "admin"}))
	secret := toolset.NewTool("gamma", "Hidden by its own predicate.", okHandler,
		toolset.WithEnabled(func(context.Context, toolset.Tool) (bool, error) { return false, nil }))
	deferred := toolset.NewTool("refund", "Deferred.", okHandler, toolset.WithDeferred())
	db := toolset.NewCombined(
		toolset.NewFunction(admin, echoTool("select_rows")).Filtered(adminsOnly).Prefixed("db"),
		toolset.NewFunction(secret, deferred, echoTool("alpha")).Prefixed("x"),
	)
	guest := withRole(t, "guest")
	tools, err := toolset.BuildTools(guest, "a", db)
	require.NoError(t, err)
	require.Equal(t, []string{"db_select_rows", "x_alpha"}, tools.Names())

	for _, name := range []string{"drop_table", "db_drop_table", "db_drop_tabl", "gamma", "x_gamma", "x_gama", "refund", "x_refund", "x_refunds"} {
		ue := unknownCall(t, guest, tools, name)
		assert.Empty(t, ue.Suggestions, name)
		assert.ElementsMatch(t, []string{"db_select_rows", "x_alpha"}, ue.Available, name)
		_, listed, _ := strings.Cut(ue.ModelText(), "; ")
		assert.Equal(t, "available tools: db_select_rows, x_alpha", listed, name)
	}

	// The admin's turn of the same toolset suggests it.
	adminCtx := withRole(t, "admin")
	tools, err = toolset.BuildTools(adminCtx, "a", db)
	require.NoError(t, err)
	assert.Equal(t, []string{"db_drop_table"}, unknownCall(t, adminCtx, tools, "drop_table").Suggestions)
}

func TestUnknownToolNeverSuggestsASpentTool(t *testing.T) {
	flaky := toolset.NewTool("flaky", "Fails.", func(context.Context, struct{}) (string, error) {
		return "", toolset.NewModelError("no")
	}, toolset.WithMaxFailures(1))
	entries := []toolset.Toolset{toolset.NewFunction(flaky, echoTool("steady")).Prefixed("p")}
	run := testRun(t, "stable", toolset.WithStableToolList())
	ctx := run.Turn(context.Background())
	tools, err := toolset.BuildTools(ctx, "a", entries...)
	require.NoError(t, err)
	assert.Equal(t, []string{"p_flaky"}, unknownCall(t, ctx, tools, "flaky").Suggestions, "not spent yet")
	_, err = call(t, ctx, tools, "p_flaky", `{}`)
	require.Error(t, err)

	ctx = run.Turn(context.Background())
	tools, err = toolset.BuildTools(ctx, "a", entries...)
	require.NoError(t, err)
	require.Equal(t, []string{"p_flaky", "p_steady"}, tools.Names(), "a stable list keeps it, marked unavailable")
	for _, name := range []string{"flaky", "p_flak"} {
		ue := unknownCall(t, ctx, tools, name)
		assert.Empty(t, ue.Suggestions, name)
		assert.Equal(t, []string{"p_steady"}, ue.Available, name)
	}
}

// bigList is a turn's set of n tools, all of one length, so that every
// name is as near the names called below as a name can be in length.
func bigList(t testing.TB, ctx context.Context, n int) *toolset.ToolList {
	tools := make([]toolset.Tool, n)
	for i := range tools {
		tools[i] = echoTool(fmt.Sprintf("tool_%058d", i))
	}
	list, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(tools...).Prefixed("p", toolset.WithSeparator("")))
	require.NoError(t, err)
	return list
}

// hostileNames are names a model may call, chosen to cost the suggester:
// as long as a name can be and in the most crowded length, every byte
// value, control bytes, invalid UTF-8, a megabyte.
func hostileNames() []string {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	return []string{
		"",
		strings.Repeat("t", 64),
		"ptool_" + strings.Repeat("9", 58),
		"tool_" + strings.Repeat("0", 59),
		string(all),
		strings.Repeat("\xff\xfe", 40),
		strings.Repeat("ptool_0", 1<<17),
		strings.Repeat("\x00", 65),
	}
}

// Unknown calls among 20,000 tools of one length, hostile names among
// them, each get a short error, allocate what the error holds, and cost
// what they cost among 512 tools: a call compares the name with at most
// maxScoredNames (256) names, however many the set has. The time is a
// ratio of the fastest of interleaved rounds in the two sets, measured in
// this test, so that a loaded machine slows both alike.
func TestUnknownCallsAmongTwentyThousandToolsStayCheap(t *testing.T) {
	ctx := newRun(t, "r")
	tools := bigList(t, ctx, 20_000)
	fewCtx := newRun(t, "r2")
	few := bigList(t, fewCtx, 512)
	names := hostileNames()
	for i := range 200 {
		names = append(names, fmt.Sprintf("ptool_%058d", 1_000_000+i*7919))
	}
	unknownCall(t, ctx, tools, "warm") // the first unknown call indexes the set
	unknownCall(t, fewCtx, few, "warm")

	// A round calls a few names; each part of the names is called five
	// times in each set, alternately, and the fastest rounds of each part
	// add up. Short rounds, so that a preempted one is outnumbered.
	round := func(ctx context.Context, list *toolset.ToolList, part []string) (time.Duration, uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		for _, name := range part {
			_, err := list.Execute(ctx, toolset.ToolCall{Name: name, Args: nil})
			msg, forModel := toolset.ErrorText(err)
			require.True(t, forModel)
			require.Less(t, len(msg), 8<<10)
		}
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		return took, (after.TotalAlloc - before.TotalAlloc) / uint64(len(part))
	}
	var many, some time.Duration
	var perCall uint64
	for part := range slices.Chunk(names, 16) {
		var fastMany, fastSome time.Duration
		for i := range 5 {
			d, b := round(ctx, tools, part)
			perCall = max(perCall, b)
			if i == 0 || d < fastMany {
				fastMany = d
			}
			if d, _ = round(fewCtx, few, part); i == 0 || d < fastSome {
				fastSome = d
			}
		}
		many, some = many+fastMany, some+fastSome
	}
	t.Logf("%v per call among 20,000 tools, %v among 512; %d bytes per call", many/time.Duration(len(names)), some/time.Duration(len(names)), perCall)
	// Copying and sorting the 20,000 names took 320 KB a call; now a call
	// allocates what its error holds.
	assert.Less(t, perCall, uint64(16<<10), "bytes allocated per unknown call")
	// Comparing the name with every tool's costs some 35 times more.
	assert.Less(t, many, 8*some, "unknown calls among 20,000 tools against 512")
}

func TestUnknownCallAllocationsDoNotScaleWithTools(t *testing.T) {
	bytesPerCall := func(n int) uint64 {
		ctx := newRun(t, "r")
		tools := bigList(t, ctx, n)
		unknownCall(t, ctx, tools, "warm")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 100 {
			_, _ = tools.Execute(ctx, toolset.ToolCall{Name: "tool_x", Args: nil})
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 100
	}
	small, large := bytesPerCall(100), bytesPerCall(20_000)
	t.Logf("%d bytes per call among 100 tools, %d among 20,000", small, large)
	assert.Less(t, large, 2*small+1024)
}

// BenchmarkUnknownToolCall calls unknown names, hostile ones among them,
// in a set of 10,000 tools of one length.
func BenchmarkUnknownToolCall(b *testing.B) {
	ctx := newRun(b, "r")
	tools := bigList(b, ctx, 10_000)
	names := hostileNames()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, err := tools.Execute(ctx, toolset.ToolCall{Name: names[i%len(names)], Args: nil})
		if msg, _ := toolset.ErrorText(err); len(msg) > 8<<10 {
			b.Fatal("message too long")
		}
		i++
	}
}

// FuzzUnknownToolCall calls arbitrary names in a set with hidden tools:
// the error never suggests or lists a tool the set does not show, and its
// message stays short.
func FuzzUnknownToolCall(f *testing.F) {
	for _, n := range hostileNames() {
		f.Add(n)
	}
	f.Add("read_file")
	f.Add("drop_table")
	f.Add("db_drop_tabl")
	admin := toolset.NewTool("drop_table", "Drop.", okHandler, toolset.WithMetadata(map[string]string{"audience": "admin"}))
	var many []toolset.Tool
	for i := range 60 {
		many = append(many, echoTool(fmt.Sprintf("tool_%d", i*37)))
	}
	entries := []toolset.Toolset{
		toolset.NewFunction(admin, echoTool("select_rows")).Filtered(adminsOnly).Prefixed("db"),
		toolset.NewFunction(echoTools("read_file", "write_file")...).Prefixed("fs").Renamed(map[string]string{"fs_write_file": "save"}),
		toolset.NewFunction(many...),
	}
	run := toolset.NewRun("fuzz", toolset.WithValue(Role, "guest"))
	defer run.End()
	ctx := run.Turn(context.Background())
	tools, err := toolset.BuildTools(ctx, "a", entries...)
	if err != nil {
		f.Fatal(err)
	}
	shown := map[string]bool{}
	for _, n := range tools.Names() {
		shown[n] = true
	}
	f.Fuzz(func(t *testing.T, name string) {
		if shown[name] {
			return
		}
		_, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: nil})
		var ue *toolset.UnknownToolError
		if !errors.As(err, &ue) {
			t.Fatalf("%q: %v", name, err)
		}
		for _, n := range append(slices.Clone(ue.Suggestions), ue.Available...) {
			if !shown[n] {
				t.Fatalf("%q: %q is not shown", name, n)
			}
		}
		if len(ue.Suggestions) > 5 || len(ue.Available) > 40 || ue.More+len(ue.Available) != tools.Len() {
			t.Fatalf("%q: %d suggestions, %d available and %d more", name, len(ue.Suggestions), len(ue.Available), ue.More)
		}
		if msg := ue.ModelText(); len(msg) > 4<<10 || strings.Contains(msg, "drop_table\"") && !strings.Contains(name, "drop_table") {
			t.Fatalf("%q: %s", name, msg)
		}
	})
}

// TestUnknownToolOfTenThousandCopiesIsBounded calls the original name of
// a tool of which the set shows 10,000 prefixed copies: indexing the names
// they had once, and answering each call, stay cheap.
func TestUnknownToolOfTenThousandCopiesIsBounded(t *testing.T) {
	f := toolset.NewFunction(echoTool("query"))
	copies := make([]toolset.Toolset, 10_000)
	for i := range copies {
		copies[i] = f.Prefixed(fmt.Sprintf("p%d", i))
	}
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewCombined(copies...))
	require.NoError(t, err)
	start := time.Now()
	for range 1000 {
		ue := unknownCall(t, ctx, tools, "query")
		require.Equal(t, []string{"p0_query", "p1_query", "p2_query", "p3_query", "p4_query"}, ue.Suggestions)
	}
	assert.Less(t, time.Since(start), 10*time.Second)
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

// manyTools is a set of more tools than an UnknownToolError lists, so its
// message ranks them by similarity to the name called.
func manyTools(t testing.TB) *toolset.ToolList {
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("tool_with_a_long_name_of_sixty_four_bytes_for_scoring_%09d", i)
	}
	tools, err := toolset.BuildTools(newRun(t, "r"), "a", toolset.NewFunction(echoTools(names...)...))
	require.NoError(t, err)
	return tools
}

func TestUnknownHugeToolNameIsBounded(t *testing.T) {
	tools := manyTools(t)
	ctx := newRun(t, "r")
	tools, _ = toolset.BuildTools(ctx, "a", toolset.NewFunction(tools.Tools()...))
	for _, size := range []int{50 << 10, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			name := strings.Repeat("to\x00l\n", size/5)
			_, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: nil})
			var ue *toolset.UnknownToolError
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, name, ue.Name, "the error keeps what the model sent")

			start := time.Now()
			msg := err.Error()
			model, _ := toolset.ErrorText(err)
			elapsed := time.Since(start)
			// Unbounded, scoring a 50 KB name against 100 names took about a
			// second; bounded, it takes microseconds.
			assert.Less(t, elapsed, 200*time.Millisecond)
			assert.Less(t, len(msg), 4<<10)
			assert.Less(t, len(model), 4<<10)
			assert.Contains(t, msg, `unknown tool "to\x00l\nto`)
			assert.Contains(t, msg, `…"; available tools: `)
			assert.NotContains(t, msg, "\x00", "the name is shown quoted, control characters escaped")
			assert.Contains(t, msg, "(and 60 more)")
		})
	}
}

// BenchmarkUnknownToolError1MBNameUnder1ms renders the error of a call of
// a 1 MB name among 100 tools; it must stay far under a millisecond.
func BenchmarkUnknownToolError1MBNameUnder1ms(b *testing.B) {
	tools := manyTools(b)
	ctx := newRun(b, "r")
	tools, _ = toolset.BuildTools(ctx, "a", toolset.NewFunction(tools.Tools()...))
	name := strings.Repeat("x", 1<<20)
	_, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: nil})
	for b.Loop() {
		if len(err.Error()) > 4<<10 {
			b.Fatal("message too long")
		}
	}
	if b.Elapsed()/time.Duration(b.N) > time.Millisecond {
		b.Fatalf("%v per message", b.Elapsed()/time.Duration(b.N))
	}
}
