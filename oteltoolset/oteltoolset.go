// Package oteltoolset reports the turns and tool calls of
// github.com/gotoolset/toolset to OpenTelemetry: a span per tool call and
// per turn, following the OpenTelemetry semantic conventions for
// generative AI, and metrics of the calls and their policies.
//
// Attach an [Observer] to each run:
//
//	obs, err := oteltoolset.New() // the global tracer and meter providers
//	run := toolset.NewRun(requestID, toolset.WithObserver(obs))
//
// # Spans
//
// A call is a span "execute_tool {gen_ai.tool.name}" of kind INTERNAL,
// with gen_ai.operation.name "execute_tool" (set when the span is made, so
// that samplers see it), gen_ai.tool.name, gen_ai.tool.call.id,
// gen_ai.tool.description, gen_ai.tool.type ("function") and, when the
// call fails, error.type (the error's kind, see [toolset.CallEnd]) and an
// error status. What the library knows of the call beyond the conventions
// is in attributes of its own namespace, toolset.*:
//
//	toolset.run.id, toolset.turn.step     the call's run and turn
//	toolset.tool.original_name            the name the tool was made with
//	toolset.tool.path                     where the composition got it: `Combined#0/Prefixed#1 "db"`
//	toolset.tool.deferred                 "revealed" or "unrevealed", for a deferred tool
//	toolset.cache.result                  "hit" or "miss"
//	toolset.rate_limit.wait               seconds waited for the rate limit
//	toolset.rate_limit.rejected           true when the rate limit refused the call
//	toolset.approval.decision             "asked", "granted" or "denied"
//	toolset.failures_left                 what is left of the tool's failure budget
//
// and its progress reports are events "toolset.progress" (the first 32 of
// a call; toolset.progress.dropped counts the others).
//
// A turn is a span "build_tools {gen_ai.agent.name}" of kind INTERNAL,
// with toolset.turn.tools (the tool count), toolset.turn.definition_bytes
// and toolset.turn.fingerprint (see [toolset.TurnEnd]). When the
// fingerprint differs from the run's previous turn, the span has an event
// "toolset.tools.changed" with toolset.turn.previous_fingerprint: the
// definitions the model is sent changed, and a provider's prompt cache was
// just invalidated. A call under the context of the turn that built its
// list (the context given to BuildTools, or one derived from it without a
// span of its own) is a child of the turn's span; otherwise it is a child
// of the span of its context. The turn's span is also the parent of what
// its toolsets do to list their tools (an MCP server's tools/list, say),
// and a call's span the parent of what the tool does.
//
// # Sampling and cost
//
// What every call of a tool shares (its span's name and the attributes
// that describe the tool) is made once per tool, and once per agent for
// turns. On the no-op tracer and meter providers, or providers that hand
// out their no-op tracer and meter, [Observer.Enabled] tells the library
// there is nothing to observe, and a call or a turn costs what it costs
// unobserved: no allocation, no attribute, no span.
//
// With the SDK, only starting a span tells whether the sampler keeps it
// (the trace API has no way to ask first): a span the sampler drops gets
// no attributes beyond those made once, but the SDK still allocates the
// span and its context, more than twice what an unobserved call costs.
// A call whose span is dropped records its metrics only when the meter
// provider is a real one.
//
// When the sampler follows the parent's decision, as the SDK's default
// ParentBased sampler does, say so with [WithParentBasedSampling]: a turn
// or a call under a span that was not sampled then starts no span at all,
// and with no metric enabled costs next to what it costs unobserved; the
// calls of a turn whose span the sampler dropped are declined by one
// comparison, before the library makes anything for them (see
// [toolset.CallDecliner]), and their tools run under the dropped span, so
// that what they do is dropped with it. The sampler then decides once per
// trace, at its root: give the turns a parent span of your own (the
// request's, say) and the sampler decides once per request, not once per
// turn. A turn that is a root still starts its span when the sampler
// drops it (the SDK's span, its context and its copy of the start
// attributes); its calls then cost what unobserved calls do, and under a
// dropped span of your own turns cost next to nothing too.
//
// [New] on the global providers with no SDK installed makes spans of the
// global tracer, which auto-instrumentation may attach to: those cost
// like spans the SDK drops.
//
// # Across processes
//
// [Propagator] carries a call's trace context to where its tool runs in
// another process, so that the work there is in the call's trace:
//
//	p := oteltoolset.Propagator(nil) // W3C Trace Context
//	remote := mcptoolset.NewCommand(cmd, mcptoolset.WithTracePropagator(p))
//	srv := mcptoolset.NewServer(ts, mcptoolset.WithServerTracePropagator(p))
//	store, err := toolpkg.Open(dir, &toolpkg.Options{Trace: p})
//
// Through MCP the client's call span is the remote parent of the server's
// turn span, and so the ancestor of its call span; a packaged tool reads
// its parent from TRACEPARENT. A traceparent the propagator cannot parse
// is ignored: the other side's spans begin a trace of their own. Package
// otelmcp adds the CLIENT and SERVER spans of each MCP tools/call, per the
// MCP semantic conventions.
//
// # Sensitive data
//
// A call's arguments and result hold what users and tools said, so they
// are recorded only when asked for: [WithArguments] records
// gen_ai.tool.call.arguments and [WithResults] records
// gen_ai.tool.call.result and the error's message as the span's status
// description (an argument error quotes the arguments). Both are cut to
// [MaxContentBytes]. Without them, the status description is the error's
// kind only. Tool names that the model made up (an unknown tool) are cut
// to 64 bytes in spans, and are "_OTHER" in metrics, so that a model
// cannot grow their cardinality.
//
// # Metrics
//
//	gen_ai.execute_tool.duration   histogram, s: the call's duration, with gen_ai.operation.name,
//	                               gen_ai.tool.name, gen_ai.tool.type and error.type
//	toolset.cache.lookups          counter: with toolset.cache.result ("hit", "miss")
//	toolset.rate_limit.waits       counter: calls that waited for their rate limit
//	toolset.rate_limit.rejections  counter: calls the rate limit refused
//	toolset.approvals              counter: with toolset.approval.decision ("asked", "granted", "denied")
//
// each with gen_ai.tool.name. The duration metric is the one the GenAI
// conventions define for tool execution (gen_ai.execute_tool.duration,
// in seconds, like gen_ai.client.operation.duration for model calls); the
// conventions are still in development, and the names here follow them as
// of OpenTelemetry semantic conventions 1.4x.
package oteltoolset

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/gotoolset/toolset/oteltoolset"

