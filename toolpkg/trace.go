package toolpkg

// The environment variables that carry a call's trace context to its tool
// (see Options.Trace), as OpenTelemetry's environment carriers name them.
const (
	TraceparentEnv = "TRACEPARENT"
	TracestateEnv  = "TRACESTATE"
)
