package oteltoolset_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/gotoolset/toolset/oteltoolset"
)

// The propagator injects W3C traceparent and tracestate, and extracts
// them back into a remote parent.
func TestPropagatorRoundTripsTheSpanContext(t *testing.T) {
	h := newHarness(t)
	ts, err := trace.ParseTraceState("rojo=00f067aa0ba902b7")
	require.NoError(t, err)
	ctx, span := h.tp.Tracer("test").Start(context.Background(), "caller")
	defer span.End()
	ctx = trace.ContextWithSpanContext(ctx, span.SpanContext().WithTraceState(ts))
	p := oteltoolset.Propagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	fields := p.Inject(ctx)
	assert.Equal(t, "00-"+span.SpanContext().TraceID().String()+"-"+span.SpanContext().SpanID().String()+"-01", fields["traceparent"])
	assert.Equal(t, "rojo=00f067aa0ba902b7", fields["tracestate"])
	got := trace.SpanContextFromContext(p.Extract(context.Background(), fields))
	assert.True(t, got.IsRemote())
	assert.Equal(t, span.SpanContext().TraceID(), got.TraceID())
	assert.Equal(t, span.SpanContext().SpanID(), got.SpanID())
	assert.Empty(t, oteltoolset.Propagator(nil).Inject(context.Background()), "no span, no fields")
}