// MaxContentBytes bounds each recorded argument or result; longer ones are
// cut at a character boundary, and end with "…".
const MaxContentBytes = 16 << 10

// maxProgressEvents bounds the progress events of one call's span.
const maxProgressEvents = 32

// maxModelName bounds a tool name the model sent that no tool has.
const maxModelName = 64

// Attribute keys of the GenAI semantic conventions.
const (
	keyOperation   = attribute.Key("gen_ai.operation.name")
	keyToolName    = attribute.Key("gen_ai.tool.name")
	keyToolCallID  = attribute.Key("gen_ai.tool.call.id")
	keyToolDesc    = attribute.Key("gen_ai.tool.description")
	keyToolType    = attribute.Key("gen_ai.tool.type")
	keyToolArgs    = attribute.Key("gen_ai.tool.call.arguments")
	keyToolResult  = attribute.Key("gen_ai.tool.call.result")
	keyAgentName   = attribute.Key("gen_ai.agent.name")
	keyErrorType   = attribute.Key("error.type")
	operationValue = "execute_tool"
)

// Attribute keys of this library.
const (
	KeyRunID           = attribute.Key("toolset.run.id")
	KeyParentRunID     = attribute.Key("toolset.run.parent_id")
	KeyStep            = attribute.Key("toolset.turn.step")
	KeyOriginalName    = attribute.Key("toolset.tool.original_name")
	KeyPath            = attribute.Key("toolset.tool.path")
	KeyDeferred        = attribute.Key("toolset.tool.deferred")
	KeyCacheResult     = attribute.Key("toolset.cache.result")
	KeyRateLimitWait   = attribute.Key("toolset.rate_limit.wait")
	KeyRateLimitReject = attribute.Key("toolset.rate_limit.rejected")
	KeyApproval        = attribute.Key("toolset.approval.decision")
	KeyFailuresLeft    = attribute.Key("toolset.failures_left")
	KeyTools           = attribute.Key("toolset.turn.tools")
	KeyDefinitionBytes = attribute.Key("toolset.turn.definition_bytes")
	KeyFingerprint     = attribute.Key("toolset.turn.fingerprint")
	KeyPrevFingerprint = attribute.Key("toolset.turn.previous_fingerprint")
	KeyUnrevealed      = attribute.Key("toolset.turn.unrevealed")
	KeySpent           = attribute.Key("toolset.turn.spent")
	KeyProgressMessage = attribute.Key("toolset.progress.message")
	KeyProgressFrac    = attribute.Key("toolset.progress.fraction")
	KeyProgressDropped = attribute.Key("toolset.progress.dropped")
)

