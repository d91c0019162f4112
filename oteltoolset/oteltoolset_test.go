package oteltoolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/oteltoolset"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is an observer on the SDK's in-memory span recorder and a
// manual metric reader.
type harness struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	obs    *oteltoolset.Observer
}

func newHarness(t *testing.T, opts ...oteltoolset.Option) *harness {
	t.Helper()
	return newSampledHarness(t, sdktrace.ParentBased(sdktrace.AlwaysSample()), opts...)
}

// newSampledHarness is a harness whose tracer provider has sampler.
func newSampledHarness(t *testing.T, sampler sdktrace.Sampler, opts ...oteltoolset.Option) *harness {
	t.Helper()
	h := &harness{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(h.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	t.Cleanup(func() {
		_ = h.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := oteltoolset.New(append([]oteltoolset.Option{
		oteltoolset.WithTracerProvider(h.tp), oteltoolset.WithMeterProvider(mp)}, opts...)...)
	require.NoError(t, err)
	h.obs = obs
	return h
}

func (h *harness) run(t *testing.T, id string, opts ...toolset.RunOption) *toolset.RunContext {
	t.Helper()
	run := toolset.NewRun(id, append([]toolset.RunOption{toolset.WithObserver(h.obs)}, opts...)...)
	require.NoError(t, run.Err())
	t.Cleanup(run.End)
	return run
}

// span returns the only ended span named name.
func (h *harness) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

func (h *harness) named(name string) []sdktrace.ReadOnlySpan {
	var found []sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	return found
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// sum returns the value of the counter name for the data points whose
// attributes include want.
func (h *harness) sum(t *testing.T, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if hasAll(dp.Attributes, want) {
					total += dp.Value
				}
			}
		}
	}
	return total
}

// histogram returns the count of the histogram name for the data points
// whose attributes include want, and its unit.
func (h *harness) histogram(t *testing.T, name string, want ...attribute.KeyValue) (count uint64, unit string) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			unit = m.Unit
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				if hasAll(dp.Attributes, want) {
					count += dp.Count
				}
			}
		}
	}
	return count, unit
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

type readArgs struct {
	Path string `json:"path" jsonschema:"The file to read"`
}

const secret = "s3cr3t-passport-number"

func readFile() toolset.Tool {
	return toolset.NewTool("read_file", "Read a file.", func(ctx context.Context, in readArgs) (string, error) {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "opening", Fraction: 0.25})
		if in.Path == "/missing" {
			return "", errors.New("no such file: " + in.Path)
		}
		return "contents of " + in.Path + ": " + secret, nil
	})
}

