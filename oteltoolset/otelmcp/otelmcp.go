// Package otelmcp records the MCP requests of package mcptoolset as
// OpenTelemetry spans, following the OpenTelemetry semantic conventions
// for MCP. It is a package of its own so that oteltoolset's users who do
// not use MCP do not link the MCP SDK.
//
// Give one [RequestObserver] to both sides, with the trace propagator:
//
//	p := oteltoolset.Propagator(nil)
//	ro := otelmcp.New(nil)
//	remote := mcptoolset.NewCommand(cmd, mcptoolset.WithTracePropagator(p), mcptoolset.WithRequestObserver(ro))
//	srv := mcptoolset.NewServer(ts, mcptoolset.WithServerTracePropagator(p), mcptoolset.WithServerRequestObserver(ro))
//
// A tools/call is a span "tools/call {gen_ai.tool.name}", of kind CLIENT
// on the client (a child of the call's execute_tool span) and SERVER on
// the server (a child of the client's span, across the hop), with
// mcp.method.name, gen_ai.tool.name, gen_ai.operation.name
// "execute_tool" and mcp.session.id when the session has one. A tool's
// error result sets error.type "tool_error"; a JSON-RPC error sets
// error.type to its code, and any other failure (a lost connection, a
// timeout) "_OTHER"; each with an error status.
//
// The SDK does not expose the JSON-RPC request ID to its callers, so
// jsonrpc.request.id is not recorded.
package otelmcp

import (
	"context"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/oteltoolset"
)

// Attribute keys of the MCP semantic conventions.
const (
	KeyMethod    = attribute.Key("mcp.method.name")
	KeySessionID = attribute.Key("mcp.session.id")
	keyToolName  = attribute.Key("gen_ai.tool.name")
	keyOperation = attribute.Key("gen_ai.operation.name")
	keyErrorType = attribute.Key("error.type")
)

// ToolErrorType is the error.type of a tool's error result (isError).
const ToolErrorType = "tool_error"

// maxToolName bounds the tool name in a span: on a server, it is what the
// client sent.
const maxToolName = 128

// RequestObserver is a [mcptoolset.RequestObserver] that records spans.
type RequestObserver struct{ tracer trace.Tracer }

var _ mcptoolset.RequestObserver = (*RequestObserver)(nil)

// New returns a RequestObserver on tp; nil is otel.GetTracerProvider().
func New(tp trace.TracerProvider) *RequestObserver {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &RequestObserver{tracer: tp.Tracer(oteltoolset.ScopeName + "/otelmcp")}
}

// StartRequest starts the request's span.
func (o *RequestObserver) StartRequest(ctx context.Context, r mcptoolset.RequestInfo) (context.Context, func(mcptoolset.RequestEnd)) {
	tool := textcut.Prefix(r.Tool, maxToolName)
	kind := trace.SpanKindServer
	if r.Client {
		kind = trace.SpanKindClient
	}
	attrs := []attribute.KeyValue{KeyMethod.String(r.Method), keyToolName.String(tool), keyOperation.String("execute_tool")}
	if r.SessionID != "" {
		attrs = append(attrs, KeySessionID.String(textcut.Prefix(r.SessionID, maxToolName)))
	}
	ctx, span := o.tracer.Start(ctx, r.Method+" "+tool, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, func(e mcptoolset.RequestEnd) {
		switch {
		case e.Err != nil:
			kind := "_OTHER"
			var je *jsonrpc.Error
			if errors.As(e.Err, &je) {
				kind = strconv.FormatInt(je.Code, 10)
			}
			span.SetAttributes(keyErrorType.String(kind))
			span.SetStatus(codes.Error, kind)
		case e.ToolError:
			span.SetAttributes(keyErrorType.String(ToolErrorType))
			span.SetStatus(codes.Error, ToolErrorType)
		}
		span.End()
	}
}