// Event names on spans.
const (
	EventToolsChanged = "toolset.tools.changed"
	EventProgress     = "toolset.progress"
)

// Option configures an [Observer].
type Option func(*config)

type config struct {
	tp            trace.TracerProvider
	mp            metric.MeterProvider
	args, results bool
	parentBased   bool
}

// WithTracerProvider sets the tracer provider; the default is
// otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the meter provider; the default is
// otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithArguments records each call's arguments (gen_ai.tool.call.arguments).
// They are sensitive: they hold what the model made of what users said.
func WithArguments() Option {
	return func(c *config) { c.args = true }
}

// WithResults records each call's result (gen_ai.tool.call.result, as
// JSON) and its error's message. They are sensitive: they hold what the
// tools returned.
func WithResults() Option {
	return func(c *config) { c.results = true }
}

// WithParentBasedSampling declares that the tracer provider's sampler
// follows the parent's decision: it drops every span whose parent span is
// valid and not sampled, as the SDK's default sampler does
// (sdktrace.ParentBased, unless told otherwise for unsampled parents).
// The Observer then starts no span under an unsampled parent, without
// asking the tracer: a turn or a call under the context of a span that
// was not sampled (a request's, say) costs next to what it costs
// unobserved, and the calls of a turn whose span the sampler dropped
// start no span either. Metrics are recorded as without the option.
//
// Without it, every turn and call starts its span and the sampler decides
// each: a sampler that is not parent-based may keep the child of an
// unsampled parent. With it and a sampler that is not parent-based, such
// children are lost, and so are recording-only spans under an unsampled
// parent.
func WithParentBasedSampling() Option {
	return func(c *config) { c.parentBased = true }
}

// Observer is a [toolset.Observer] that reports to OpenTelemetry. It is
// safe for concurrent use; one may serve every run of a program.
type Observer struct {
	tracer        trace.Tracer // nil for the no-op provider
	metrics       bool         // false for the no-op provider
	args, results bool
	parentBased   bool // see WithParentBasedSampling

	tools  sync.Map                               // toolKey → *toolAttrs
	ntools atomic.Int64                           // entries of tools
	recent [recentSlots]atomic.Pointer[toolAttrs] // in front of tools, by a hash of the name
	turns  sync.Map                               // agent name → *turnAttrs
	nturns atomic.Int64                           // entries of turns

	duration  metric.Float64Histogram
	cache     metric.Int64Counter
	waits     metric.Int64Counter
	rejects   metric.Int64Counter
	approvals metric.Int64Counter
}

