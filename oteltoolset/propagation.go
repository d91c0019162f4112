package oteltoolset

import (
	"context"

	"go.opentelemetry.io/otel/propagation"

	"github.com/gotoolset/toolset"
)

// Propagator returns a [toolset.TracePropagator] on p, for
// mcptoolset.WithTracePropagator, mcptoolset.WithServerTracePropagator and
// toolpkg's Options.Trace: the trace context of a call crosses an MCP hop
// in tools/call's _meta, or reaches a packaged tool in its TRACEPARENT,
// and the spans on the other side are children of the call's span.
//
// A nil p is W3C Trace Context (propagation.TraceContext), not the global
// propagator, which is a no-op until a program sets one. Only traceparent
// and tracestate cross a boundary, whatever else p handles (baggage, say).
func Propagator(p propagation.TextMapPropagator) toolset.TracePropagator {
	if p == nil {
		p = propagation.TraceContext{}
	}
	return propagator{p}
}

type propagator struct{ p propagation.TextMapPropagator }

func (p propagator) Inject(ctx context.Context) map[string]string {
	c := propagation.MapCarrier{}
	p.p.Inject(ctx, c)
	return c
}

func (p propagator) Extract(ctx context.Context, fields map[string]string) context.Context {
	return p.p.Extract(ctx, propagation.MapCarrier(fields))
}
