package oteltoolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/oteltoolset"
)

// callAllocs returns the allocations of one call and of one turn of a
// prefixed tool in a run with opts.
func callAllocs(t *testing.T, opts ...toolset.RunOption) (call, turn float64) {
	t.Helper()
	return callAllocsUnder(t, context.Background(), opts...)
}

// callAllocsUnder is callAllocs with the turns under ctx.
func callAllocsUnder(t *testing.T, ctx context.Context, opts ...toolset.RunOption) (call, turn float64) {
	t.Helper()
	run := toolset.NewRun("allocs", opts...)
	defer run.End()
	ts := toolset.NewFunction(benchTool("get_weather")).Prefixed("w")
	tc := run.Turn(ctx)
	tools, err := toolset.BuildTools(tc, "allocs", ts)
	require.NoError(t, err)
	args := json.RawMessage(`{"city":"Paris","days":3}`)
	call = testing.AllocsPerRun(200, func() {
		if _, err := tools.Execute(tc, toolset.ToolCall{ID: "c", Name: "w_get_weather", Args: args}); err != nil {
			t.Fatal(err)
		}
	})
	turn = testing.AllocsPerRun(200, func() {
		if _, err := toolset.BuildTools(run.Turn(ctx), "allocs", ts); err != nil {
			t.Fatal(err)
		}
	})
	return call, turn
}

// An observer on the no-op providers costs a call and a turn no
// allocation: nothing is built for a span or a metric nobody records.
func TestNoopProvidersAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	obs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tracenoop.NewTracerProvider()),
		oteltoolset.WithMeterProvider(noop.NewMeterProvider()))
	require.NoError(t, err)
	noneCall, noneTurn := callAllocs(t)
	call, turn := callAllocs(t, toolset.WithObserver(obs))
	assert.Equal(t, noneCall, call, "allocations of a call: none observed, then observed on the no-op providers")
	assert.Equal(t, noneTurn, turn, "allocations of a turn: none observed, then observed on the no-op providers")
}

// wrappedTP and wrappedMP are providers of an application's own, which
// hand out the no-op tracer and meter.
type wrappedTP struct{ tracenoop.TracerProvider }

type wrappedMP struct{ noop.MeterProvider }

// An observer whose spans and metrics would not be recorded costs a call
// and a turn no allocation more than no observer, on the no-op providers
// and on providers that hand out their no-op tracer and meter.
func TestUnrecordedObserverAllocatesNothingMore(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	noneCall, noneTurn := callAllocs(t)
	for name, opts := range map[string][]oteltoolset.Option{
		"no-op providers": {oteltoolset.WithTracerProvider(tracenoop.NewTracerProvider()),
			oteltoolset.WithMeterProvider(noop.NewMeterProvider())},
		"wrapped no-op providers": {oteltoolset.WithTracerProvider(wrappedTP{}),
			oteltoolset.WithMeterProvider(wrappedMP{})},
	} {
		obs, err := oteltoolset.New(opts...)
		require.NoError(t, err)
		assert.False(t, obs.Enabled(context.Background()), name)
		call, turn := callAllocs(t, toolset.WithObserver(obs))
		assert.LessOrEqual(t, call, noneCall, "%s: allocations of a call, beyond those of no observer", name)
		assert.LessOrEqual(t, turn, noneTurn, "%s: allocations of a turn, beyond those of no observer", name)
	}
	// A tracer that may record is enabled: only its sampler can tell.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tp), oteltoolset.WithMeterProvider(noop.NewMeterProvider()))
	require.NoError(t, err)
	assert.True(t, obs.Enabled(context.Background()))
}