var _ toolset.EnabledObserver = (*Observer)(nil)

// New returns an Observer. It fails only when the meter provider cannot
// make an instrument.
func New(opts ...Option) (*Observer, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	o := &Observer{args: c.args, results: c.results, parentBased: c.parentBased}
	// The no-op providers, or a provider of no-op tracers and meters
	// (one that wraps the no-op provider, say), record nothing.
	if _, noop := c.tp.(tracenoop.TracerProvider); !noop {
		o.tracer = c.tp.Tracer(ScopeName)
		if _, noop := o.tracer.(tracenoop.Tracer); noop {
			o.tracer = nil
		}
	}
	meter := c.mp.Meter(ScopeName)
	_, noopMP := c.mp.(metricnoop.MeterProvider)
	_, noopMeter := meter.(metricnoop.Meter)
	o.metrics = !noopMP && !noopMeter
	var err error
	if o.duration, err = meter.Float64Histogram("gen_ai.execute_tool.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of a tool execution."),
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)); err != nil {
		return nil, fmt.Errorf("oteltoolset: %w", err)
	}
	counters := []struct {
		into *metric.Int64Counter
		name string
		desc string
		unit string
	}{
		{&o.cache, "toolset.cache.lookups", "Lookups of tool result caches, by result.", "{lookup}"},
		{&o.waits, "toolset.rate_limit.waits", "Tool calls that waited for their rate limit.", "{call}"},
		{&o.rejects, "toolset.rate_limit.rejections", "Tool calls refused by their rate limit.", "{call}"},
		{&o.approvals, "toolset.approvals", "Approval decisions of tool calls: asked, granted, denied.", "{decision}"},
	}
	for _, k := range counters {
		if *k.into, err = meter.Int64Counter(k.name, metric.WithDescription(k.desc), metric.WithUnit(k.unit)); err != nil {
			return nil, fmt.Errorf("oteltoolset: %w", err)
		}
	}
	return o, nil
}

// turn is the observation of one turn.
type turn struct {
	o      *Observer
	span   trace.Span
	parent trace.SpanContext // the span of the context the turn began under
	// ctx is the context the turn began under, when it is a pointer (nil
	// otherwise): a call under the very same context is under the
	// turn's, which one comparison tells, and goes on under octx, ctx
	// with the turn's span.
	ctx, octx context.Context
	// dropped is set, with parent-based sampling only, on a turn whose
	// span is not recording, and unsampled on one whose span is not
	// sampled: with parent-based sampling, its calls start no span.
	dropped, unsampled bool
}

// under reports whether ctx is the context of the turn, or one derived
// from it without a span of its own.
func (t *turn) under(ctx context.Context) bool {
	return (t.ctx != nil && ctx == t.ctx) || t.parent.Equal(trace.SpanContextFromContext(ctx))
}

// comparableContext returns ctx when its dynamic type is a pointer, as
// the library's turn contexts and the standard library's are, and nil
// otherwise. Comparing pointers cannot panic; a comparable struct type
// can, when a field of interface type holds a value that is not.
func comparableContext(ctx context.Context) context.Context {
	if t := reflect.TypeOf(ctx); t != nil && t.Kind() == reflect.Pointer {
		return ctx
	}
	return nil
}

// unsampled reports whether sc is a valid span context that is not
// sampled: a parent-based sampler drops its children.
func unsampled(sc trace.SpanContext) bool {
	return sc.IsValid() && !sc.IsSampled()
}

