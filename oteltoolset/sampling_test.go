package oteltoolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/oteltoolset"
)

// countingSampler is a sampler that counts the spans it is asked about.
type countingSampler struct {
	sdktrace.Sampler
	asked atomic.Int64
}

func (s *countingSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	s.asked.Add(1)
	return s.Sampler.ShouldSample(p)
}

// runIDs numbers the runs of the sampling tests, whose runs are live at
// once.
var runIDs atomic.Int64

func runID(name string) string { return fmt.Sprint(name, "-", runIDs.Add(1)) }

// seen records the span contexts that tools and toolsets ran under.
type seen struct {
	mu  sync.Mutex
	scs map[string][]trace.SpanContext
}

func (s *seen) add(what string, ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scs == nil {
		s.scs = make(map[string][]trace.SpanContext)
	}
	s.scs[what] = append(s.scs[what], trace.SpanContextFromContext(ctx))
}

// listing is a toolset that records the span it lists its tools under.
type listing struct {
	seen  *seen
	tools []toolset.Tool
}

func (l listing) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	l.seen.add("list", ctx)
	return l.tools, nil
}

// scenario runs what the sampling tests observe, in a run of h: a root
// turn whose calls run under its context and under a span of the
// caller's own, one of them a sub-agent with a turn and a call of its
// own, and a turn under a request span, in the run id. It returns the number of calls
// and what the tools and toolsets ran under.
func scenario(t *testing.T, h *harness, id string) (calls int, s *seen) {
	t.Helper()
	s = new(seen)
	weather := toolset.NewTool("get_weather", "Get the weather.", func(ctx context.Context, in benchArgs) (string, error) {
		s.add("tool", ctx)
		return in.City, nil
	})
	sub := agent(func(ctx context.Context, _ string) (string, error) {
		turn := toolset.FromContext(ctx).Turn(ctx)
		tools, err := toolset.BuildTools(turn, "sub", listing{s, []toolset.Tool{readFile()}})
		if err != nil {
			return "", err
		}
		res, err := tools.Execute(turn, toolset.ToolCall{ID: "r1", Name: "read_file", Args: json.RawMessage(`{"path":"/x"}`)})
		if err != nil {
			return "", err
		}
		return res.(string), nil
	})
	ts := listing{s, []toolset.Tool{weather, toolset.NewAgentTool(sub)}}
	ok := json.RawMessage(`{"city":"Paris","days":3}`)
	execute := func(ctx context.Context, tools *toolset.ToolList, id, name string, args json.RawMessage) error {
		calls++
		_, err := tools.Execute(ctx, toolset.ToolCall{ID: id, Name: name, Args: args})
		return err
	}

	run := h.run(t, id)
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "agent", ts)
	require.NoError(t, err)
	require.NoError(t, execute(turn, tools, "c1", "get_weather", ok))
	require.Error(t, execute(turn, tools, "c2", "get_weather", json.RawMessage(`{"city":"Paris","days":99}`)))
	own, span := h.tp.Tracer("app").Start(turn, "handle calls")
	require.NoError(t, execute(own, tools, "c3", "get_weather", ok))
	span.End()
	require.NoError(t, execute(turn, tools, "a1", "research", json.RawMessage(`{"prompt":"go"}`)))
	calls++ // the sub-agent's

	request, span := h.tp.Tracer("app").Start(context.Background(), "request")
	turn = run.Turn(request)
	tools, err = toolset.BuildTools(turn, "agent", ts)
	require.NoError(t, err)
	require.NoError(t, execute(turn, tools, "c4", "get_weather", ok))
	span.End()
	return calls, s
}

// tree describes the ended spans of h, each by its name, its parent's
// name, its attributes, events and status, sorted: what two runs of the
// scenario share.
func tree(h *harness) []string {
	names := make(map[trace.SpanID]string)
	for _, s := range h.spans.Ended() {
		names[s.SpanContext().SpanID()] = s.Name()
	}
	var out []string
	for _, s := range h.spans.Ended() {
		parent := "(root)"
		if s.Parent().IsValid() {
			parent = names[s.Parent().SpanID()]
		}
		var kvs []string
		for _, kv := range s.Attributes() {
			kvs = append(kvs, string(kv.Key)+"="+kv.Value.String())
		}
		sort.Strings(kvs)
		var events []string
		for _, e := range s.Events() {
			events = append(events, e.Name)
		}
		out = append(out, fmt.Sprintf("%s <- %s %v %v %s", s.Name(), parent, kvs, events, s.Status()))
	}
	sort.Strings(out)
	return out
}