func TestCallSpanFollowsTheGenAIConventions(t *testing.T) {
	h := newHarness(t)
	run := h.run(t, "conventions")
	fs := toolset.NewFunction(readFile()).Prefixed("fs")
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "assistant", toolset.NewFunction(), fs)
	require.NoError(t, err)
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "call_1", Name: "fs_read_file", Args: json.RawMessage(`{"path":"/etc/motd"}`)})
	require.NoError(t, err)

	ts := h.span(t, "build_tools assistant")
	assert.Equal(t, trace.SpanKindInternal, ts.SpanKind())
	ta := attrs(ts)
	assert.Equal(t, "assistant", ta["gen_ai.agent.name"].AsString())
	assert.Equal(t, int64(1), ta[oteltoolset.KeyTools].AsInt64())
	assert.Positive(t, ta[oteltoolset.KeyDefinitionBytes].AsInt64())
	assert.Len(t, ta[oteltoolset.KeyFingerprint].AsString(), 32)
	assert.Equal(t, "conventions", ta[oteltoolset.KeyRunID].AsString())
	assert.Equal(t, int64(0), ta[oteltoolset.KeyStep].AsInt64())

	cs := h.span(t, "execute_tool fs_read_file")
	assert.Equal(t, trace.SpanKindInternal, cs.SpanKind())
	assert.Equal(t, ts.SpanContext().SpanID(), cs.Parent().SpanID(), "the call is a child of its turn")
	assert.Equal(t, ts.SpanContext().TraceID(), cs.SpanContext().TraceID())
	ca := attrs(cs)
	assert.Equal(t, "execute_tool", ca["gen_ai.operation.name"].AsString())
	assert.Equal(t, "fs_read_file", ca["gen_ai.tool.name"].AsString())
	assert.Equal(t, "call_1", ca["gen_ai.tool.call.id"].AsString())
	assert.Equal(t, "Read a file.", ca["gen_ai.tool.description"].AsString())
	assert.Equal(t, "function", ca["gen_ai.tool.type"].AsString())
	assert.Equal(t, "read_file", ca[oteltoolset.KeyOriginalName].AsString())
	assert.Equal(t, `Prefixed#1 "fs"`, ca[oteltoolset.KeyPath].AsString())
	assert.NotContains(t, ca, attribute.Key("error.type"))
	assert.Equal(t, codes.Unset, cs.Status().Code)
	require.Len(t, cs.Events(), 1)
	assert.Equal(t, oteltoolset.EventProgress, cs.Events()[0].Name)

	// The operation name is given when the span is made, so samplers see it.
	// (A span's first attributes are those given at creation.)
	assert.Equal(t, attribute.Key("gen_ai.operation.name"), cs.Attributes()[0].Key)

	n, unit := h.histogram(t, "gen_ai.execute_tool.duration",
		attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", "fs_read_file"))
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, "s", unit)
}

func TestFailedCallHasAnErrorType(t *testing.T) {
	h := newHarness(t)
	run := h.run(t, "failure")
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "a", toolset.NewFunction(readFile()))
	require.NoError(t, err)
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "c", Name: "read_file", Args: json.RawMessage(`{"path":"/missing"}`)})
	require.Error(t, err)
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "d", Name: "read_file", Args: json.RawMessage(`{"path":7}`)})
	require.Error(t, err)

	spans := h.named("execute_tool read_file")
	require.Len(t, spans, 2)
	assert.Equal(t, "tool_error", attrs(spans[0])["error.type"].AsString())
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	assert.Equal(t, "invalid_arguments", attrs(spans[1])["error.type"].AsString())
	n, _ := h.histogram(t, "gen_ai.execute_tool.duration", attribute.String("error.type", "tool_error"))
	assert.Equal(t, uint64(1), n)
}

// Arguments, results and error messages hold what users said: none of
// them is recorded without the options that ask for them.
func TestNothingSensitiveIsRecordedWithoutOptIn(t *testing.T) {
	calls := func(t *testing.T, h *harness) {
		run := h.run(t, "")
		turn := run.Turn(context.Background())
		tools, err := toolset.BuildTools(turn, "a", toolset.NewFunction(readFile()))
		require.NoError(t, err)
		_, err = tools.Execute(turn, toolset.ToolCall{ID: "ok", Name: "read_file", Args: json.RawMessage(`{"path":"/home/` + secret + `"}`)})
		require.NoError(t, err)
		_, err = tools.Execute(turn, toolset.ToolCall{ID: "bad", Name: "read_file", Args: json.RawMessage(`{"path":"/home/` + secret + `","x":1}`)})
		require.Error(t, err)
	}
	dump := func(h *harness) string {
		var b strings.Builder
		for _, s := range h.spans.Ended() {
			b.WriteString(s.Name() + " " + s.Status().Description + "\n")
			for _, kv := range s.Attributes() {
				b.WriteString(string(kv.Key) + "=" + kv.Value.String() + "\n")
			}
			for _, e := range s.Events() {
				for _, kv := range e.Attributes {
					b.WriteString(string(kv.Key) + "=" + kv.Value.String() + "\n")
				}
			}
		}
		return b.String()
	}

	h := newHarness(t)
	calls(t, h)
	got := dump(h)
	assert.NotContains(t, got, secret)
	assert.NotContains(t, got, "gen_ai.tool.call.arguments")
	assert.NotContains(t, got, "gen_ai.tool.call.result")
	failed := h.named("execute_tool read_file")[1]
	assert.Equal(t, "invalid_arguments", failed.Status().Description)

	h = newHarness(t, oteltoolset.WithArguments(), oteltoolset.WithResults())
	calls(t, h)
	spans := h.named("execute_tool read_file")
	require.Len(t, spans, 2)
	a := attrs(spans[0])
	assert.JSONEq(t, `{"path":"/home/`+secret+`"}`, a["gen_ai.tool.call.arguments"].AsString())
	assert.Equal(t, "contents of /home/"+secret+": "+secret, a["gen_ai.tool.call.result"].AsString())
	assert.Contains(t, spans[1].Status().Description, "x", "the error's message, with results")
}