// StartTurn implements [toolset.Observer].
func (o *Observer) StartTurn(ctx context.Context, info toolset.TurnInfo) (context.Context, toolset.TurnObservation) {
	if o.tracer == nil {
		return ctx, nil // nothing of a turn is measured but its span
	}
	parent := trace.SpanContextFromContext(ctx)
	if o.parentBased && unsampled(parent) {
		// The sampler would drop the span; the turn's calls are under
		// the same unsampled parent, and start none either.
		return ctx, nil
	}
	ta := o.turnAttrs(info.Agent)
	octx, span := o.tracer.Start(ctx, ta.spanName, ta.start...)
	t := turn{o: o, span: span, parent: parent, unsampled: !span.SpanContext().IsSampled()}
	if !span.IsRecording() {
		// What the turn's toolsets do to list their tools is under the
		// dropped span, and dropped with it by a parent-based sampler.
		if !o.parentBased || !t.unsampled {
			return octx, nil
		}
		// Remembered, so that the turn's calls are dropped by a
		// comparison.
		t.dropped = true
	}
	t.ctx, t.octx = comparableContext(ctx), octx
	if t.dropped {
		return octx, t.onHeap()
	}
	ctx = octx
	if info.RunID != "" {
		t.span.SetAttributes(KeyRunID.String(info.RunID), KeyStep.Int(info.Step))
	}
	if info.ParentRunID != "" {
		t.span.SetAttributes(KeyParentRunID.String(info.ParentRunID))
	}
	return ctx, t.onHeap()
}

// onHeap returns a copy of t: a turn whose span is dropped and not
// remembered allocates none.
func (t turn) onHeap() *turn { return &t }

var _ toolset.CallDecliner = (*turn)(nil)

// DeclineCall implements [toolset.CallDecliner]: with parent-based
// sampling, a call under the context of a turn whose span is not sampled
// would start no span, and is declined unless a metric of it may be
// recorded. It goes on under the turn's span, which a parent-based
// sampler drops the spans of what the tool does under.
func (t *turn) DeclineCall(ctx context.Context) (context.Context, bool) {
	if !t.o.parentBased || !t.unsampled || !t.under(ctx) || t.o.measured(ctx) {
		return ctx, false
	}
	return t.spanContext(ctx), true
}

// spanContext returns ctx, a context under the turn, with the turn's
// span: the context the turn's observer returned for ctx itself.
func (t *turn) spanContext(ctx context.Context) context.Context {
	if t.ctx != nil && ctx == t.ctx {
		return t.octx
	}
	return trace.ContextWithSpan(ctx, t.span)
}

// EndTurn implements [toolset.TurnObservation].
func (t *turn) EndTurn(e toolset.TurnEnd) {
	if t.dropped {
		return
	}
	if e.Err != nil {
		t.span.SetAttributes(keyErrorType.String(e.ErrorKind))
		t.span.SetStatus(codes.Error, e.ErrorKind)
		t.span.End()
		return
	}
	t.span.SetAttributes(KeyTools.Int(e.Tools), KeyDefinitionBytes.Int(e.DefinitionBytes), KeyFingerprint.String(e.Fingerprint))
	if e.Unrevealed > 0 {
		t.span.SetAttributes(KeyUnrevealed.Int(e.Unrevealed))
	}
	if e.Spent > 0 {
		t.span.SetAttributes(KeySpent.Int(e.Spent))
	}
	if e.PreviousFingerprint != "" && e.PreviousFingerprint != e.Fingerprint {
		t.span.AddEvent(EventToolsChanged, trace.WithAttributes(
			KeyPrevFingerprint.String(e.PreviousFingerprint), KeyFingerprint.String(e.Fingerprint)))
	}
	t.span.End()
}

// call is the observation of one call.
type call struct {
	o        *Observer
	span     trace.Span
	rec      bool // span is recording
	ctx      context.Context
	start    time.Time
	tool     *toolAttrs
	mu       sync.Mutex
	progress int
}

