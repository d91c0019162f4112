package mesh

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// The benchmarks' embedded server and responders run in a process of
// their own, so that the allocations counted are the caller's alone.
const (
	benchResponderEnv = "MESH_BENCH_RESPONDER"
	benchEchoSubject  = "bench.echo"
	benchArgs         = `{"text":"a short argument, as a model sends"}`
)

// benchResult is what the runtime-like responder answers: a ready result
// of the size a short tool output has.
var benchResult = strings.Repeat("r", 120)

// TestBenchResponder is not a test: it is the responder process of the
// benchmarks (run by them with benchResponderEnv set). It answers the
// pinned invoke subject of bench__t version 1 as a runtime does (an
// accepted status, then the result), init_requests of it, and echoes
// bench.echo, until its standard input closes.
func TestBenchResponder(t *testing.T) {
	t.Parallel()
	if os.Getenv(benchResponderEnv) == "" {
		t.Skip("the benchmarks' responder process")
	}
	srv, err := StartServer(&ServerOptions{Logger: quietLogger()})
	require.NoError(t, err)
	defer srv.Close()
	nc, err := nats.Connect(srv.ClientURL(), nats.Token(srv.Token()))
	require.NoError(t, err)
	defer nc.Close()
	subj, _ := NewSubjects("")
	_, err = nc.Subscribe(benchEchoSubject, func(m *nats.Msg) { _ = m.Respond(m.Data) })
	require.NoError(t, err)
	invoke, _ := subj.InvokeVersion("bench__t", 1)
	_, err = nc.Subscribe(invoke, func(m *nats.Msg) {
		req, err := DecodeRequest(m.Data, MethodInvoke, true)
		if err != nil {
			return
		}
		var p InvokeParams
		if Decode(req.Params, 0, &p) != nil {
			return
		}
		// A quick call: the runtime answers with the result alone.
		out, _ := encodeResult(req.ID, InvokeResult{ToolResult: &ToolResult{Kind: ResultKindText, Text: benchResult}, ExecutionTimeMS: 1})
		_ = nc.Publish(m.Reply, out)
	})
	require.NoError(t, err)
	initReq, _ := subj.InitRequest("bench__t")
	_, err = nc.Subscribe(initReq, func(m *nats.Msg) {
		req, err := DecodeRequest(m.Data, MethodInitRequest, true)
		if err != nil {
			return
		}
		out, _ := encodeResult(req.ID, benchInit())
		_ = nc.Publish(m.Header.Get(HeaderReplyTo), out)
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	os.Stdout.WriteString(srv.ClientURL() + " " + srv.Token() + "\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

func benchInit() InitParams {
	return InitParams{ToolName: "bench__t", Description: "A tool that answers at once", Toolset: "bench", Tool: "t", Version: 1,
		Runtime: "bench", TimeoutSeconds: 60, Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
}

// benchResponder starts the responder process, and returns a connection
// to its server.
func benchResponder(b *testing.B) *nats.Conn {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchResponder$", "-test.count=1")
	cmd.Env = append(os.Environ(), benchResponderEnv+"=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(b, err, "responder: %q", line)
	url, token, _ := strings.Cut(strings.TrimSpace(line), " ")
	nc, err := nats.Connect(url, nats.Token(token))
	require.NoError(b, err)
	b.Cleanup(nc.Close)
	return nc
}

// BenchmarkCall is the broker path's own cost of one call: the agent's
// invoke to a runtime-like responder in another process and its answer
// (an accepted status and a ready result) back, through the embedded
// server on loopback (in the responder's process). Compare with
// BenchmarkCallFloor.
func BenchmarkCall(b *testing.B) {
	nc := benchResponder(b)
	ctx := context.Background()
	c, err := NewClient(ctx, nc, &ClientOptions{Logger: quietLogger()})
	require.NoError(b, err)
	defer c.Close()
	announce := nc
	subject, _ := c.subj.Init("bench__t")
	data, _ := encodeRequest("", MethodInit, benchInit())
	require.NoError(b, announce.Publish(subject, data))
	require.NoError(b, announce.Flush())
	ts := c.Toolset("bench", nil)
	require.Eventually(b, func() bool { tools, err := ts.GetTools(ctx); return err == nil && len(tools) == 1 }, 10*time.Second, time.Millisecond)
	rt, err := ts.remoteTool(benchInit(), 1)
	require.NoError(b, err)
	args := json.RawMessage(benchArgs)
	out, err := rt.run(ctx, args)
	require.NoError(b, err)
	require.Equal(b, benchResult, out)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := rt.run(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallFloor is the floor of BenchmarkCall: a bare NATS
// request-reply of the invoke's bytes to an echo responder in another
// process, on the same server.
func BenchmarkCallFloor(b *testing.B) {
	nc := benchResponder(b)
	// The bytes of an invoke of the benchmark's call.
	payload, err := json.Marshal(invokeWire{JSONRPC: JSONRPCVersion, ID: randomID(), Method: MethodInvoke, Params: invokeParams{
		TaskID: randomID(), ToolName: "bench__t", Args: json.RawMessage(benchArgs), Version: 1,
	}})
	require.NoError(b, err)
	_, err = nc.Request(benchEchoSubject, payload, 10*time.Second)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := nc.Request(benchEchoSubject, payload, 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