func TestPolicyDecisionsAreAttributesAndMetrics(t *testing.T) {
	h := newHarness(t)
	run := h.run(t, "policies")
	var runs atomic.Int64
	cached := toolset.NewTool("lookup", "Look up.", func(context.Context, struct{}) (int64, error) { return runs.Add(1), nil },
		toolset.WithCache(toolset.CachePolicy{}))
	limited := toolset.NewTool("send", "Send.", func(context.Context, struct{}) (int, error) { return 1, nil },
		toolset.WithRateLimit(toolset.RateLimit{Requests: 1, Interval: time.Hour, Reject: true}))
	pay := toolset.NewTool("pay", "Pay.", func(context.Context, struct{}) (int, error) { return 1, nil },
		toolset.WithApprovalRequired(toolset.Always))
	flaky := toolset.NewTool("flaky", "Fails.", func(context.Context, struct{}) (int, error) { return 0, errors.New("down") },
		toolset.WithMaxFailures(3))
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "a", toolset.NewFunction(cached, limited, pay, flaky))
	require.NoError(t, err)
	exec := func(id, name string) error {
		_, err := tools.Execute(turn, toolset.ToolCall{ID: id, Name: name, Args: json.RawMessage(`{}`)})
		return err
	}
	require.NoError(t, exec("1", "lookup"))
	require.NoError(t, exec("2", "lookup"))
	require.NoError(t, exec("3", "send"))
	require.Error(t, exec("4", "send"))
	require.Error(t, exec("p", "pay"))
	run.RecordApproval(toolset.ToolCall{ID: "p", Name: "pay", Args: json.RawMessage(`{}`)})
	require.NoError(t, exec("p", "pay"))
	run.RecordDenial(toolset.ToolCall{ID: "p", Name: "pay", Args: json.RawMessage(`{}`)}, "no")
	require.Error(t, exec("p", "pay"))
	require.Error(t, exec("f", "flaky"))

	lookups := h.named("execute_tool lookup")
	require.Len(t, lookups, 2)
	assert.Equal(t, "miss", attrs(lookups[0])[oteltoolset.KeyCacheResult].AsString())
	assert.Equal(t, "hit", attrs(lookups[1])[oteltoolset.KeyCacheResult].AsString())
	sends := h.named("execute_tool send")
	require.Len(t, sends, 2)
	assert.NotContains(t, attrs(sends[0]), oteltoolset.KeyRateLimitReject)
	assert.True(t, attrs(sends[1])[oteltoolset.KeyRateLimitReject].AsBool())
	assert.Equal(t, "rate_limited", attrs(sends[1])["error.type"].AsString())
	pays := h.named("execute_tool pay")
	require.Len(t, pays, 3)
	for i, want := range []string{"asked", "granted", "denied"} {
		assert.Equal(t, want, attrs(pays[i])[oteltoolset.KeyApproval].AsString())
	}
	assert.Equal(t, "approval_required", attrs(pays[0])["error.type"].AsString())
	assert.Equal(t, int64(2), attrs(h.span(t, "execute_tool flaky"))[oteltoolset.KeyFailuresLeft].AsInt64())

	tool := func(n string) attribute.KeyValue { return attribute.String("gen_ai.tool.name", n) }
	assert.Equal(t, int64(1), h.sum(t, "toolset.cache.lookups", tool("lookup"), oteltoolset.KeyCacheResult.String("hit")))
	assert.Equal(t, int64(1), h.sum(t, "toolset.cache.lookups", tool("lookup"), oteltoolset.KeyCacheResult.String("miss")))
	assert.Equal(t, int64(1), h.sum(t, "toolset.rate_limit.rejections", tool("send")))
	assert.Equal(t, int64(0), h.sum(t, "toolset.rate_limit.waits"))
	for _, d := range []string{"asked", "granted", "denied"} {
		assert.Equal(t, int64(1), h.sum(t, "toolset.approvals", tool("pay"), oteltoolset.KeyApproval.String(d)), d)
	}
	n, _ := h.histogram(t, "gen_ai.execute_tool.duration")
	assert.Equal(t, uint64(8), n)
}

func TestRateLimitWaitIsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		run := h.run(t, "wait")
		send := toolset.NewTool("send", "Send.", func(context.Context, struct{}) (int, error) { return 1, nil },
			toolset.WithRateLimit(toolset.RateLimit{Requests: 1, Interval: time.Minute}))
		turn := run.Turn(context.Background())
		tools, err := toolset.BuildTools(turn, "a", toolset.NewFunction(send))
		require.NoError(t, err)
		for range 2 {
			_, err := tools.Execute(turn, toolset.ToolCall{Name: "send", Args: json.RawMessage(`{}`)})
			require.NoError(t, err)
		}
		spans := h.named("execute_tool send")
		require.Len(t, spans, 2)
		assert.NotContains(t, attrs(spans[0]), oteltoolset.KeyRateLimitWait)
		assert.InDelta(t, 60, attrs(spans[1])[oteltoolset.KeyRateLimitWait].AsFloat64(), 0.01)
		assert.Equal(t, int64(1), h.sum(t, "toolset.rate_limit.waits", attribute.String("gen_ai.tool.name", "send")))
	})
}

func TestDeferredToolIsMarked(t *testing.T) {
	h := newHarness(t)
	run := h.run(t, "deferred")
	hidden := toolset.NewFunction(toolset.NewTool("weather_forecast", "Weather forecast for a city.",
		func(context.Context, struct{}) (int, error) { return 1, nil }, toolset.WithDeferred()))
	search := toolset.NewToolSearch(hidden)
	ctx := toolset.NewContext(context.Background(), run)
	_, err := toolset.BuildTools(run.Turn(context.Background()), "a", hidden, search)
	require.NoError(t, err)
	assert.Equal(t, int64(1), attrs(h.named("build_tools a")[0])[oteltoolset.KeyUnrevealed].AsInt64())
	_, err = search.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"query":"weather"}`)})
	require.NoError(t, err)
	tools, err := toolset.BuildTools(run.Turn(context.Background()), "a", hidden, search)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "weather_forecast", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, "revealed", attrs(h.span(t, "execute_tool weather_forecast"))[oteltoolset.KeyDeferred].AsString())
}

// A turn whose tools differ from the run's previous turn's says so: the
// provider's prompt cache was just invalidated.
func TestFingerprintChangeWithinARunIsAnEvent(t *testing.T) {
	h := newHarness(t)
	run := h.run(t, "changes")
	var show atomic.Bool
	extra := toolset.NewFunction(readFile()).Filtered(func(context.Context, toolset.Tool) (bool, error) { return show.Load(), nil })
	base := toolset.NewFunction(toolset.NewTool("echo", "Echo.", func(context.Context, struct{}) (int, error) { return 1, nil }))
	for _, s := range []bool{false, false, true, true} {
		show.Store(s)
		_, err := toolset.BuildTools(run.Turn(context.Background()), "a", base, extra)
		require.NoError(t, err)
	}
	turns := h.named("build_tools a")
	require.Len(t, turns, 4)
	var changed []int
	for i, s := range turns {
		for _, e := range s.Events() {
			if e.Name == oteltoolset.EventToolsChanged {
				changed = append(changed, i)
				prev := attrs(turns[i-1])[oteltoolset.KeyFingerprint].AsString()
				assert.Contains(t, e.Attributes, oteltoolset.KeyPrevFingerprint.String(prev))
			}
		}
	}
	assert.Equal(t, []int{2}, changed, "only the turn that showed another tool")
	assert.Equal(t, int64(2), attrs(turns[2])[oteltoolset.KeyTools].AsInt64())
}

// A name the model made up cannot grow the metrics' cardinality, nor a
// span name without bound.
func TestUnknownToolNamesAreBounded(t *testing.T) {
	h := newHarness(t)
	run := h.run(t, "unknown")
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "a", toolset.NewFunction(readFile()))
	require.NoError(t, err)
	long := strings.Repeat("x", 10_000)
	_, err = tools.Execute(turn, toolset.ToolCall{ID: long, Name: long, Args: json.RawMessage(`{}`)})
	require.Error(t, err)
	spans := h.spans.Ended()
	s := spans[len(spans)-1]
	assert.LessOrEqual(t, len(s.Name()), len("execute_tool ")+64)
	assert.LessOrEqual(t, len(attrs(s)["gen_ai.tool.call.id"].AsString()), 128)
	assert.LessOrEqual(t, len(attrs(s)["gen_ai.tool.name"].AsString()), 64)
	assert.Equal(t, "unknown_tool", attrs(s)["error.type"].AsString())
	n, _ := h.histogram(t, "gen_ai.execute_tool.duration", attribute.String("gen_ai.tool.name", "_OTHER"))
	assert.Equal(t, uint64(1), n)
}

// A call under a span of the caller's own is that span's child.
func TestCallUnderASpanOfItsOwnIsItsChild(t *testing.T) {
	h := newHarness(t)
	run := h.run(t, "own-span")
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "a", toolset.NewFunction(readFile()))
	require.NoError(t, err)
	ctx, span := h.tp.Tracer("test").Start(turn, "handle calls")
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "read_file", Args: json.RawMessage(`{"path":"/x"}`)})
	require.NoError(t, err)
	span.End()
	assert.Equal(t, span.SpanContext().SpanID(), h.span(t, "execute_tool read_file").Parent().SpanID())
}

// agent is an Agent named research that runs a function.
type agent func(ctx context.Context, prompt string) (string, error)

func (agent) Name() string                                             { return "research" }
func (agent) Description() string                                      { return "Research." }
func (a agent) Run(ctx context.Context, prompt string) (string, error) { return a(ctx, prompt) }

// A sub-agent's turns and calls are in the trace of the call that runs it.
func TestSubAgentIsInTheCallersTrace(t *testing.T) {
	h := newHarness(t)
	run := h.run(t, "parent")
	sub := agent(func(ctx context.Context, prompt string) (string, error) {
		child := toolset.FromContext(ctx)
		turn := child.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "sub", toolset.NewFunction(readFile()))
		if err != nil {
			return "", err
		}
		res, err := tools.Execute(turn, toolset.ToolCall{Name: "read_file", Args: json.RawMessage(`{"path":"/x"}`)})
		if err != nil {
			return "", err
		}
		return res.(string), nil
	})
	agentTool := toolset.NewAgentTool(sub)
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "main", toolset.NewFunction(agentTool))
	require.NoError(t, err)
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "a1", Name: "research", Args: json.RawMessage(`{"prompt":"go"}`)})
	require.NoError(t, err)
	outer := h.span(t, "execute_tool research")
	subTurn := h.span(t, "build_tools sub")
	inner := h.span(t, "execute_tool read_file")
	assert.Equal(t, outer.SpanContext().SpanID(), subTurn.Parent().SpanID())
	assert.Equal(t, subTurn.SpanContext().SpanID(), inner.Parent().SpanID())
	assert.Equal(t, "parent", attrs(subTurn)[oteltoolset.KeyParentRunID].AsString())
}
