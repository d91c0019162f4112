package oteltoolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/oteltoolset"
)

// benchObserver is a way a run is observed in the benchmarks, and the
// context its turns begin under.
type benchObserver struct {
	name string
	opts []toolset.RunOption
	ctx  context.Context
}

// benchObservers are the ways a run is observed in the benchmarks: not at
// all, by an Observer on the no-op providers, by one on the SDK whose
// sampler drops every span (without metrics), by one with parent-based
// sampling on the SDK whose sampler drops every root span (without
// metrics), its turns under a span that was dropped ("dropped-parent") or
// root spans that are ("dropped-root"), and by one on the SDK with the
// in-memory span recorder and a manual metric reader; "global" is New()
// on the global providers with no SDK installed, whose tracer (the global
// delegate, for auto-instrumentation to attach to) is not the no-op one.
func benchObservers(b *testing.B) []benchObserver {
	noopObs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tracenoop.NewTracerProvider()),
		oteltoolset.WithMeterProvider(noop.NewMeterProvider()))
	if err != nil {
		b.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	sdkObs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tp), oteltoolset.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	// The SDK with a sampler that drops every span, and no metrics.
	dropTP := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(rec))
	b.Cleanup(func() { _ = dropTP.Shutdown(context.Background()) })
	dropObs, err := oteltoolset.New(oteltoolset.WithTracerProvider(dropTP), oteltoolset.WithMeterProvider(noop.NewMeterProvider()))
	if err != nil {
		b.Fatal(err)
	}
	// The SDK with a parent-based sampler that drops every root span, an
	// observer that knows it, and a request span the sampler dropped.
	parentTP := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
		sdktrace.WithSpanProcessor(rec))
	b.Cleanup(func() { _ = parentTP.Shutdown(context.Background()) })
	parentObs, err := oteltoolset.New(oteltoolset.WithTracerProvider(parentTP), oteltoolset.WithMeterProvider(noop.NewMeterProvider()),
		oteltoolset.WithParentBasedSampling())
	if err != nil {
		b.Fatal(err)
	}
	request, span := parentTP.Tracer("app").Start(context.Background(), "request")
	b.Cleanup(func() { span.End() })
	globalObs, err := oteltoolset.New()
	if err != nil {
		b.Fatal(err)
	}
	bg := context.Background()
	return []benchObserver{
		{"none", nil, bg},
		{"noop", []toolset.RunOption{toolset.WithObserver(noopObs)}, bg},
		{"dropped", []toolset.RunOption{toolset.WithObserver(dropObs)}, bg},
		{"dropped-parent", []toolset.RunOption{toolset.WithObserver(parentObs)}, request},
		{"dropped-root", []toolset.RunOption{toolset.WithObserver(parentObs)}, bg},
		{"global", []toolset.RunOption{toolset.WithObserver(globalObs)}, bg},
		{"sdk", []toolset.RunOption{toolset.WithObserver(sdkObs)}, bg},
	}
}

type benchArgs struct {
	City string `json:"city" jsonschema:"City name"`
	Days int    `json:"days" jsonschema:"minimum=1,maximum=14"`
}

func benchTool(name string) toolset.Tool {
	return toolset.NewTool(name, "A benchmark tool.", func(_ context.Context, in benchArgs) (string, error) { return in.City, nil })
}

// BenchmarkCall runs one call per iteration under a turn's context.
func BenchmarkCall(b *testing.B) {
	args := json.RawMessage(`{"city":"Paris","days":3}`)
	for _, o := range benchObservers(b) {
		b.Run(o.name, func(b *testing.B) {
			run := toolset.NewRun("bench-call-"+o.name, o.opts...)
			defer run.End()
			turn := run.Turn(o.ctx)
			tools, err := toolset.BuildTools(turn, "bench", toolset.NewFunction(benchTool("get_weather")).Prefixed("w"))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tools.Execute(turn, toolset.ToolCall{ID: "c", Name: "w_get_weather", Args: args}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTurn builds one turn per iteration over 10 prefixed toolsets
// of 10 tools, combined.
func BenchmarkTurn(b *testing.B) {
	children := make([]toolset.Toolset, 10)
	for s := range children {
		tools := make([]toolset.Tool, 10)
		for i := range tools {
			tools[i] = benchTool(fmt.Sprint("tool_", i))
		}
		children[s] = toolset.NewFunction(tools...).Prefixed(fmt.Sprint("ts", s))
	}
	tree := toolset.NewCombined(children...)
	for _, o := range benchObservers(b) {
		b.Run(o.name, func(b *testing.B) {
			run := toolset.NewRun("bench-turn-"+o.name, o.opts...)
			defer run.End()
			b.ReportAllocs()
			for b.Loop() {
				tools, err := toolset.BuildTools(run.Turn(o.ctx), "bench", tree)
				if err != nil || tools.Len() != 100 {
					b.Fatal(err, tools.Len())
				}
			}
		})
	}
}
