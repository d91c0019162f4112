package toolset

import "context"

// TracePropagator carries a trace context across a process boundary, so
// that what a tool does in another process belongs to the caller's trace:
// package mcptoolset puts it in the _meta of a tools/call request and takes
// it out on the server side, and package toolpkg puts it in a packaged
// tool's environment. Package oteltoolset makes one from an OpenTelemetry
// propagator; the packages that carry it depend on no tracing library.
//
// The fields are named as in W3C Trace Context: "traceparent" and
// "tracestate". Only those two cross a boundary; the carrying packages
// drop any other field, and any field too long or with a byte that has
// no place in it (see the limits below), before Extract sees it and after
// Inject returns it.
type TracePropagator interface {
	// Inject returns the fields that carry ctx's trace context, or nil
	// when ctx has none.
	Inject(ctx context.Context) map[string]string
	// Extract returns ctx with the remote trace context the fields carry
	// as its parent, or ctx itself when they carry none that is valid.
	// It must not keep fields.
	Extract(ctx context.Context, fields map[string]string) context.Context
}

// Names and limits of the trace fields a [TracePropagator] handles. A
// traceparent longer than MaxTraceparentBytes, or a tracestate longer than
// MaxTracestateBytes (the length W3C Trace Context asks every platform to
// carry), is dropped whole, as is either with a byte outside printable
// ASCII.
const (
	TraceparentField    = "traceparent"
	TracestateField     = "tracestate"
	MaxTraceparentBytes = 256
	MaxTracestateBytes  = 512
)
