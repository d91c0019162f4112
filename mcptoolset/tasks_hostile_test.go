package mcptoolset_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
)

// requireRPCError requires err to be a JSON-RPC error with code whose
// message contains text.
func requireRPCError(t *testing.T, err error, code int64, text string) {
	t.Helper()
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, code, je.Code)
	assert.Contains(t, je.Message, text)
}

// Forged, unknown, oversized and malformed task IDs get a clear invalid
// params error from tasks/get; tasks/cancel acknowledges any ID and
// changes nothing.
func TestHostileTaskIDs(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset())
	defer srv.Close()
	cs := connectTasks(t, srv)
	ctx := context.Background()
	id := startTask(t, cs, "slow")
	<-st.started

	forged := []string{"", "x", strings.Repeat("A", len(id)), id[:len(id)-1], id + "A", strings.ToUpper(id)}
	for _, f := range forged {
		if f == id {
			continue
		}
		_, err := getTask(ctx, cs, f)
		requireRPCError(t, err, jsonrpc.CodeInvalidParams, "task")
		ack, err := cancelTask(ctx, cs, f)
		require.NoError(t, err, "tasks/cancel acknowledges any ID")
		assert.Equal(t, "complete", ack.ResultType)
	}
	_, err := getTask(ctx, cs, strings.Repeat("a", 100000))
	requireRPCError(t, err, jsonrpc.CodeInvalidParams, "1 to 256 bytes")
	_, err = getTask(ctx, cs, 12345)
	requireRPCError(t, err, jsonrpc.CodeInvalidParams, "")
	_, err = getTask(ctx, cs, map[string]any{"taskId": id})
	requireRPCError(t, err, jsonrpc.CodeInvalidParams, "")
	_, err = getTask(ctx, cs, nil)
	requireRPCError(t, err, jsonrpc.CodeInvalidParams, "")

	got, err := getTask(ctx, cs, id)
	require.NoError(t, err)
	assert.Equal(t, "working", got.Status, "the forgeries touched nothing")
	close(st.release)
	assert.Equal(t, "completed", pollUntil(t, cs, id).Status)
}

// One client can neither read nor cancel another's task, in memory and
// over streamable HTTP in a session: to it the task does not exist.
func TestAnotherClientsTaskIsNotFound(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset())
	defer srv.Close()
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	defer hs.Close()
	httpSession := func(t *testing.T) *mcp.ClientSession {
		cs, err := sdkTaskClient(t).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		require.NotEmpty(t, cs.ID())
		return cs
	}
	for _, over := range []string{"memory", "http"} {
		t.Run(over, func(t *testing.T) {
			var owner, other *mcp.ClientSession
			if over == "memory" {
				owner, other = connectTasks(t, srv), connectTasks(t, srv)
			} else {
				owner, other = httpSession(t), httpSession(t)
			}
			ctx := context.Background()
			id := startTask(t, owner, "slow")
			<-st.started
			_, err := getTask(ctx, other, id)
			requireRPCError(t, err, jsonrpc.CodeInvalidParams, "Task not found")
			_, err = cancelTask(ctx, other, id)
			require.NoError(t, err)
			got, err := getTask(ctx, owner, id)
			require.NoError(t, err)
			assert.Equal(t, "working", got.Status, "the other client's cancel did nothing")
			st.release <- struct{}{}
			assert.Equal(t, "completed", pollUntil(t, owner, id).Status)
		})
	}
}

// userTransport adds a header to every request.
type userTransport struct{ key, value string }

func (h userTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// A 2026-07-28 client has no session: its tasks are bound to its run
// binding, so a client of another binding does not find them, while the
// same client's next requests do.
func TestSessionlessTasksAreBoundToTheClient(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset(), mcptoolset.WithRunBinding(func(r *mcptoolset.Request) string {
		return r.Extra.Header.Get("X-User")
	}))
	defer srv.Close()
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	defer hs.Close()
	as := func(user string) *mcp.ClientSession {
		cs, err := sdkTaskClient(t).Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: hs.URL, HTTPClient: &http.Client{Transport: userTransport{"X-User", user}},
		}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, mallory := as("alice"), as("mallory")
	require.Empty(t, alice.ID(), "sessionless")
	ctx := context.Background()
	res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.NotEmpty(t, res.Meta[mcptoolset.MetaRunHandle], "the task carries the run's handle")
	rel, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
	id, _ := rel["taskId"].(string)
	require.NotEmpty(t, id)
	<-st.started
	_, err = getTask(ctx, mallory, id)
	requireRPCError(t, err, jsonrpc.CodeInvalidParams, "Task not found")
	_, err = cancelTask(ctx, mallory, id)
	require.NoError(t, err)
	got, err := getTask(ctx, alice, id)
	require.NoError(t, err)
	assert.Equal(t, "working", got.Status)
	close(st.release)
	assert.Equal(t, "completed", pollUntil(t, alice, id).Status)
}