// A sampler that drops every span leaves the calls' metrics recorded, and
// records no span.
func TestDroppedSpansKeepTheMetrics(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tp), oteltoolset.WithMeterProvider(mp))
	require.NoError(t, err)
	h := &harness{spans: spans, reader: reader, tp: tp, obs: obs}
	run := h.run(t, "dropped")
	tc := run.Turn(context.Background())
	tools, err := toolset.BuildTools(tc, "agent", toolset.NewFunction(benchTool("get_weather")))
	require.NoError(t, err)
	for range 3 {
		_, err := tools.Execute(tc, toolset.ToolCall{ID: "c", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","days":3}`)})
		require.NoError(t, err)
	}
	_, err = tools.Execute(tc, toolset.ToolCall{ID: "c", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","days":99}`)})
	require.Error(t, err)
	assert.Empty(t, spans.Ended(), "spans the sampler dropped")
	n, unit := h.histogram(t, "gen_ai.execute_tool.duration", attribute.String("gen_ai.tool.name", "get_weather"))
	assert.Equal(t, uint64(4), n)
	assert.Equal(t, "s", unit)
	n, _ = h.histogram(t, "gen_ai.execute_tool.duration", attribute.String("error.type", "invalid_arguments"))
	assert.Equal(t, uint64(1), n, "the failed call's duration has its error.type")
}

// The attributes a tool's spans share are made once, and made again when
// the tool's description changes.
func TestSpanFollowsAChangedDescription(t *testing.T) {
	h := newHarness(t)
	run := h.run(t, "desc")
	for i, desc := range []string{"First words.", "Second words."} {
		tool := toolset.NewTool("get_weather", desc, func(_ context.Context, in benchArgs) (string, error) { return in.City, nil })
		tc := run.Turn(context.Background())
		tools, err := toolset.BuildTools(tc, "agent", toolset.NewFunction(tool))
		require.NoError(t, err)
		_, err = tools.Execute(tc, toolset.ToolCall{ID: "c", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","days":3}`)})
		require.NoError(t, err)
		spans := h.named("execute_tool get_weather")
		require.Len(t, spans, i+1)
		assert.Contains(t, spans[i].Attributes(), attribute.String("gen_ai.tool.description", desc))
	}
}

// toolSampler samples the spans of one tool by the attributes a sampler
// is given, and records what it was given.
type toolSampler struct {
	tool string
	seen []attribute.KeyValue
}

func (s *toolSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	s.seen = append(s.seen[:0], p.Attributes...)
	for _, a := range p.Attributes {
		if a.Key == "gen_ai.tool.name" && a.Value.AsString() == s.tool {
			return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
		}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.Drop}
}

func (s *toolSampler) Description() string { return "by tool" }

// A sampler is given the operation and the tool's name, and can sample by
// them; a recorded span still gets every attribute; a dropped one costs
// the SDK's span and context, and no copy of the tool's attributes.
func TestSamplersSeeTheToolAndDroppedSpansCopyNothing(t *testing.T) {
	sampler := &toolSampler{tool: "w_get_weather"}
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tp), oteltoolset.WithMeterProvider(noop.NewMeterProvider()))
	require.NoError(t, err)
	run := toolset.NewRun("sampled", toolset.WithObserver(obs))
	defer run.End()
	tc := run.Turn(context.Background())
	tools, err := toolset.BuildTools(tc, "agent", toolset.NewFunction(benchTool("get_weather"), benchTool("other")).Prefixed("w"))
	require.NoError(t, err)
	for _, name := range []string{"w_get_weather", "w_other"} {
		_, err := tools.Execute(tc, toolset.ToolCall{ID: "c", Name: name, Args: json.RawMessage(`{"city":"Paris","days":3}`)})
		require.NoError(t, err)
	}
	assert.Contains(t, sampler.seen, attribute.String("gen_ai.operation.name", "execute_tool"))
	assert.Contains(t, sampler.seen, attribute.String("gen_ai.tool.name", "w_other"))
	var recorded []string
	for _, s := range spans.Ended() {
		if s.Name() == "execute_tool w_get_weather" {
			recorded = append(recorded, s.Name())
			assert.Contains(t, s.Attributes(), attribute.String(string(oteltoolset.KeyOriginalName), "get_weather"))
			assert.Contains(t, s.Attributes(), attribute.String("gen_ai.tool.type", "function"))
		}
		assert.NotEqual(t, "execute_tool w_other", s.Name(), "the sampler dropped it")
	}
	assert.Len(t, recorded, 1)

	if raceEnabled {
		return
	}
	dropTP := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	t.Cleanup(func() { _ = dropTP.Shutdown(context.Background()) })
	dropObs, err := oteltoolset.New(oteltoolset.WithTracerProvider(dropTP), oteltoolset.WithMeterProvider(noop.NewMeterProvider()))
	require.NoError(t, err)
	noneCall, _ := callAllocs(t)
	call, _ := callAllocs(t, toolset.WithObserver(dropObs))
	// The SDK's Start allocates the span, its context and the sampler's
	// copy of the start attributes; nothing else is allocated.
	assert.LessOrEqual(t, call, noneCall+3, "allocations of a call whose span is dropped")
}

// Each call's span describes its own tool, however many tools share the
// observer's cache of recent tools.
func TestManyToolsKeepTheirOwnAttributes(t *testing.T) {
	h := newHarness(t)
	run := h.run(t, "many")
	const n = 600 // more than the cache has slots
	tools := make([]toolset.Tool, n)
	for i := range tools {
		tools[i] = toolset.NewTool(fmt.Sprint("t", i), "One of many tools.",
			func(_ context.Context, in benchArgs) (string, error) { return in.City, nil })
	}
	tc := run.Turn(context.Background())
	list, err := toolset.BuildTools(tc, "agent", toolset.NewFunction(tools...).Prefixed("p"))
	require.NoError(t, err)
	for range 2 {
		for i := range n {
			_, err := list.Execute(tc, toolset.ToolCall{ID: "c", Name: fmt.Sprint("p_t", i), Args: json.RawMessage(`{"city":"Paris","days":3}`)})
			require.NoError(t, err)
		}
	}
	for i := range n {
		spans := h.named(fmt.Sprint("execute_tool p_t", i))
		require.Len(t, spans, 2, "tool %d", i)
		for _, s := range spans {
			assert.Contains(t, s.Attributes(), attribute.String("gen_ai.tool.name", fmt.Sprint("p_t", i)))
			assert.Contains(t, s.Attributes(), attribute.String(string(oteltoolset.KeyOriginalName), fmt.Sprint("t", i)))
		}
	}
}

// With parent-based sampling, a call under a turn whose span the sampler
// dropped, and a call and a turn under a span it dropped, cost no
// allocation more than no observer; a root turn whose span the sampler
// dropped costs the SDK's span and what remembers the turn for its calls.
func TestParentBasedSamplingAllocatesNothingMoreUnderADroppedSpan(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tp), oteltoolset.WithMeterProvider(noop.NewMeterProvider()),
		oteltoolset.WithParentBasedSampling())
	require.NoError(t, err)
	noneCall, noneTurn := callAllocs(t)
	call, turn := callAllocs(t, toolset.WithObserver(obs))
	assert.Equal(t, noneCall, call, "allocations of a call under a dropped root turn, then of no observer")
	// The SDK's span, its context and its copy of the start attributes;
	// the turn's observation, and the library's, with the context the
	// toolsets list their tools under.
	assert.LessOrEqual(t, turn, noneTurn+5, "allocations of a dropped root turn, beyond those of no observer")

	request, span := tp.Tracer("app").Start(context.Background(), "request")
	defer span.End()
	noneCall, noneTurn = callAllocsUnder(t, request)
	call, turn = callAllocsUnder(t, request, toolset.WithObserver(obs))
	assert.LessOrEqual(t, call, noneCall, "allocations of a call under a dropped span, beyond those of no observer")
	assert.LessOrEqual(t, turn, noneTurn, "allocations of a turn under a dropped span, beyond those of no observer")

	// Without the option, each call starts a span the sampler drops.
	plain, err := oteltoolset.New(oteltoolset.WithTracerProvider(tp), oteltoolset.WithMeterProvider(noop.NewMeterProvider()))
	require.NoError(t, err)
	call, _ = callAllocs(t, toolset.WithObserver(plain))
	assert.Greater(t, call, noneCall, "allocations of a call whose span is dropped, without the option")
}
