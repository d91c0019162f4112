package mcptoolset_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ctxFields is the context key of the trace fields a ctxPropagator
// carries.
type ctxFields struct{}

// ctxPropagator is a TracePropagator that keeps the fields in the
// context as they are, and counts its Extract calls.
type ctxPropagator struct {
	mu        sync.Mutex
	extracted []map[string]string
}

func (*ctxPropagator) Inject(ctx context.Context) map[string]string {
	f, _ := ctx.Value(ctxFields{}).(map[string]string)
	return f
}

func (p *ctxPropagator) Extract(ctx context.Context, fields map[string]string) context.Context {
	p.mu.Lock()
	p.extracted = append(p.extracted, fields)
	p.mu.Unlock()
	return context.WithValue(ctx, ctxFields{}, fields)
}

func (p *ctxPropagator) calls() []map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]string(nil), p.extracted...)
}

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// echoTrace is a tool that answers the traceparent and tracestate of its
// context.
var echoTrace = toolset.NewTool("echo_trace", "Answers its trace context.", func(ctx context.Context, _ struct{}) (string, error) {
	f, _ := ctx.Value(ctxFields{}).(map[string]string)
	return f[toolset.TraceparentField] + "|" + f[toolset.TracestateField], nil
})

// The client puts the call's trace context in params._meta of tools/call,
// under the W3C names, next to the progress token; other fields the
// propagator returns do not cross.
func TestCallCarriesTraceContextInMeta(t *testing.T) {
	checkLeaks(t)
	var (
		mu   sync.Mutex
		seen mcp.Meta
	)
	srv := mcp.NewServer(&mcp.Implementation{Name: "raw", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "look", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		seen = req.Params.Meta
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	ts, _ := inMemory("raw", srv, mcptoolset.WithTracePropagator(&ctxPropagator{}))
	defer ts.Close()
	tools, err := toolset.BuildTools(context.Background(), "agent", ts)
	require.NoError(t, err)

	ctx := context.WithValue(context.Background(), ctxFields{}, map[string]string{
		"traceparent": testTraceparent, "tracestate": "rojo=00f067aa0ba902b7", "baggage": "user=alice",
	})
	ctx = toolset.WithProgress(ctx, func(toolset.Progress) {})
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "look"})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, testTraceparent, seen["traceparent"])
	assert.Equal(t, "rojo=00f067aa0ba902b7", seen["tracestate"])
	assert.NotContains(t, seen, "baggage")
	assert.Contains(t, seen, "progressToken", "the trace fields do not replace the progress token")

	// Without a trace context in the call's context, _meta has no trace
	// fields.
	seen = nil
	mu.Unlock()
	_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "look"})
	mu.Lock()
	require.NoError(t, err)
	assert.NotContains(t, seen, "traceparent")
}

// Through a client and a served toolset, both with a propagator, the
// tool sees the caller's trace context.
func TestServedCallRunsUnderTheCallersTraceContext(t *testing.T) {
	checkLeaks(t)
	p := &ctxPropagator{}
	srv := mcptoolset.NewServer(toolset.NewFunction(echoTrace), mcptoolset.WithServerTracePropagator(p))
	ts := mcptoolset.NewInMemory("served", srv.MCP(), mcptoolset.WithTracePropagator(&ctxPropagator{}))
	defer ts.Close()
	tools, err := toolset.BuildTools(context.Background(), "agent", ts)
	require.NoError(t, err)
	ctx := context.WithValue(context.Background(), ctxFields{}, map[string]string{"traceparent": testTraceparent, "tracestate": "a=1"})
	v, err := tools.Execute(ctx, toolset.ToolCall{Name: "echo_trace"})
	require.NoError(t, err)
	assert.Equal(t, testTraceparent+"|a=1", content(t, v).ModelText())
}

// A client that sends a huge, non-string or binary traceparent or
// tracestate in _meta has it ignored: the propagator never sees it, the
// call is answered, and the server goes on.
func TestServedHostileTraceMetaIsIgnored(t *testing.T) {
	checkLeaks(t)
	p := &ctxPropagator{}
	srv := mcptoolset.NewServer(toolset.NewFunction(echoTrace), mcptoolset.WithServerTracePropagator(p))
	cs := connect(t, srv, nil)
	huge := "00-" + strings.Repeat("a", 1<<20)
	cases := []struct {
		name string
		meta mcp.Meta
		want string // what the tool sees, "|" for nothing
	}{
		{"huge traceparent", mcp.Meta{"traceparent": huge}, "|"},
		{"traceparent not a string", mcp.Meta{"traceparent": map[string]any{"x": 1}}, "|"},
		{"traceparent a number", mcp.Meta{"traceparent": 12}, "|"},
		{"traceparent with a newline", mcp.Meta{"traceparent": testTraceparent + "\nX-Injected: 1"}, "|"},
		{"traceparent with a NUL", mcp.Meta{"traceparent": testTraceparent + "\x00"}, "|"},
		{"empty traceparent", mcp.Meta{"traceparent": "", "tracestate": "a=1"}, "|"},
		{"tracestate alone", mcp.Meta{"tracestate": "a=1"}, "|"},
		{"huge tracestate", mcp.Meta{"traceparent": testTraceparent, "tracestate": strings.Repeat("k=v,", 1<<18)}, testTraceparent + "|"},
		{"tracestate not a string", mcp.Meta{"traceparent": testTraceparent, "tracestate": []any{"a=1"}}, testTraceparent + "|"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			params := &mcp.CallToolParams{Name: "echo_trace", Meta: c.meta}
			res, err := cs.CallTool(context.Background(), params)
			require.NoError(t, err)
			require.False(t, res.IsError)
			require.Len(t, res.Content, 1)
			assert.Equal(t, c.want, res.Content[0].(*mcp.TextContent).Text)
		})
	}
	for _, f := range p.calls() {
		assert.LessOrEqual(t, len(f[toolset.TraceparentField]), toolset.MaxTraceparentBytes)
		assert.LessOrEqual(t, len(f[toolset.TracestateField]), toolset.MaxTracestateBytes)
	}
	assert.Len(t, p.calls(), 2, "only the calls with a valid traceparent reach Extract")
}