// Cancelling a finished task changes nothing: it stays completed, with
// its result.
func TestCancelOfFinishedTask(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	close(st.release)
	srv := mcptoolset.NewServer(st.toolset())
	defer srv.Close()
	cs := connectTasks(t, srv)
	id := startTask(t, cs, "slow")
	require.Equal(t, "completed", pollUntil(t, cs, id).Status)
	_, err := cancelTask(context.Background(), cs, id)
	require.NoError(t, err)
	got, err := getTask(context.Background(), cs, id)
	require.NoError(t, err)
	assert.Equal(t, "completed", got.Status)
	assert.NotEmpty(t, got.Result)
}

// Beyond the limits per client and in total, a call fails with a clear
// error and runs nothing; once a task ends, a new one may start.
func TestTaskLimits(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset(), mcptoolset.WithTaskLimits(mcptoolset.TaskLimits{MaxPerClient: 2, MaxTotal: 3}))
	defer srv.Close()
	a, b := connectTasks(t, srv), connectTasks(t, srv)
	ctx := context.Background()
	call := func(cs *mcp.ClientSession) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		return err
	}
	ids := []string{startTask(t, a, "block"), startTask(t, a, "block")}
	requireRPCError(t, call(a), jsonrpc.CodeInternalError, "too many tasks running (the limit per client: 2)")
	ids = append(ids, startTask(t, b, "block"))
	requireRPCError(t, call(b), jsonrpc.CodeInternalError, "too many tasks running (the server's limit: 3)")
	for range 3 {
		<-st.started
	}
	select {
	case <-st.started:
		t.Fatal("a refused call ran")
	default:
	}
	_, err := cancelTask(ctx, a, ids[0])
	require.NoError(t, err)
	<-st.canceled
	assert.Equal(t, "cancelled", pollUntil(t, a, ids[0]).Status)
	startTask(t, a, "block")
	<-st.started
}

// A task runs no longer than MaxLifetime: then its context ends and it
// fails. Its result is kept for Retention, then forgotten.
func TestTaskLifetimeAndRetention(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset(), mcptoolset.WithTaskLimits(mcptoolset.TaskLimits{
		MaxLifetime: 50 * time.Millisecond, Retention: 200 * time.Millisecond,
	}))
	defer srv.Close()
	cs := connectTasks(t, srv)
	id := startTask(t, cs, "block")
	assert.ErrorIs(t, <-st.canceled, context.DeadlineExceeded)
	got := pollUntil(t, cs, id)
	assert.Equal(t, "failed", got.Status)
	assert.Contains(t, got.StatusMessage, "lifetime")
	require.Eventually(t, func() bool {
		_, err := getTask(context.Background(), cs, id)
		return err != nil
	}, 5*time.Second, 20*time.Millisecond, "forgotten after its retention")
}

// Closing the server mid-task cancels the tool's context and waits for
// it; the task ends cancelled, and calls made after are synchronous.
func TestServerCloseStopsTasks(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset())
	cs := connectTasks(t, srv)
	id := startTask(t, cs, "block")
	<-st.started
	require.NoError(t, srv.Close())
	select {
	case err := <-st.canceled:
		assert.ErrorIs(t, err, context.Canceled)
	default:
		t.Fatal("Close returned before the task's tool did")
	}
	got, err := getTask(context.Background(), cs, id)
	require.NoError(t, err)
	assert.Equal(t, "cancelled", got.Status)
	assert.Contains(t, got.StatusMessage, "server closed")
	require.NoError(t, srv.Close(), "a second Close")
	close(st.release)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1, "synchronous after Close")
}

// A client toolset whose server is closed mid-task gets a *TaskError,
// cancelled.
func TestToolsetSeesServerCloseMidTask(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset(), mcptoolset.WithTaskLimits(mcptoolset.TaskLimits{PollInterval: 10 * time.Millisecond}))
	ts := mcptoolset.NewInMemory("remote", srv.MCP())
	defer ts.Close()
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "a", ts)
	require.NoError(t, err)
	go func() { <-st.started; _ = srv.Close() }()
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "block", Args: json.RawMessage(`{}`)})
	var te *mcptoolset.TaskError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, mcptoolset.TaskCancelled, te.Status)
	assert.Contains(t, te.Message, "server closed")
}

