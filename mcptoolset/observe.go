package mcptoolset

import (
	"context"
	"log/slog"

	"github.com/gotoolset/toolset/internal/textcut"
)

// RequestObserver watches the tools/call requests a [Toolset] sends or a
// [Server] answers, for tracing: package oteltoolset/otelmcp makes one
// that records the spans of the MCP semantic conventions. Give it to a
// Toolset with [WithRequestObserver] and to a Server with
// [WithServerRequestObserver].
//
// StartRequest returns the context the request goes on under (on the
// client, the one whose trace context is sent, see [WithTracePropagator];
// on the server, the one the call runs under) and a function called once,
// when the request ends. A panic in either is recovered and logged, and
// the request goes on unobserved.
type RequestObserver interface {
	StartRequest(ctx context.Context, r RequestInfo) (context.Context, func(RequestEnd))
}

// RequestInfo describes an observed request. It may gain fields.
type RequestInfo struct {
	// Client is true for a request a Toolset sends, false for one a
	// Server answers.
	Client bool
	// Method is the MCP method: "tools/call".
	Method string
	// Tool is the name of the tool called, as on the server.
	Tool string
	// Server is the Toolset's server name (see [WithName]), "" on a
	// Server.
	Server string
	// SessionID is the MCP session's ID, "" for a session without one
	// (over stdio).
	SessionID string
}

// RequestEnd is how an observed request ended. It may gain fields.
type RequestEnd struct {
	// Err is the request's error: no answer, a JSON-RPC error, a lost
	// connection. It is nil when the server answered with a result.
	Err error
	// ToolError is true when the result is a tool's error (isError).
	ToolError bool
}

// startRequest starts observing a request with o, recovering a panic; the
// returned function is never nil.
func startRequest(ctx context.Context, o RequestObserver, logger *slog.Logger, r RequestInfo) (octx context.Context, end func(RequestEnd)) {
	nop := func(RequestEnd) {}
	if o == nil {
		return ctx, nop
	}
	defer func() {
		if p := recover(); p != nil {
			logger.Error("mcptoolset: the RequestObserver panicked; the request goes on unobserved", "method", r.Method, "tool", textcut.Clip(r.Tool, maxNameBytes), "panic", p)
			octx, end = ctx, nop
		}
	}()
	octx, f := o.StartRequest(ctx, r)
	if octx == nil {
		octx = ctx
	}
	if f == nil {
		return octx, nop
	}
	return octx, func(e RequestEnd) {
		defer func() {
			if p := recover(); p != nil {
				logger.Error("mcptoolset: the RequestObserver's end function panicked", "method", r.Method, "tool", textcut.Clip(r.Tool, maxNameBytes), "panic", p)
			}
		}()
		f(e)
	}
}