// With parent-based sampling and a sampler that drops every root span,
// nothing is recorded, only the root spans are put to the sampler, the
// calls' metrics are recorded, and what tools and toolsets do is under a
// dropped span.
// Without metrics, the calls under the dropped root turn are declined
// before anything is made for them, and their tools run under the turn's
// dropped span all the same.
func TestParentBasedSamplingStartsNoSpanUnderADroppedOne(t *testing.T) {
	for _, metrics := range []bool{true, false} {
		opts := []oteltoolset.Option{oteltoolset.WithParentBasedSampling()}
		if !metrics {
			opts = append(opts, oteltoolset.WithMeterProvider(noop.NewMeterProvider()))
		}
		sampler := &countingSampler{Sampler: sdktrace.ParentBased(sdktrace.NeverSample())}
		h := newSampledHarness(t, sampler, opts...)
		calls, s := scenario(t, h, runID("sampling"))
		assert.Empty(t, h.spans.Started(), "metrics=%v: spans recorded", metrics)
		// The root turn, and the caller's own spans: "handle calls" and
		// "request". The turns and calls under them start no span.
		assert.Equal(t, int64(3), sampler.asked.Load(), "metrics=%v: spans put to the sampler", metrics)
		if metrics {
			n, _ := h.histogram(t, "gen_ai.execute_tool.duration")
			assert.Equal(t, uint64(calls), n, "calls measured")
		}
		require.Len(t, s.scs["tool"], 3)
		require.Len(t, s.scs["list"], 3)
		for _, sc := range slices.Concat(s.scs["tool"], s.scs["list"]) {
			assert.True(t, sc.IsValid() && !sc.IsSampled(), "metrics=%v: tools and toolsets run under a dropped span: %v", metrics, sc)
		}
	}

	// Without the option, every turn and call is put to the sampler.
	sampler := &countingSampler{Sampler: sdktrace.ParentBased(sdktrace.NeverSample())}
	h := newSampledHarness(t, sampler)
	calls, _ := scenario(t, h, runID("sampling"))
	assert.Empty(t, h.spans.Started(), "spans recorded")
	assert.Equal(t, int64(2+3+calls), sampler.asked.Load(), "spans put to the sampler")
}

// With parent-based sampling and a sampler that keeps every root span,
// the spans are those recorded without the option, in the same tree; a
// turn under a remote parent that was not sampled records nothing either
// way.
func TestParentBasedSamplingRecordsWhatTheSamplerKeeps(t *testing.T) {
	noMetrics := oteltoolset.WithMeterProvider(noop.NewMeterProvider())
	var trees [4][]string
	for i, opts := range [][]oteltoolset.Option{nil, {oteltoolset.WithParentBasedSampling()},
		{noMetrics}, {noMetrics, oteltoolset.WithParentBasedSampling()}} {
		t.Run(fmt.Sprint("option=", i%2 == 1, ",metrics=", i < 2), func(t *testing.T) {
			h := newSampledHarness(t, sdktrace.ParentBased(sdktrace.AlwaysSample()), opts...)
			calls, _ := scenario(t, h, "sampling") // one run ID, for one tree
			trees[i] = tree(h)
			assert.Len(t, h.named("execute_tool get_weather"), 4)
			assert.Len(t, h.named("build_tools agent"), 2)
			assert.Len(t, h.spans.Ended(), 2+2+calls+1, "the turns, the app's two spans, the calls and the sub-agent's turn")

			remote := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, Remote: true}))
			run := h.run(t, "remote")
			turn := run.Turn(remote)
			tools, err := toolset.BuildTools(turn, "remote", toolset.NewFunction(benchTool("get_weather")))
			require.NoError(t, err)
			_, err = tools.Execute(turn, toolset.ToolCall{ID: "c", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","days":3}`)})
			require.NoError(t, err)
			assert.Empty(t, h.named("build_tools remote"))
			assert.Len(t, h.spans.Ended(), len(trees[i]), "spans under the unsampled remote parent")
		})
	}
	require.NotEmpty(t, trees[0])
	assert.Equal(t, trees[0], trees[1], "the span tree without the option, then with it")
	assert.Equal(t, trees[0], trees[2], "the span tree without metrics")
	assert.Equal(t, trees[0], trees[3], "the span tree with the option, without metrics")
	assert.Contains(t, strings.Join(trees[0], "\n"), "execute_tool get_weather <- build_tools agent")
}

