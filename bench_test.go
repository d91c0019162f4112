package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
)

// The composed tree of the BuildTools benchmarks: 100 Function toolsets of
// 100 tools each, each prefixed, half of each hidden per turn by a predicate
// that reads the caller's role from the run context, all combined.
const (
	benchToolsets = 100
	benchTools    = 100
)

type benchArgs struct {
	City  string `json:"city" jsonschema:"City name"`
	Days  int    `json:"days" jsonschema:"minimum=1,maximum=14"`
	Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
}

func benchHandler(_ context.Context, in benchArgs) (string, error) { return in.City, nil }

func benchToolList() [][]toolset.Tool {
	out := make([][]toolset.Tool, benchToolsets)
	for s := range out {
		out[s] = make([]toolset.Tool, benchTools)
		for i := range out[s] {
			audience := "all"
			if i%2 == 1 {
				audience = "admin"
			}
			out[s][i] = toolset.NewTool(fmt.Sprintf("tool_%d", i), "A benchmark tool.", benchHandler,
				toolset.WithMetadata(map[string]string{"audience": audience}))
		}
	}
	return out
}

func adminOnly(ctx context.Context, t toolset.Tool) (bool, error) {
	return t.Metadata["audience"] != "admin" || Role.Get(ctx) == "admin", nil
}

func benchTree() toolset.Toolset {
	lists := benchToolList()
	children := make([]toolset.Toolset, len(lists))
	for s, tools := range lists {
		children[s] = toolset.NewFunction(tools...).Prefixed(fmt.Sprintf("ts%d", s)).Filtered(adminOnly)
	}
	return toolset.NewCombined(children...)
}

// BenchmarkBuildTools builds one turn of a run per iteration.
func BenchmarkBuildTools(b *testing.B) {
	tree := benchTree()
	run := toolset.NewRun("bench", toolset.WithValue(Role, "user"))
	defer run.End()
	// The first two turns make what later turns reuse: their costs are
	// BenchmarkBuildToolsCold's and BenchmarkBuildToolsSecond's.
	for range 2 {
		if _, err := toolset.BuildTools(run.Turn(context.Background()), "bench", tree); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		tools, err := toolset.BuildTools(run.Turn(context.Background()), "bench", tree)
		if err != nil || tools.Len() != benchToolsets*benchTools/2 {
			b.Fatal(err, tools.Len())
		}
	}
}

// BenchmarkFilterFloor is the limit of a filtered turn over the same
// 10,000 tools: the predicate of BenchmarkBuildTools called on each,
// writing a visibility bit each, and nothing else.
func BenchmarkFilterFloor(b *testing.B) {
	var all []toolset.Tool
	for _, tools := range benchToolList() {
		all = append(all, tools...)
	}
	run := toolset.NewRun("bench-floor", toolset.WithValue(Role, "user"))
	defer run.End()
	ctx := run.Turn(context.Background())
	keep := make([]bool, len(all))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for i := range all {
			ok, _ := adminOnly(ctx, all[i])
			keep[i] = ok
			if ok {
				n++
			}
		}
		if n != len(all)/2 {
			b.Fatal(n)
		}
	}
}

// BenchmarkBuildToolsCold builds the first turn of fresh toolset values
// over the tools of BenchmarkBuildTools: what an agent pays on its first
// turn, or on a turn after its toolsets were rebuilt. Making the toolset
// values is not timed.
func BenchmarkBuildToolsCold(b *testing.B) {
	lists := benchToolList()
	run := toolset.NewRun("bench-cold", toolset.WithValue(Role, "user"))
	defer run.End()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		children := make([]toolset.Toolset, len(lists))
		for s, tools := range lists {
			children[s] = toolset.NewFunction(tools...).Prefixed(fmt.Sprintf("ts%d", s)).Filtered(adminOnly)
		}
		tree := toolset.NewCombined(children...)
		ctx := run.Turn(context.Background())
		b.StartTimer()
		tools, err := toolset.BuildTools(ctx, "bench", tree)
		if err != nil || tools.Len() != benchToolsets*benchTools/2 {
			b.Fatal(err, tools.Len())
		}
	}
}