// A hostile server's task that never ends, that reports an unknown
// status, or that claims completion without a result, ends the client's
// call with a bounded, typed error.
func TestToolsetAgainstHostileTaskServer(t *testing.T) {
	checkLeaks(t)
	for _, tc := range []struct {
		name   string
		answer func(id string) *taskResult
		status string
	}{
		{"unknown status", func(id string) *taskResult {
			return &taskResult{ResultType: "complete", TaskID: id, Status: "exploded"}
		}, mcptoolset.TaskFailed},
		{"no result", func(id string) *taskResult {
			return &taskResult{ResultType: "complete", TaskID: id, Status: "completed"}
		}, mcptoolset.TaskFailed},
		{"input", func(id string) *taskResult {
			return &taskResult{ResultType: "complete", TaskID: id, Status: "input_required"}
		}, mcptoolset.TaskInputRequired},
		{"forever", func(id string) *taskResult {
			return &taskResult{ResultType: "complete", TaskID: id, Status: "working", PollInterval: 1, StatusMessage: strings.Repeat("é", 5000)}
		}, mcptoolset.TaskExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "v0"}, nil)
			s.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Meta: mcp.Meta{"io.modelcontextprotocol/related-task": map[string]any{"taskId": "t1"}}}, nil
				})
			cancels := make(chan string, 8)
			require.NoError(t, mcp.AddReceivingCustomMethod(s, "tasks/get", func(_ context.Context, _ *mcp.ServerSession, p *taskParams) (*taskResult, error) {
				return tc.answer(p.TaskID.(string)), nil
			}))
			require.NoError(t, mcp.AddReceivingCustomMethod(s, "tasks/cancel", func(_ context.Context, _ *mcp.ServerSession, p *taskParams) (*taskResult, error) {
				cancels <- p.TaskID.(string)
				return &taskResult{ResultType: "complete"}, nil
			}))
			ts := mcptoolset.NewInMemory("hostile", s, mcptoolset.WithMaxTaskWait(200*time.Millisecond))
			defer ts.Close()
			var longest int
			ctx := toolset.WithProgress(context.Background(), func(p toolset.Progress) { longest = max(longest, len(p.Message)) })
			tools, err := toolset.BuildTools(ctx, "a", ts)
			require.NoError(t, err)
			_, err = tools.Execute(ctx, toolset.ToolCall{Name: "t", Args: json.RawMessage(`{}`)})
			var te *mcptoolset.TaskError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tc.status, te.Status)
			assert.Equal(t, "t1", te.TaskID)
			assert.LessOrEqual(t, longest, 1024, "status messages are cut")
			if tc.status == mcptoolset.TaskExpired || tc.status == mcptoolset.TaskInputRequired {
				assert.Equal(t, "t1", <-cancels, "the task is cancelled")
			}
		})
	}
}

// A server of the Tasks extension that answers with a bare
// CreateTaskResult (resultType "task", no related-task _meta) is awaited
// too over a message-stream transport, and its result is the call's.
func TestToolsetAwaitsForeignCreateTaskResult(t *testing.T) {
	checkLeaks(t)
	s := mcp.NewServer(&mcp.Implementation{Name: "foreign", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "synchronous"}}}, nil
		})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				return &taskResult{ResultType: "task", TaskID: "f-1", Status: "working", PollInterval: 1}, nil
			}
			return next(ctx, method, req)
		}
	})
	var polls atomic.Int32
	require.NoError(t, mcp.AddReceivingCustomMethod(s, "tasks/get", func(_ context.Context, _ *mcp.ServerSession, p *taskParams) (*taskResult, error) {
		if p.TaskID != "f-1" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Task not found"}
		}
		if polls.Add(1) < 3 {
			return &taskResult{ResultType: "complete", TaskID: "f-1", Status: "working", StatusMessage: "step"}, nil
		}
		return &taskResult{ResultType: "complete", TaskID: "f-1", Status: "completed",
			Result: json.RawMessage(`{"content":[{"type":"text","text":"from the task"}]}`)}, nil
	}))
	ts := mcptoolset.NewInMemory("foreign", s)
	defer ts.Close()
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "a", ts)
	require.NoError(t, err)
	v, err := tools.Execute(ctx, toolset.ToolCall{Name: "t", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	text, err := toolset.ResultText(v)
	require.NoError(t, err)
	assert.Equal(t, "from the task", text)
	assert.Equal(t, int32(3), polls.Load())
}

// The end of a client's session cancels its running tasks: nobody can
// poll them any more.
func TestSessionEndCancelsItsTasks(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset())
	defer srv.Close()
	st2, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCP().Connect(ctx, st2, nil)
	require.NoError(t, err)
	cs, err := sdkTaskClient(t).Connect(ctx, ct, nil)
	require.NoError(t, err)
	startTask(t, cs, "block")
	<-st.started
	require.NoError(t, cs.Close())
	_ = ss.Wait()
	select {
	case err := <-st.canceled:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the task outlived its session")
	}
}

// A client that floods the server with tasks it never reads the results
// of pushes its own oldest results out of MaxRetained, not another
// client's: the victim's result, finished first, is still there.
func TestTaskFloodKeepsOtherClientsResults(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset(), mcptoolset.WithTaskLimits(mcptoolset.TaskLimits{MaxRetained: 4}))
	defer srv.Close()
	victim, flooder := connectTasks(t, srv), connectTasks(t, srv)
	id := startTask(t, victim, "slow")
	<-st.started
	st.release <- struct{}{}
	require.Equal(t, "completed", pollUntil(t, victim, id).Status)

	var ids []string
	for range 8 {
		ids = append(ids, startTask(t, flooder, "slow"))
		<-st.started
		st.release <- struct{}{}
		require.Equal(t, "completed", pollUntil(t, flooder, ids[len(ids)-1]).Status)
	}
	got, err := getTask(context.Background(), victim, id)
	require.NoError(t, err, "the flood did not push out another client's result")
	assert.Equal(t, "completed", got.Status)
	_, err = getTask(context.Background(), flooder, ids[0])
	requireRPCError(t, err, jsonrpc.CodeInvalidParams, "Task not found")
}