// A propagator that panics drops the trace context; the call goes on.
func TestPanickingTracePropagatorDoesNotFailTheCall(t *testing.T) {
	checkLeaks(t)
	srv := mcptoolset.NewServer(toolset.NewFunction(echoTrace), mcptoolset.WithServerTracePropagator(panicPropagator{}))
	ts := mcptoolset.NewInMemory("served", srv.MCP(), mcptoolset.WithTracePropagator(panicPropagator{}))
	defer ts.Close()
	tools, err := toolset.BuildTools(context.Background(), "agent", ts)
	require.NoError(t, err)
	v, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "echo_trace"})
	require.NoError(t, err)
	assert.Equal(t, "|", content(t, v).ModelText())

	cs := connect(t, srv, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo_trace", Meta: mcp.Meta{"traceparent": testTraceparent}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
}

type panicPropagator struct{}

func (panicPropagator) Inject(context.Context) map[string]string { panic("inject") }
func (panicPropagator) Extract(context.Context, map[string]string) context.Context {
	panic("extract")
}

// recordingObserver records the requests it sees and how they end.
type recordingObserver struct {
	mu   sync.Mutex
	seen []string
}

func (o *recordingObserver) StartRequest(ctx context.Context, r mcptoolset.RequestInfo) (context.Context, func(mcptoolset.RequestEnd)) {
	return ctx, func(e mcptoolset.RequestEnd) {
		o.mu.Lock()
		defer o.mu.Unlock()
		side := "server"
		if r.Client {
			side = "client:" + r.Server
		}
		o.seen = append(o.seen, side+" "+r.Method+" "+r.Tool+" tool_error="+strconv.FormatBool(e.ToolError)+" err="+strconv.FormatBool(e.Err != nil))
	}
}

// Both sides report each tools/call and how it ended: a tool's error
// result is a ToolError, not an Err.
func TestRequestObserverSeesEachCall(t *testing.T) {
	checkLeaks(t)
	fail := toolset.NewTool("fail", "Fails.", func(context.Context, struct{}) (string, error) {
		return "", toolset.NewModelError("no")
	})
	co, so := &recordingObserver{}, &recordingObserver{}
	srv := mcptoolset.NewServer(toolset.NewFunction(echoTrace, fail), mcptoolset.WithServerRequestObserver(so))
	ts := mcptoolset.NewInMemory("served", srv.MCP(), mcptoolset.WithRequestObserver(co))
	defer ts.Close()
	tools, err := toolset.BuildTools(context.Background(), "agent", ts)
	require.NoError(t, err)
	_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "echo_trace"})
	require.NoError(t, err)
	_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "fail"})
	require.Error(t, err)
	assert.Equal(t, []string{"client:served tools/call echo_trace tool_error=false err=false", "client:served tools/call fail tool_error=true err=false"}, co.seen)
	assert.Equal(t, []string{"server tools/call echo_trace tool_error=false err=false", "server tools/call fail tool_error=true err=false"}, so.seen)
}

// panicObserver panics when a request starts.
type panicObserver struct{}

func (panicObserver) StartRequest(context.Context, mcptoolset.RequestInfo) (context.Context, func(mcptoolset.RequestEnd)) {
	panic("observer")
}

// An observer that panics leaves the call unobserved, and answered.
func TestPanickingRequestObserverDoesNotFailTheCall(t *testing.T) {
	checkLeaks(t)
	log, buf := logBuffer()
	srv := mcptoolset.NewServer(toolset.NewFunction(echoTrace), mcptoolset.WithServerRequestObserver(panicObserver{}), mcptoolset.WithServerLogger(log))
	ts := mcptoolset.NewInMemory("served", srv.MCP(), mcptoolset.WithRequestObserver(panicObserver{}), mcptoolset.WithLogger(log))
	defer ts.Close()
	tools, err := toolset.BuildTools(context.Background(), "agent", ts)
	require.NoError(t, err)
	v, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "echo_trace"})
	require.NoError(t, err)
	assert.Equal(t, "|", content(t, v).ModelText())
	assert.Contains(t, buf.String(), "the RequestObserver panicked")
}
