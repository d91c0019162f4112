package otelmcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/oteltoolset"
)

// harness is an observer on the SDK's in-memory span recorder.
type harness struct {
	spans *tracetest.SpanRecorder
	obs   *oteltoolset.Observer
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{spans: tracetest.NewSpanRecorder()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tp))
	require.NoError(t, err)
	h.obs = obs
	return h
}

func (h *harness) run(t *testing.T, id string) *toolset.RunContext {
	t.Helper()
	run := toolset.NewRun(id, toolset.WithObserver(h.obs))
	require.NoError(t, run.Err())
	t.Cleanup(run.End)
	return run
}

// span returns the only ended span named name.
func (h *harness) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	found := h.named(name)
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

func (h *harness) named(name string) []sdktrace.ReadOnlySpan {
	var found []sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	return found
}

// servedReadFile serves read_file with the harness's observer on each
// session's run, and the OpenTelemetry propagator.
func (h *harness) servedReadFile() *mcptoolset.Server {
	return mcptoolset.NewServer(toolset.NewFunction(readFile),
		mcptoolset.WithAgent("server"),
		mcptoolset.WithServerTracePropagator(oteltoolset.Propagator(nil)),
		mcptoolset.WithRunContext(func(_ context.Context, req *mcptoolset.Request) (*toolset.RunContext, error) {
			// An in-memory session has no ID: its run is unnamed, as the
			// server's own default run is, for a run ID is live only once.
			id := ""
			if req.Session != nil && req.Session.ID() != "" {
				id = "mcp-" + req.Session.ID()
			}
			return toolset.NewRun(id, toolset.WithObserver(h.obs)), nil
		}))
}

// A call through an MCP server is one trace: the server's turn is a child
// of the client's call span, with it as its remote parent, and the
// server's call a child of that turn.
func TestMCPServerSpansAreChildrenOfTheClientCallSpan(t *testing.T) {
	h := newHarness(t)
	srv := h.servedReadFile()
	remote := mcptoolset.NewInMemory("files", srv.MCP(), mcptoolset.WithTracePropagator(oteltoolset.Propagator(nil)))
	defer remote.Close()
	run := h.run(t, "client")
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "client", remote.Prefixed("fs"))
	require.NoError(t, err)
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "fs_read_file", Args: json.RawMessage(`{"path":"/x"}`)})
	require.NoError(t, err)

	client := h.span(t, "execute_tool fs_read_file")
	var serverTurn trace.SpanContext
	for _, s := range h.named("build_tools server") {
		if s.Parent().SpanID() == client.SpanContext().SpanID() {
			serverTurn = s.SpanContext()
			assert.True(t, s.Parent().IsRemote(), "the parent came over the wire")
		}
	}
	require.True(t, serverTurn.IsValid(), "a server turn is a child of the client's call span")
	assert.Equal(t, client.SpanContext().TraceID(), serverTurn.TraceID())
	server := h.span(t, "execute_tool read_file")
	assert.Equal(t, client.SpanContext().TraceID(), server.SpanContext().TraceID(), "one trace across the hop")
	assert.Equal(t, serverTurn.SpanID(), server.Parent().SpanID())
}

// A client that sends a malformed or huge traceparent in _meta has it
// ignored: the server's spans begin a trace of their own, and the call is
// answered.
func TestMCPServerIgnoresAMalformedTraceparent(t *testing.T) {
	for name, tp := range map[string]any{
		"not hex":          "00-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-00f067aa0ba902b7-01",
		"zero trace id":    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"version ff":       "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"huge":             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + strings.Repeat("a", 1<<20),
		"object":           map[string]any{"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"},
		"control bytes":    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n",
		"wrong field size": "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			srv := h.servedReadFile()
			st, ct := mcp.NewInMemoryTransports()
			ss, err := srv.MCP().Connect(context.Background(), st, nil)
			require.NoError(t, err)
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "hostile", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
			require.NoError(t, err)
			defer cs.Close()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "read_file", Arguments: map[string]any{"path": "/x"},
				Meta: mcp.Meta{"traceparent": tp, "tracestate": "rojo=00f067aa0ba902b7"},
			})
			require.NoError(t, err)
			assert.False(t, res.IsError)
			server := h.span(t, "execute_tool read_file")
			assert.NotEqual(t, "4bf92f3577b34da6a3ce929d0e0e4736", server.SpanContext().TraceID().String())
			for _, s := range h.named("build_tools server") {
				assert.False(t, s.Parent().IsValid(), "a server turn with no remote parent")
			}
		})
	}
}

// serveEnv makes the test binary an MCP server on stdio that serves
// trace_echo.
const serveEnv = "OTELMCP_TEST_SERVE_TRACE_ECHO"

// serveTraceEcho serves trace_echo, which answers the trace ID of its
// context and the span ID of its remote parent, on stdio, with the
// OpenTelemetry propagator and no tracer: what the tool sees came over
// the wire.
func serveTraceEcho() {
	echo := toolset.NewTool("trace_echo", "Answers its trace context.", func(ctx context.Context, _ struct{}) (string, error) {
		sc := trace.SpanContextFromContext(ctx)
		return fmt.Sprintf("%s %s %t", sc.TraceID(), sc.SpanID(), sc.IsRemote()), nil
	})
	srv := mcptoolset.NewServer(toolset.NewFunction(echo), mcptoolset.WithServerTracePropagator(oteltoolset.Propagator(nil)))
	if err := srv.ServeStdio(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Across two processes, the MCP server's tool runs under the client's
// call span: same trace ID, and the client's call span as its remote
// parent.
func TestTraceCrossesAnMCPServerProcess(t *testing.T) {
	h := newHarness(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// atexit_sleep_ms=0: a binary built with the race detector otherwise
	// sleeps a second as it exits.
	cmd.Env = append(os.Environ(), serveEnv+"=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	remote := mcptoolset.NewCommand(cmd, mcptoolset.WithTracePropagator(oteltoolset.Propagator(nil)))
	defer func() { require.NoError(t, remote.Close()) }()
	run := h.run(t, "two-processes")
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "client", remote)
	require.NoError(t, err)
	res, err := tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "trace_echo", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	call := h.span(t, "execute_tool trace_echo").SpanContext()
	want := fmt.Sprintf("%s %s true", call.TraceID(), call.SpanID())
	assert.Equal(t, want, res.(*toolset.Content).ModelText())
}
