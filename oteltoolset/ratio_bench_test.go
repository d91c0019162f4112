package oteltoolset_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
)

// BenchmarkRatio times the calls of BenchmarkCall and the turns of
// BenchmarkTurn under each way of observing them against the same work
// with no observer, in alternating batches, and reports the ratio ("x"
// the unobserved time) and both times: a noisy machine moves the ratio
// less than the times of separate benchmarks.
func BenchmarkRatio(b *testing.B) {
	observers := benchObservers(b)
	args := json.RawMessage(`{"city":"Paris","days":3}`)
	call := func(b *testing.B, o benchObserver, id string) func() {
		run := toolset.NewRun(id, o.opts...)
		b.Cleanup(run.End)
		turn := run.Turn(o.ctx)
		tools, err := toolset.BuildTools(turn, "bench", toolset.NewFunction(benchTool("get_weather")).Prefixed("w"))
		if err != nil {
			b.Fatal(err)
		}
		return func() {
			if _, err := tools.Execute(turn, toolset.ToolCall{ID: "c", Name: "w_get_weather", Args: args}); err != nil {
				b.Fatal(err)
			}
		}
	}
	children := make([]toolset.Toolset, 10)
	for s := range children {
		tools := make([]toolset.Tool, 10)
		for i := range tools {
			tools[i] = benchTool(fmt.Sprint("tool_", i))
		}
		children[s] = toolset.NewFunction(tools...).Prefixed(fmt.Sprint("ts", s))
	}
	tree := toolset.NewCombined(children...)
	turn := func(b *testing.B, o benchObserver, id string) func() {
		run := toolset.NewRun(id, o.opts...)
		b.Cleanup(run.End)
		return func() {
			tools, err := toolset.BuildTools(run.Turn(o.ctx), "bench", tree)
			if err != nil || tools.Len() != 100 {
				b.Fatal(err, tools.Len())
			}
		}
	}
	for _, kind := range []struct {
		name  string
		batch int
		make  func(*testing.B, benchObserver, string) func()
	}{{"call", 100, call}, {"turn", 20, turn}} {
		for _, o := range observers[1:] {
			b.Run(kind.name+"/"+o.name, func(b *testing.B) {
				none := kind.make(b, observers[0], "bench-ratio-"+kind.name+"-none-"+o.name)
				with := kind.make(b, o, "bench-ratio-"+kind.name+"-"+o.name)
				timed := func(f func()) time.Duration {
					start := time.Now()
					for range kind.batch {
						f()
					}
					return time.Since(start)
				}
				var tNone, tWith time.Duration
				n := 0
				for b.Loop() {
					if n%2 == 0 {
						tNone += timed(none)
						tWith += timed(with)
					} else {
						tWith += timed(with)
						tNone += timed(none)
					}
					n++
				}
				ops := float64(n * kind.batch)
				b.ReportMetric(float64(tNone.Nanoseconds())/ops, "none-ns/op")
				b.ReportMetric(float64(tWith.Nanoseconds())/ops, "observed-ns/op")
				b.ReportMetric(float64(tWith)/float64(tNone), "x")
			})
		}
	}
}
