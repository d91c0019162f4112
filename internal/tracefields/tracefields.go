// Package tracefields bounds the trace context fields that cross a process
// boundary (see toolset.TracePropagator).
//
// Modules of this repository other than the core import this package
// (mcptoolset, toolpkg). Each is built against a released version of the
// core module, so the exported API of this package is frozen within a major
// version: it changes only by additions. See README "Modules".
package tracefields

import (
	"context"
	"log/slog"

	"github.com/gotoolset/toolset"
)

// valid reports whether v is a usable value of a field limited to max
// bytes: non-empty, short enough, and printable ASCII only.
func valid(v string, max int) bool {
	if v == "" || len(v) > max {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// Get returns the traceparent and tracestate of a carrier read with get,
// each "" when it is missing or not valid. A tracestate without a valid
// traceparent is dropped: it means nothing alone.
func Get(get func(key string) (string, bool)) (parent, state string) {
	p, ok := get(toolset.TraceparentField)
	if !ok || !valid(p, toolset.MaxTraceparentBytes) {
		return "", ""
	}
	if s, ok := get(toolset.TracestateField); ok && valid(s, toolset.MaxTracestateBytes) {
		state = s
	}
	return p, state
}

// Inject returns the bounded traceparent and tracestate of ctx from p,
// "" for none. A panic of p is recovered and logged with slog.Default, and
// drops the trace context: tracing never fails a call.
func Inject(ctx context.Context, p toolset.TracePropagator) (parent, state string) {
	if p == nil {
		return "", ""
	}
	var fields map[string]string
	func() {
		defer func() {
			if r := recover(); r != nil {
				slog.Default().Error("toolset: the TracePropagator's Inject panicked; the call goes on without its trace context", "panic", r)
			}
		}()
		fields = p.Inject(ctx)
	}()
	if len(fields) == 0 {
		return "", ""
	}
	return Get(func(k string) (string, bool) { v, ok := fields[k]; return v, ok })
}

// Extract returns ctx with the trace context of parent and state from p,
// or ctx itself when parent is "" or p is nil, returns nil or panics (which
// is logged, as for Inject).
func Extract(ctx context.Context, p toolset.TracePropagator, parent, state string) (out context.Context) {
	if p == nil || parent == "" {
		return ctx
	}
	fields := map[string]string{toolset.TraceparentField: parent}
	if state != "" {
		fields[toolset.TracestateField] = state
	}
	defer func() {
		if r := recover(); r != nil {
			slog.Default().Error("toolset: the TracePropagator's Extract panicked; the call goes on without the remote trace context", "panic", r)
			out = ctx
		} else if out == nil {
			out = ctx
		}
	}()
	return p.Extract(ctx, fields)
}
