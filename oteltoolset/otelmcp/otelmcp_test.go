package otelmcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/oteltoolset"
	"github.com/gotoolset/toolset/oteltoolset/otelmcp"
)

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		serveTraceEcho() // the MCP server process of TestTraceCrossesAnMCPServerProcess
		return
	}
	goleak.VerifyTestMain(m)
}

type readArgs struct {
	Path string `json:"path"`
}

var readFile = toolset.NewTool("read_file", "Read a file.", func(_ context.Context, in readArgs) (string, error) {
	if in.Path == "/missing" {
		return "", toolset.NewModelError("no such file")
	}
	return "contents", nil
})

type fixture struct {
	spans *tracetest.SpanRecorder
	srv   *mcptoolset.Server
	tools *toolset.ToolList
	turn  context.Context
}

func setup(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{spans: tracetest.NewSpanRecorder()}
	var runs atomic.Int64
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tp))
	require.NoError(t, err)
	p, ro := oteltoolset.Propagator(nil), otelmcp.New(tp)
	f.srv = mcptoolset.NewServer(toolset.NewFunction(readFile), mcptoolset.WithAgent("server"),
		mcptoolset.WithServerTracePropagator(p), mcptoolset.WithServerRequestObserver(ro),
		mcptoolset.WithRunContext(func(_ context.Context, req *mcptoolset.Request) (*toolset.RunContext, error) {
			return toolset.NewRun(fmt.Sprintf("server-%d", runs.Add(1)), toolset.WithObserver(obs)), nil
		}))
	remote := mcptoolset.NewInMemory("files", f.srv.MCP(), mcptoolset.WithTracePropagator(p), mcptoolset.WithRequestObserver(ro))
	t.Cleanup(func() { _ = remote.Close() })
	run := toolset.NewRun("client", toolset.WithObserver(obs))
	t.Cleanup(run.End)
	f.turn = run.Turn(context.Background())
	tools, err := toolset.BuildTools(f.turn, "client", remote)
	require.NoError(t, err)
	f.tools = tools
	return f
}

func (f *fixture) span(t *testing.T, name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range f.spans.Ended() {
		if s.Name() == name && s.SpanKind() == kind {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans %q of kind %v", name, kind)
	return found[0]
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A tools/call is a CLIENT span under the call's execute_tool span, and
// a SERVER span under it across the hop, above the server's turn.
func TestToolsCallSpansFollowTheMCPConventions(t *testing.T) {
	f := setup(t)
	_, err := f.tools.Execute(f.turn, toolset.ToolCall{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"/x"}`)})
	require.NoError(t, err)

	var call sdktrace.ReadOnlySpan
	for _, s := range f.spans.Ended() {
		if s.Name() == "execute_tool read_file" && attrs(s)[oteltoolset.KeyRunID].AsString() == "client" {
			call = s
		}
	}
	require.NotNil(t, call, "the client's execute_tool span")
	client := f.span(t, "tools/call read_file", trace.SpanKindClient)
	server := f.span(t, "tools/call read_file", trace.SpanKindServer)
	assert.Equal(t, call.SpanContext().SpanID(), client.Parent().SpanID())
	assert.Equal(t, client.SpanContext().SpanID(), server.Parent().SpanID())
	assert.True(t, server.Parent().IsRemote())
	assert.Equal(t, call.SpanContext().TraceID(), server.SpanContext().TraceID())
	for _, s := range []sdktrace.ReadOnlySpan{client, server} {
		a := attrs(s)
		assert.Equal(t, "tools/call", a[otelmcp.KeyMethod].AsString())
		assert.Equal(t, "read_file", a["gen_ai.tool.name"].AsString())
		assert.Equal(t, "execute_tool", a["gen_ai.operation.name"].AsString())
		assert.Equal(t, codes.Unset, s.Status().Code)
		_, hasErr := a["error.type"]
		assert.False(t, hasErr)
	}
	for _, s := range f.spans.Ended() {
		if s.Name() == "build_tools server" && s.Parent().SpanID() == server.SpanContext().SpanID() {
			return
		}
	}
	t.Error("the server's turn is not a child of its SERVER span")
}

// A tool's error result is error.type tool_error on both sides.
func TestToolErrorResultIsAToolErrorType(t *testing.T) {
	f := setup(t)
	_, err := f.tools.Execute(f.turn, toolset.ToolCall{Name: "read_file", Args: json.RawMessage(`{"path":"/missing"}`)})
	require.Error(t, err)
	for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		s := f.span(t, "tools/call read_file", kind)
		assert.Equal(t, otelmcp.ToolErrorType, attrs(s)["error.type"].AsString(), "%v", kind)
		assert.Equal(t, codes.Error, s.Status().Code)
	}
}

// A client that calls a made-up, huge tool name gets a bounded span name
// on the server, and a session's ID is recorded.
func TestServerSpanOfAHugeToolNameIsBounded(t *testing.T) {
	f := setup(t)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.srv.MCP().Connect(context.Background(), st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "hostile", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: strings.Repeat("x", 1<<20)})
	require.NoError(t, err)
	assert.True(t, res.IsError, "an unknown tool is an error result")
	var server sdktrace.ReadOnlySpan
	for _, s := range f.spans.Ended() {
		if s.SpanKind() == trace.SpanKindServer {
			server = s
		}
	}
	require.NotNil(t, server)
	assert.LessOrEqual(t, len(server.Name()), len("tools/call ")+128)
	assert.Equal(t, otelmcp.ToolErrorType, attrs(server)["error.type"].AsString())
}
