package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The allocation budgets of a turn and of a call. They guard the costs
// that the benchmarks of bench_test.go measure, so that a regression
// fails a test, not only a benchmark.

// skipAllocCounts skips a test that counts allocations where counts are
// not steady.
func skipAllocCounts(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("allocation counts")
	}
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector")
	}
}

// allocTools returns n tools, every other one for admins only.
func allocTools(n int) []toolset.Tool {
	tools := make([]toolset.Tool, n)
	for i := range tools {
		audience := "all"
		if i%2 == 1 {
			audience = "admin"
		}
		tools[i] = toolset.NewTool(fmt.Sprint("tool_", i), "", func(context.Context, struct{}) (int, error) { return 0, nil },
			toolset.WithMetadata(map[string]string{"audience": audience}))
	}
	return tools
}

// allocTree is the tree of BenchmarkBuildTools: sets toolsets of tools,
// each prefixed and filtered by a predicate that reads a Key, combined.
func allocTree(sets int, tools []toolset.Tool) toolset.Toolset {
	children := make([]toolset.Toolset, sets)
	for s := range children {
		children[s] = toolset.NewFunction(tools...).Prefixed(fmt.Sprint("ts", s)).Filtered(adminsOnly)
	}
	return toolset.NewCombined(children...)
}

// A steady turn allocates a few times, however many toolsets and tools
// it has: in-memory toolsets are materialised without goroutines, and
// their masks come from memory the turns share.
func TestSteadyTurnAllocationsDoNotGrowWithToolsets(t *testing.T) {
	skipAllocCounts(t)
	const budget = 40
	allocs := func(sets, tools int) float64 {
		tree := allocTree(sets, allocTools(tools))
		run := testRun(t, "steady", toolset.WithValue(Role, "user"))
		turn := func() {
			got, err := toolset.BuildTools(run.Turn(context.Background()), "a", tree)
			if err != nil || got.Len() != sets*tools/2 {
				t.Fatalf("turn: %v, %d tools", err, got.Len())
			}
		}
		turn()
		return testing.AllocsPerRun(20, turn)
	}
	few, many, large := allocs(10, 10), allocs(1000, 10), allocs(10, 1000)
	assert.LessOrEqual(t, few, float64(budget), "allocations of a steady turn of 10 toolsets")
	assert.Equal(t, few, many, "allocations of a steady turn of 10 and of 1,000 toolsets")
	assert.Equal(t, few, large, "allocations of a steady turn of 10 and of 1,000 tools a toolset")
}

// A turn over 100,000 tools (1,000 toolsets of 100) stays within the
// steady budget: what it allocates is linear in neither.
func TestSteadyTurnOverManyToolsAllocatesLittle(t *testing.T) {
	skipAllocCounts(t)
	tree := allocTree(1000, allocTools(100))
	run := testRun(t, "scale", toolset.WithValue(Role, "user"))
	turn := func() {
		got, err := toolset.BuildTools(run.Turn(context.Background()), "a", tree)
		if err != nil || got.Len() != 50_000 {
			t.Fatalf("turn: %v, %d tools", err, got.Len())
		}
	}
	turn()
	assert.LessOrEqual(t, testing.AllocsPerRun(5, turn), float64(40))
}

// The first turn of fresh toolsets over 10,000 prefixed tools allocates
// per toolset, not per tool: a prefixed toolset's names share one
// allocation.
func TestColdTurnAllocationsArePerToolset(t *testing.T) {
	skipAllocCounts(t)
	tools := allocTools(100)
	const runs = 5
	trees := make([]toolset.Toolset, runs+1)
	for i := range trees {
		trees[i] = allocTree(100, tools)
	}
	run := testRun(t, "cold", toolset.WithValue(Role, "user"))
	next := 0
	allocs := testing.AllocsPerRun(runs, func() {
		got, err := toolset.BuildTools(run.Turn(context.Background()), "a", trees[next])
		next++
		if err != nil || got.Len() != 5000 {
			t.Fatalf("turn: %v, %d tools", err, got.Len())
		}
	})
	// About three per toolset: its prefixed names, its snapshot and
	// the memo entry that holds it.
	assert.LessOrEqual(t, allocs, float64(400), "allocations of a cold turn over 10,000 tools")
}

// The first turn of fresh toolsets that hide half of 10,000 prefixed
// tools copies only the half it shows: it allocates less than a copy of
// every tool would, names and index aside.
func TestColdTurnCopiesOnlyTheToolsItShows(t *testing.T) {
	skipAllocCounts(t)
	tools := allocTools(100)
	const runs = 3
	trees := make([]toolset.Toolset, runs)
	for i := range trees {
		trees[i] = allocTree(100, tools)
	}
	run := testRun(t, "cold-bytes", toolset.WithValue(Role, "user"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, tree := range trees {
		got, err := toolset.BuildTools(run.Turn(context.Background()), "a", tree)
		if err != nil || got.Len() != 5000 {
			t.Fatalf("turn: %v, %d tools", err, got.Len())
		}
	}
	runtime.ReadMemStats(&after)
	perTurn := (after.TotalAlloc - before.TotalAlloc) / runs
	all := uint64(10_000 * unsafe.Sizeof(toolset.Tool{}))
	assert.Less(t, perTurn, all, "bytes allocated by a cold turn over 10,000 tools, 5,000 shown")
	t.Logf("%d bytes a cold turn; a copy of every tool is %d", perTurn, all)
}

// A validated call allocates what decoding its arguments with
// encoding/json allocates, and one more: the result, as an any.
func TestCallAllocatesAsDecodingDoes(t *testing.T) {
	skipAllocCounts(t)
	type args struct {
		City  string `json:"city"`
		Days  int    `json:"days" jsonschema:"minimum=1,maximum=14"`
		Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
	}
	handler := func(_ context.Context, in args) (string, error) { return in.City, nil }
	raw := json.RawMessage(`{"city":"Paris","days":3,"units":"metric"}`)
	floor := testing.AllocsPerRun(100, func() {
		var in args
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		if _, err := handler(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	})
	call := func(opts ...toolset.ToolOption) float64 {
		tools, err := toolset.BuildTools(context.Background(), "a", toolset.NewTool("get_weather", "", handler, opts...))
		require.NoError(t, err)
		c := toolset.ToolCall{Name: "get_weather", Args: raw}
		return testing.AllocsPerRun(100, func() {
			if _, err := tools.Execute(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		})
	}
	assert.LessOrEqual(t, call(), floor+1, "allocations of a plain call")
	// A plain call validates as it decodes: one copy of the arguments for
	// all their strings, and the result.
	assert.LessOrEqual(t, call(), float64(2), "allocations of a plain call, decoded in one pass")
	assert.LessOrEqual(t, call(allPolicies()...), floor+2, "allocations of a call with every policy configured and none triggered")
}