// StartCall implements [toolset.Observer].
func (o *Observer) StartCall(ctx context.Context, info toolset.CallInfo) (context.Context, toolset.CallObservation) {
	if o.tracer == nil && !o.metrics {
		return ctx, nil
	}
	var ta *toolAttrs
	var span trace.Span
	if o.tracer != nil {
		t, ok := info.Turn.(*turn)
		under := ok && t.under(ctx)
		if o.parentBased && ((under && t.unsampled) || (!under && unsampled(trace.SpanContextFromContext(ctx)))) {
			// The sampler would drop the span: its parent, the turn's or
			// that of ctx, is not sampled.
			if under {
				// What the tool does is under the turn's unsampled span.
				ctx = t.spanContext(ctx)
			}
			if !o.measured(ctx) {
				return ctx, nil
			}
			return ctx, &call{o: o, span: noSpan, ctx: ctx, start: time.Now(), tool: o.toolAttrs(info)}
		}
		if under {
			// Under the turn's own context: a child of the turn.
			ctx = t.spanContext(ctx)
		}
		ta = o.toolAttrs(info)
		ctx, span = o.tracer.Start(ctx, ta.spanName, ta.start...)
	} else {
		ta = o.toolAttrs(info)
	}
	recording := span != nil && span.IsRecording()
	if !recording && !o.measured(ctx) {
		return ctx, nil // neither a span nor a metric would be recorded
	}
	if recording {
		attrs := make([]attribute.KeyValue, 0, 4+len(ta.later))
		attrs = append(attrs, ta.later...)
		if info.Call.ID != "" {
			attrs = append(attrs, keyToolCallID.String(cut(info.Call.ID, maxModelName*2)))
		}
		if info.RunID != "" {
			attrs = append(attrs, KeyRunID.String(info.RunID), KeyStep.Int(info.Step))
		}
		if o.args {
			attrs = append(attrs, keyToolArgs.String(cut(string(info.Call.Args), MaxContentBytes)))
		}
		span.SetAttributes(attrs...)
	} else {
		span = noSpan
	}
	return ctx, &call{o: o, span: span, rec: recording, ctx: ctx, start: time.Now(), tool: ta}
}

// Enabled implements [toolset.EnabledObserver]: it reports false when
// nothing of work under ctx would be recorded, so that the work costs
// what it costs unobserved: on the no-op tracer provider with no metric
// enabled, and with [WithParentBasedSampling] under a span that was not
// sampled, with no metric enabled. A tracer that may record reports true
// otherwise: only starting a span tells whether its sampler keeps it.
func (o *Observer) Enabled(ctx context.Context) bool {
	if o.tracer != nil && (!o.parentBased || !unsampled(trace.SpanContextFromContext(ctx))) {
		return true
	}
	return o.measured(ctx)
}

// measured reports whether a metric of a call under ctx may be recorded.
func (o *Observer) measured(ctx context.Context) bool {
	return o.metrics && (o.duration.Enabled(ctx) || o.cache.Enabled(ctx) || o.waits.Enabled(ctx) ||
		o.rejects.Enabled(ctx) || o.approvals.Enabled(ctx))
}

// maxCached bounds the tools, and apart the agents, whose attributes an
// Observer keeps; beyond it they are made for each call or turn.
const maxCached = 4096

// recentSlots is the size of an Observer's direct-mapped cache of the
// attributes of tools called recently, which a call reads with one hash
// of the tool's name and one atomic load; a miss falls back to the map.
const recentSlots = 256

// recentSeed seeds the hash of the recent cache.
var recentSeed = maphash.MakeSeed()

// toolKey names a tool as a call's span describes it.
type toolKey struct {
	name, original, path string
	found                bool
}

// toolAttrs are what the spans and metrics of a tool's calls share, made
// once per tool: an unrecorded call then costs no attribute.
type toolAttrs struct {
	key      toolKey
	desc     string // the description start was made with
	spanName string
	start    []trace.SpanStartOption
	later    []attribute.KeyValue     // set on a recording span, after start's
	metric   metric.MeasurementOption // gen_ai.tool.name
	okAttrs  metric.MeasurementOption // the duration's, for a call that succeeded
	name     string                   // for metrics: the tool's name, or "_OTHER"
}