// BenchmarkBuildToolsSecond builds the second turn of fresh toolset
// values: the first copies only the tools it shows, the second makes the
// copies of all of them that later turns reuse. Making the toolset values
// and their first turn is not timed.
func BenchmarkBuildToolsSecond(b *testing.B) {
	lists := benchToolList()
	run := toolset.NewRun("bench-second", toolset.WithValue(Role, "user"))
	defer run.End()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		children := make([]toolset.Toolset, len(lists))
		for s, tools := range lists {
			children[s] = toolset.NewFunction(tools...).Prefixed(fmt.Sprintf("ts%d", s)).Filtered(adminOnly)
		}
		tree := toolset.NewCombined(children...)
		if _, err := toolset.BuildTools(run.Turn(context.Background()), "bench", tree); err != nil {
			b.Fatal(err)
		}
		ctx := run.Turn(context.Background())
		b.StartTimer()
		tools, err := toolset.BuildTools(ctx, "bench", tree)
		if err != nil || tools.Len() != benchToolsets*benchTools/2 {
			b.Fatal(err, tools.Len())
		}
	}
}

// BenchmarkScale compares a steady turn with the naive floor (see
// BenchmarkBaseline) over 100,000 tools: 1,000 toolsets of 100 tools.
func BenchmarkScale(b *testing.B) {
	const sets = 1000
	lists := make([][]toolset.Tool, 0, sets)
	for len(lists) < sets {
		lists = append(lists, benchToolList()...)
	}
	lists = lists[:sets]
	b.Run("turn", func(b *testing.B) {
		children := make([]toolset.Toolset, len(lists))
		for s, tools := range lists {
			children[s] = toolset.NewFunction(tools...).Prefixed(fmt.Sprintf("ts%d", s)).Filtered(adminOnly)
		}
		tree := toolset.NewCombined(children...)
		run := toolset.NewRun("bench-scale", toolset.WithValue(Role, "user"))
		defer run.End()
		for range 2 { // the turns that make what later turns reuse
			if _, err := toolset.BuildTools(run.Turn(context.Background()), "bench", tree); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			tools, err := toolset.BuildTools(run.Turn(context.Background()), "bench", tree)
			if err != nil || tools.Len() != sets*benchTools/2 {
				b.Fatal(err, tools.Len())
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		var all []toolset.Tool
		for s, tools := range lists {
			for _, t := range tools {
				t.Name = fmt.Sprintf("ts%d_%s", s, t.Name)
				all = append(all, t)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			list := make([]toolset.Tool, len(all))
			copy(list, all)
			index := make(map[string]int, len(list))
			for i := range list {
				index[list[i].Name] = i
			}
			if len(index) != len(all) {
				b.Fatal("bad index")
			}
		}
	})
}

// BenchmarkBaseline is the floor of the naive approach on the same 10,000
// tools: copy every tool into a new slice and index it in a new map.
func BenchmarkBaseline(b *testing.B) {
	var all []toolset.Tool
	for s, tools := range benchToolList() {
		for _, t := range tools {
			t.Name = fmt.Sprintf("ts%d_%s", s, t.Name)
			all = append(all, t)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		list := make([]toolset.Tool, len(all))
		copy(list, all)
		index := make(map[string]int, len(list))
		for i := range list {
			index[list[i].Name] = i
		}
		if len(index) != len(all) {
			b.Fatal("bad index")
		}
	}
}

var benchCallArgs = json.RawMessage(`{"city":"Paris","days":3,"units":"metric"}`)

func BenchmarkCall(b *testing.B) {
	tools, err := toolset.BuildTools(context.Background(), "bench",
		toolset.NewTool("get_weather", "Weather.", benchHandler))
	if err != nil {
		b.Fatal(err)
	}
	benchCalls(b, tools, "get_weather")
}

// BenchmarkCallFloor decodes the same arguments into the struct with
// encoding/json and calls the function directly. Where encoding/json/v2
// is there, BenchmarkCallFloorV2 does the same with it; the floor of a
// call is the faster of the two.
func BenchmarkCallFloor(b *testing.B) { benchFloor(b, floorDecoders[0].unmarshal) }

// floorDecoder is a way to decode arguments for the floor of a call.
type floorDecoder struct {
	name      string
	unmarshal func([]byte, any) error
}

// floorDecoders are encoding/json, then encoding/json/v2 where the
// toolchain has it (bench_v2_test.go).
var floorDecoders = []floorDecoder{{"v1", json.Unmarshal}}

// benchFloor decodes benchCallArgs with unmarshal and calls the function.
func benchFloor(b *testing.B, unmarshal func([]byte, any) error) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		floorCall(b, ctx, unmarshal)
	}
}

func floorCall(b *testing.B, ctx context.Context, unmarshal func([]byte, any) error) {
	var in benchArgs
	if err := unmarshal(benchCallArgs, &in); err != nil {
		b.Fatal(err)
	}
	if _, err := benchHandler(ctx, in); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCallRatio times BenchmarkCall against its floor in alternating
// batches, and reports the ratio to the fastest floor (see
// BenchmarkCallFloor), which a noisy machine moves less than the times
// of separate benchmarks.
func BenchmarkCallRatio(b *testing.B) {
	tools, err := toolset.BuildTools(context.Background(), "bench",
		toolset.NewTool("get_weather", "Weather.", benchHandler))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const batch = 100
	var tCall time.Duration
	tFloor := make([]time.Duration, len(floorDecoders))
	calls := 0
	for b.Loop() {
		start := time.Now()
		for range batch {
			if _, err := tools.Execute(ctx, toolset.ToolCall{Name: "get_weather", Args: benchCallArgs}); err != nil {
				b.Fatal(err)
			}
		}
		tCall += time.Since(start)
		for i, d := range floorDecoders {
			start := time.Now()
			for range batch {
				floorCall(b, ctx, d.unmarshal)
			}
			tFloor[i] += time.Since(start)
		}
		calls += batch
	}
	floor := tFloor[0]
	for i, d := range floorDecoders {
		b.ReportMetric(float64(tFloor[i].Nanoseconds())/float64(calls), "floor-"+d.name+"-ns/call")
		floor = min(floor, tFloor[i])
	}
	b.ReportMetric(float64(tCall.Nanoseconds())/float64(calls), "call-ns/call")
	b.ReportMetric(float64(tCall)/float64(floor), "ratio")
}

// BenchmarkCacheHit calls a cached tool through a prefixed copy with the
// arguments of an earlier call.
func BenchmarkCacheHit(b *testing.B) {
	tool := toolset.NewTool("get_weather", "Weather.", benchHandler, toolset.WithCache(toolset.CachePolicy{}))
	tools, err := toolset.BuildTools(context.Background(), "bench", toolset.NewFunction(tool).Prefixed("w"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := tools.Execute(ctx, toolset.ToolCall{Name: "w_get_weather", Args: benchCallArgs}); err != nil {
		b.Fatal(err)
	}
	benchCalls(b, tools, "w_get_weather")
	if s := tool.CacheStats(); s.Misses != 1 {
		b.Fatalf("stats %+v", s)
	}
}

// BenchmarkCallAllPolicies calls a tool with every policy configured and
// none triggered: a cache that keeps nothing, a rate limit never reached, a
// timeout never hit, an approval never needed, a failure budget never spent.
// Compare with BenchmarkCall on a quiet machine, or see BenchmarkPolicy/all.
func BenchmarkCallAllPolicies(b *testing.B) {
	benchCalls(b, benchTurn(b, allPolicies()...), "get_weather")
}

// allPolicies configures every policy so that none is triggered.
func allPolicies() []toolset.ToolOption {
	return []toolset.ToolOption{
		toolset.WithCache(toolset.CachePolicy{ShouldCache: func(any) bool { return false }}),
		toolset.WithRateLimit(toolset.RateLimit{Requests: 1 << 30, Interval: time.Second}),
		toolset.WithTimeout(time.Minute, toolset.TimeoutTellModel),
		toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return false, nil }),
		toolset.WithMaxFailures(3),
	}
}

// benchTurn builds a turn with the get_weather tool under opts.
func benchTurn(b *testing.B, opts ...toolset.ToolOption) *toolset.ToolList {
	tools, err := toolset.BuildTools(context.Background(), "bench", toolset.NewTool("get_weather", "Weather.", benchHandler, opts...))
	if err != nil {
		b.Fatal(err)
	}
	return tools
}

// BenchmarkPolicy reports what each policy, configured and not triggered,
// adds to a plain call (overhead-%), and what all of them add together. It
// times plain and policy calls in alternating batches, so that a noisy
// machine slows both alike: the ratio is steady where separate benchmarks
// of the two vary by ±20% between runs.
func BenchmarkPolicy(b *testing.B) {
	policies := []struct {
		name string
		opts []toolset.ToolOption
	}{
		{"cache-miss", allPolicies()[:1]},
		{"rate-limit", allPolicies()[1:2]},
		{"timeout", allPolicies()[2:3]},
		{"approval", allPolicies()[3:4]},
		{"retries", allPolicies()[4:5]},
		{"all", allPolicies()},
	}
	ctx := context.Background()
	const batch = 100
	batchOf := func(b *testing.B, tools *toolset.ToolList) time.Duration {
		start := time.Now()
		for range batch {
			if _, err := tools.Execute(ctx, toolset.ToolCall{Name: "get_weather", Args: benchCallArgs}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	for _, p := range policies {
		b.Run(p.name, func(b *testing.B) {
			plain, with := benchTurn(b), benchTurn(b, p.opts...)
			var tPlain, tWith time.Duration
			calls := 0
			for b.Loop() {
				tPlain += batchOf(b, plain)
				tWith += batchOf(b, with)
				calls += batch
			}
			b.ReportMetric(float64(tPlain.Nanoseconds())/float64(calls), "plain-ns/call")
			b.ReportMetric(float64(tWith.Nanoseconds())/float64(calls), "policy-ns/call")
			b.ReportMetric(100*(float64(tWith)/float64(tPlain)-1), "overhead-%")
		})
	}
}

// benchCalls calls the named tool with benchCallArgs in a benchmark loop.
func benchCalls(b *testing.B, tools *toolset.ToolList, name string) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: benchCallArgs}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunValue reads the caller's role as a predicate does, under the
// context of a turn: with a Key, and by name.
func BenchmarkRunValue(b *testing.B) {
	run := toolset.NewRun("bench-value", toolset.WithValue(Role, "admin"))
	defer run.End()
	ctx := run.Turn(context.Background())
	b.Run("Key", func(b *testing.B) {
		for b.Loop() {
			if Role.Get(ctx) != "admin" {
				b.Fatal("no role")
			}
		}
	})
	b.Run("Value", func(b *testing.B) {
		for b.Loop() {
			if toolset.FromContext(ctx).Value("role") != "admin" {
				b.Fatal("no role")
			}
		}
	})
}

// BenchmarkRatio times each target of a turn against its floor in
// alternation, one operation of each per iteration, and reports the
// ratio: on a shared machine, separate benchmarks of the two drift apart
// by more than the margins of interest.
//
//   - turn/filter-floor: BenchmarkBuildTools against BenchmarkFilterFloor;
//   - cold/baseline: BenchmarkBuildToolsCold against BenchmarkBaseline;
//   - cold-filter/baseline: the predicate of the cold turn alone, over
//     the same tools after the same setup, against BenchmarkBaseline: the
//     part of cold/baseline that is the caller's, not the library's;
//   - scale/baseline: BenchmarkScale/turn against BenchmarkScale/baseline.
func BenchmarkRatio(b *testing.B) {
	ratio := func(b *testing.B, setup func(), op, floor func()) {
		var tOp, tFloor time.Duration
		n := 0
		for b.Loop() {
			setup()
			start := time.Now()
			op()
			mid := time.Now()
			floor()
			tOp += mid.Sub(start)
			tFloor += time.Since(mid)
			n++
		}
		b.ReportMetric(float64(tOp.Nanoseconds())/float64(n), "op-ns")
		b.ReportMetric(float64(tFloor.Nanoseconds())/float64(n), "floor-ns")
		b.ReportMetric(float64(tOp)/float64(tFloor), "ratio")
	}
	flat := func(lists [][]toolset.Tool) []toolset.Tool {
		var all []toolset.Tool
		for _, tools := range lists {
			all = append(all, tools...)
		}
		return all
	}
	prefixedFlat := func(lists [][]toolset.Tool) []toolset.Tool {
		var all []toolset.Tool
		for s, tools := range lists {
			for _, t := range tools {
				t.Name = fmt.Sprintf("ts%d_%s", s, t.Name)
				all = append(all, t)
			}
		}
		return all
	}
	tree := func(lists [][]toolset.Tool) toolset.Toolset {
		children := make([]toolset.Toolset, len(lists))
		for s, tools := range lists {
			children[s] = toolset.NewFunction(tools...).Prefixed(fmt.Sprintf("ts%d", s)).Filtered(adminOnly)
		}
		return toolset.NewCombined(children...)
	}
	naive := func(b *testing.B, all []toolset.Tool) func() {
		return func() {
			list := make([]toolset.Tool, len(all))
			copy(list, all)
			index := make(map[string]int, len(list))
			for i := range list {
				index[list[i].Name] = i
			}
			if len(index) != len(all) {
				b.Fatal("bad index")
			}
		}
	}
	lists := benchToolList()
	run := toolset.NewRun("bench-ratio", toolset.WithValue(Role, "user"))
	defer run.End()
	turnOf := func(b *testing.B, ts toolset.Toolset, want int) func() {
		return func() {
			tools, err := toolset.BuildTools(run.Turn(context.Background()), "bench", ts)
			if err != nil || tools.Len() != want {
				b.Fatal(err, tools.Len())
			}
		}
	}
	b.Run("turn/filter-floor", func(b *testing.B) {
		all := flat(lists)
		ctx := run.Turn(context.Background())
		keep := make([]bool, len(all))
		steady := tree(lists)
		turn := turnOf(b, steady, len(all)/2)
		turn() // the first two turns make what later turns reuse
		turn()
		ratio(b, func() {}, turn, func() {
			for i := range all {
				keep[i], _ = adminOnly(ctx, all[i])
			}
		})
	})
	b.Run("cold/baseline", func(b *testing.B) {
		var fresh toolset.Toolset
		ratio(b, func() { fresh = tree(lists) }, func() { turnOf(b, fresh, len(lists)*benchTools/2)() }, naive(b, prefixedFlat(lists)))
	})
	b.Run("cold-filter/baseline", func(b *testing.B) {
		all := flat(lists)
		ctx := run.Turn(context.Background())
		keep := make([]bool, len(all))
		var fresh toolset.Toolset
		ratio(b, func() { fresh = tree(lists) }, func() {
			for i := range all {
				keep[i], _ = adminOnly(ctx, all[i])
			}
		}, naive(b, prefixedFlat(lists)))
		if fresh == nil {
			b.Fatal("no tree")
		}
	})
	b.Run("scale/baseline", func(b *testing.B) {
		big := make([][]toolset.Tool, 0, 1000)
		for len(big) < 1000 {
			big = append(big, lists...)
		}
		steady := tree(big)
		turn := turnOf(b, steady, len(big)*benchTools/2)
		turn() // the first two turns make what later turns reuse
		turn()
		ratio(b, func() {}, turn, naive(b, prefixedFlat(big)))
	})
}