// Without parent-based sampling, a sampler that is not parent-based still
// decides each call: one it keeps is recorded under a parent that was not
// sampled. With the option it is not.
func TestWithoutParentBasedSamplingEverySpanIsPutToTheSampler(t *testing.T) {
	for _, parentBased := range []bool{false, true} {
		var opts []oteltoolset.Option
		if parentBased {
			opts = append(opts, oteltoolset.WithParentBasedSampling())
		}
		h := newSampledHarness(t, &toolSampler{tool: "get_weather"}, opts...)
		run := h.run(t, runID("by-tool"))
		request, span := h.tp.Tracer("app").Start(context.Background(), "request")
		require.False(t, span.SpanContext().IsSampled())
		turn := run.Turn(request)
		tools, err := toolset.BuildTools(turn, "agent", toolset.NewFunction(benchTool("get_weather")))
		require.NoError(t, err)
		_, err = tools.Execute(turn, toolset.ToolCall{ID: "c", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","days":3}`)})
		require.NoError(t, err)
		span.End()
		if parentBased {
			assert.Empty(t, h.spans.Ended(), "with the option")
			continue
		}
		s := h.span(t, "execute_tool get_weather")
		assert.Equal(t, span.SpanContext().SpanID(), s.Parent().SpanID(), "the call's parent is the dropped request span")
		assert.Len(t, h.spans.Ended(), 1)
	}
}

// Enabled reports false under a span that was not sampled, with
// parent-based sampling and no metric; with a metric, or without the
// option, it reports true.
func TestParentBasedSamplingIsNotEnabledUnderADroppedSpan(t *testing.T) {
	unsampled := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, Remote: true}))
	sampled := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, Remote: true}))
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	for _, c := range []struct {
		name                     string
		opts                     []oteltoolset.Option
		root, sampled, unsampled bool
	}{
		{"option", []oteltoolset.Option{oteltoolset.WithParentBasedSampling()}, true, true, false},
		{"option and metrics", []oteltoolset.Option{oteltoolset.WithParentBasedSampling(), oteltoolset.WithMeterProvider(mp)}, true, true, true},
		{"no option", nil, true, true, true},
	} {
		obs, err := oteltoolset.New(append([]oteltoolset.Option{oteltoolset.WithTracerProvider(tp),
			oteltoolset.WithMeterProvider(noop.NewMeterProvider())}, c.opts...)...)
		require.NoError(t, err)
		assert.Equal(t, c.root, obs.Enabled(context.Background()), "%s: root", c.name)
		assert.Equal(t, c.sampled, obs.Enabled(sampled), "%s: sampled parent", c.name)
		assert.Equal(t, c.unsampled, obs.Enabled(unsampled), "%s: unsampled parent", c.name)
	}
}

// recordTurns records the spans of turns without sampling them, and
// samples the others as the SDK's default sampler does.
type recordTurns struct{ asked atomic.Int64 }

func (s *recordTurns) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	s.asked.Add(1)
	if strings.HasPrefix(p.Name, "build_tools ") {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample()).ShouldSample(p)
}

func (s *recordTurns) Description() string { return "record turns" }

// With parent-based sampling, the calls of a turn whose span is recorded
// but not sampled start no span: the sampler would drop them.
func TestParentBasedSamplingFollowsARecordedUnsampledTurn(t *testing.T) {
	sampler := new(recordTurns)
	h := newSampledHarness(t, sampler, oteltoolset.WithParentBasedSampling())
	run := h.run(t, runID("record-only"))
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "agent", toolset.NewFunction(benchTool("get_weather")))
	require.NoError(t, err)
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "c", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","days":3}`)})
	require.NoError(t, err)
	turnSpan := h.span(t, "build_tools agent")
	assert.False(t, turnSpan.SpanContext().IsSampled())
	assert.Len(t, h.spans.Ended(), 1, "the turn's span only")
	assert.Equal(t, int64(1), sampler.asked.Load(), "spans put to the sampler")
}

// structContext is a context of struct type: comparable as a type, yet
// == on two of its values panics when its field holds a slice.
type structContext struct {
	context.Context
	v any
}

// A turn begun under a context of struct type is not remembered by its
// context, which == could panic on, but by its span: its calls under
// that same context are dropped all the same.
func TestParentBasedSamplingUnderAStructContext(t *testing.T) {
	sampler := &countingSampler{Sampler: sdktrace.ParentBased(sdktrace.NeverSample())}
	h := newSampledHarness(t, sampler, oteltoolset.WithParentBasedSampling())
	ctx := structContext{Context: context.Background(), v: []int{1}}
	tctx, turn := h.obs.StartTurn(ctx, toolset.TurnInfo{Agent: "a"})
	require.NotNil(t, turn, "a dropped root turn is remembered for its calls")
	for _, c := range []context.Context{ctx, tctx} {
		assert.NotPanics(t, func() {
			_, obs := h.obs.StartCall(c, toolset.CallInfo{Call: toolset.ToolCall{Name: "x"}, Turn: turn})
			if obs != nil { // measured: the harness's metrics are on
				obs.EndCall(toolset.CallEnd{})
			}
		})
	}
	turn.EndTurn(toolset.TurnEnd{})
	assert.Empty(t, h.spans.Ended())
	assert.Equal(t, int64(1), sampler.asked.Load(), "only the turn's span reached the sampler")
}