// toolAttrs returns the shared attributes of the tool info calls.
func (o *Observer) toolAttrs(info toolset.CallInfo) *toolAttrs {
	k := toolKey{name: info.Call.Name, found: info.Found}
	if info.Found {
		k.original, k.path = info.OriginalName, info.Path
	} else {
		k.name = cut(k.name, maxModelName)
	}
	slot := &o.recent[maphash.String(recentSeed, k.name)%recentSlots]
	if ta := slot.Load(); ta != nil && ta.key == k && ta.desc == info.Tool.Description {
		return ta
	}
	ta := o.lookupToolAttrs(k, info.Tool.Description)
	slot.Store(ta)
	return ta
}

// lookupToolAttrs returns the shared attributes of the tool k with the
// description desc from the map, or makes them.
func (o *Observer) lookupToolAttrs(k toolKey, desc string) *toolAttrs {
	if v, ok := o.tools.Load(k); ok {
		if ta := v.(*toolAttrs); ta.desc == desc {
			return ta
		}
	}
	ta := newToolAttrs(k, desc)
	if _, loaded := o.tools.Swap(k, ta); loaded || o.ntools.Add(1) <= maxCached {
		return ta
	}
	o.tools.Delete(k)
	o.ntools.Add(-1)
	return ta
}

func newToolAttrs(k toolKey, desc string) *toolAttrs {
	metricName := k.name
	if !k.found {
		metricName = "_OTHER"
	}
	// A sampler sees the operation and the tool's name; the rest is set
	// on a span that records, so a span a sampler drops costs no copy of
	// it.
	sampled := []attribute.KeyValue{keyOperation.String(operationValue), keyToolName.String(k.name)}
	later := make([]attribute.KeyValue, 0, 4)
	later = append(later, keyToolType.String("function"))
	if k.found {
		if desc != "" {
			later = append(later, keyToolDesc.String(desc))
		}
		later = append(later, KeyOriginalName.String(k.original))
		if k.path != "" {
			later = append(later, KeyPath.String(k.path))
		}
	}
	return &toolAttrs{
		key:      k,
		desc:     desc,
		spanName: "execute_tool " + k.name,
		start:    []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(sampled...)},
		later:    later,
		metric:   metric.WithAttributeSet(attribute.NewSet(keyToolName.String(metricName))),
		okAttrs: metric.WithAttributeSet(attribute.NewSet(keyOperation.String(operationValue),
			keyToolName.String(metricName), keyToolType.String("function"))),
		name: metricName,
	}
}

// turnAttrs are what the spans of an agent's turns share.
type turnAttrs struct {
	spanName string
	start    []trace.SpanStartOption
}

func (o *Observer) turnAttrs(agent string) *turnAttrs {
	if v, ok := o.turns.Load(agent); ok {
		return v.(*turnAttrs)
	}
	ta := &turnAttrs{spanName: "build_tools " + agent, start: []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(keyAgentName.String(agent))}}
	if o.nturns.Add(1) <= maxCached {
		if _, loaded := o.turns.LoadOrStore(agent, ta); loaded {
			o.nturns.Add(-1)
		}
	} else {
		o.nturns.Add(-1)
	}
	return ta
}

// noSpan is the span of a call whose span is not recorded.
var noSpan = trace.SpanFromContext(context.Background())

// Event implements [toolset.CallObservation].
func (c *call) Event(e toolset.CallEvent) {
	switch e.Kind {
	case toolset.EventDeferredRevealed:
		c.span.SetAttributes(KeyDeferred.String("revealed"))
	case toolset.EventDeferredUnrevealed:
		c.span.SetAttributes(KeyDeferred.String("unrevealed"))
	case toolset.EventBudgetSpent:
		c.span.SetAttributes(KeyFailuresLeft.Int(0))
	case toolset.EventApprovalAsked:
		c.approval("asked")
	case toolset.EventApprovalGranted:
		c.approval("granted")
	case toolset.EventApprovalDenied:
		c.approval("denied")
	case toolset.EventCacheHit:
		c.cache("hit")
	case toolset.EventCacheMiss:
		c.cache("miss")
	case toolset.EventRateLimitWait:
		c.span.SetAttributes(KeyRateLimitWait.Float64(e.Wait.Seconds()))
		c.o.waits.Add(c.ctx, 1, c.tool.metric)
	case toolset.EventRateLimitReject:
		c.span.SetAttributes(KeyRateLimitReject.Bool(true), KeyRateLimitWait.Float64(0))
		c.o.rejects.Add(c.ctx, 1, c.tool.metric)
	case toolset.EventFailureCounted:
		c.span.SetAttributes(KeyFailuresLeft.Int(e.FailuresLeft))
	}
}

func (c *call) approval(decision string) {
	c.span.SetAttributes(KeyApproval.String(decision))
	if c.o.approvals.Enabled(c.ctx) {
		c.o.approvals.Add(c.ctx, 1, metric.WithAttributes(keyToolName.String(c.tool.name), KeyApproval.String(decision)))
	}
}

func (c *call) cache(result string) {
	c.span.SetAttributes(KeyCacheResult.String(result))
	if c.o.cache.Enabled(c.ctx) {
		c.o.cache.Add(c.ctx, 1, metric.WithAttributes(keyToolName.String(c.tool.name), KeyCacheResult.String(result)))
	}
}

// Progress implements [toolset.CallObservation].
func (c *call) Progress(p toolset.Progress) {
	if !c.rec {
		return
	}
	c.mu.Lock()
	c.progress++
	n := c.progress
	c.mu.Unlock()
	if n > maxProgressEvents {
		return
	}
	c.span.AddEvent(EventProgress, trace.WithAttributes(
		KeyProgressMessage.String(cut(p.Message, 256)), KeyProgressFrac.Float64(p.Fraction)))
}

// EndCall implements [toolset.CallObservation].
func (c *call) EndCall(e toolset.CallEnd) {
	elapsed := time.Since(c.start)
	if c.rec {
		c.mu.Lock()
		if c.progress > maxProgressEvents {
			c.span.SetAttributes(KeyProgressDropped.Int(c.progress - maxProgressEvents))
		}
		c.mu.Unlock()
		if e.FailuresLeft >= 0 {
			c.span.SetAttributes(KeyFailuresLeft.Int(e.FailuresLeft))
		}
		if e.Err != nil {
			c.span.SetAttributes(keyErrorType.String(e.ErrorKind))
			desc := e.ErrorKind
			if c.o.results {
				desc = cut(e.Err.Error(), MaxContentBytes)
			}
			c.span.SetStatus(codes.Error, desc)
		} else if c.o.results {
			c.span.SetAttributes(keyToolResult.String(resultText(e.Result)))
		}
		c.span.End()
	}
	if !c.o.duration.Enabled(c.ctx) {
		return
	}
	attrs := c.tool.okAttrs
	if e.Err != nil {
		attrs = metric.WithAttributes(keyOperation.String(operationValue), keyToolName.String(c.tool.name),
			keyToolType.String("function"), keyErrorType.String(e.ErrorKind))
	}
	c.o.duration.Record(c.ctx, elapsed.Seconds(), attrs)
}

// resultText is a result as the model is sent it: a string as it is,
// anything else as JSON.
func resultText(res any) string {
	if s, ok := res.(string); ok {
		return cut(s, MaxContentBytes)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return "(result not encodable as JSON)"
	}
	return cut(string(b), MaxContentBytes)
}

// cut returns s cut to at most n bytes at a character boundary, marked.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return textcut.Clip(s, n-len(textcut.Ellipsis))
}
