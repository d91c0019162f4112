package mcptoolset_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
)

var longRunning = toolset.WithMetadata(map[string]string{mcptoolset.MetaLongRunning: "true"})

// slowTools has "slow", a long-running tool that reports progress, then
// waits for release (or its context) and returns "done"; "block", a
// long-running tool that waits for its context and records its end; and
// "quick", a tool that is not long running.
type slowTools struct {
	release  chan struct{}
	started  chan struct{} // one send per call of slow or block
	canceled chan error    // block's context error
	calls    atomic.Int32
}

func newSlowTools() *slowTools {
	return &slowTools{release: make(chan struct{}), started: make(chan struct{}, 64), canceled: make(chan error, 64)}
}

func (s *slowTools) toolset() toolset.Toolset {
	slow := toolset.NewRawTool("slow", "Work slowly.", nil, func(ctx context.Context, _ json.RawMessage) (any, error) {
		s.calls.Add(1)
		toolset.ReportProgress(ctx, toolset.Progress{Message: "starting", Fraction: -1})
		toolset.ReportProgress(ctx, toolset.Progress{Message: "half way", Fraction: 0.5})
		s.started <- struct{}{}
		select {
		case <-s.release:
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, longRunning)
	block := toolset.NewRawTool("block", "Block until cancelled.", nil, func(ctx context.Context, _ json.RawMessage) (any, error) {
		s.started <- struct{}{}
		<-ctx.Done()
		s.canceled <- ctx.Err()
		return nil, ctx.Err()
	}, longRunning)
	quick := toolset.NewRawTool("quick", "Answer at once.", nil, func(context.Context, json.RawMessage) (any, error) {
		return "quick", nil
	})
	return toolset.NewFunction(slow, block, quick)
}

// tasksCaps declares the Tasks extension for an SDK client.
func tasksCaps() *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(mcptoolset.ExtensionTasks, map[string]any{})
	return &mcp.ClientOptions{Capabilities: caps}
}

// taskResult is a task on the wire, as a test's client reads it.
type taskResult struct {
	mcp.ResultBase
	ResultType    string          `json:"resultType"`
	TaskID        string          `json:"taskId"`
	Status        string          `json:"status"`
	StatusMessage string          `json:"statusMessage"`
	TTLSeconds    *int64          `json:"ttlSeconds"`
	PollInterval  int64           `json:"pollIntervalMilliseconds"`
	Result        json.RawMessage `json:"result"`
	Error         *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type taskParams struct {
	mcp.ParamsBase
	TaskID any `json:"taskId"`
}

// sdkTaskClient returns an SDK client that declares tasks and can send the
// extension's requests.
func sdkTaskClient(t *testing.T) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, tasksCaps())
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		require.NoError(t, mcp.AddSendingCustomMethod[*taskParams, *taskResult](c, m))
	}
	return c
}

// connectTasks connects an SDK client that declares tasks to srv in memory.
func connectTasks(t *testing.T, srv *mcptoolset.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := sdkTaskClient(t).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		_ = ss.Wait()
	})
	return cs
}

func getTask(ctx context.Context, cs *mcp.ClientSession, id any) (*taskResult, error) {
	return mcp.CallCustomMethod[*taskParams, *taskResult](ctx, cs, "tasks/get", &taskParams{TaskID: id})
}

func cancelTask(ctx context.Context, cs *mcp.ClientSession, id any) (*taskResult, error) {
	return mcp.CallCustomMethod[*taskParams, *taskResult](ctx, cs, "tasks/cancel", &taskParams{TaskID: id})
}

// startTask calls tool over cs and returns the task ID the server gave.
func startTask(t *testing.T, cs *mcp.ClientSession, tool string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.Empty(t, res.Content, "a task, not a result")
	rel, ok := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
	require.True(t, ok, "the task is named in _meta: %v", res.Meta)
	id, _ := rel["taskId"].(string)
	require.NotEmpty(t, id)
	return id
}

// pollUntil polls task id until its status is not "working".
func pollUntil(t *testing.T, cs *mcp.ClientSession, id string) *taskResult {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := getTask(context.Background(), cs, id)
		require.NoError(t, err)
		if got.Status != "working" || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An SDK client that declares the extension gets a task for a long
// running tool, polls it while it works (seeing its progress), and gets
// its result; a tool that is not long running is answered at once.
func TestServerAnswersLongRunningCallWithTask(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset())
	defer srv.Close()
	cs := connectTasks(t, srv)
	ctx := context.Background()

	quick, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "quick", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.Len(t, quick.Content, 1)
	assert.Equal(t, "quick", quick.Content[0].(*mcp.TextContent).Text)

	id := startTask(t, cs, "slow")
	assert.GreaterOrEqual(t, len(id), 32, "an unguessable ID")
	<-st.started
	working, err := getTask(ctx, cs, id)
	require.NoError(t, err)
	assert.Equal(t, "complete", working.ResultType)
	assert.Equal(t, "working", working.Status)
	assert.Equal(t, "half way", working.StatusMessage)
	assert.Positive(t, working.PollInterval)
	require.NotNil(t, working.TTLSeconds)
	p, ok := working.Meta[mcptoolset.MetaTaskProgress].(map[string]any)
	require.True(t, ok, "progress in _meta: %v", working.Meta)
	assert.Equal(t, 2.0, p["seq"])
	assert.Equal(t, 0.5, p["fraction"])

	close(st.release)
	done := pollUntil(t, cs, id)
	require.Equal(t, "completed", done.Status)
	var res mcp.CallToolResult
	require.NoError(t, json.Unmarshal(done.Result, &res))
	require.Len(t, res.Content, 1)
	assert.Equal(t, "done", res.Content[0].(*mcp.TextContent).Text)
	assert.False(t, res.IsError)
}

// A client that does not declare the extension gets the long-running
// tool's result synchronously, as before.
func TestServerCallsSynchronouslyWithoutTheExtension(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	close(st.release)
	srv := mcptoolset.NewServer(st.toolset())
	defer srv.Close()
	cs := connect(t, srv, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	assert.Equal(t, "done", res.Content[0].(*mcp.TextContent).Text)
	assert.Nil(t, res.Meta["io.modelcontextprotocol/related-task"])
}

// WithTasks decides which tools are long running, replacing the metadata
// key: here "quick" is and "slow" is not.
func TestWithTasksChoosesTheTools(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	close(st.release)
	srv := mcptoolset.NewServer(st.toolset(), mcptoolset.WithTasks(func(t toolset.Tool) bool { return t.Name == "quick" }))
	defer srv.Close()
	cs := connectTasks(t, srv)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1, "slow is synchronous")
	id := startTask(t, cs, "quick")
	done := pollUntil(t, cs, id)
	assert.Equal(t, "completed", done.Status)
}

// tasks/cancel cancels the tool's context; the task ends cancelled.
func TestServerCancelsTask(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset())
	defer srv.Close()
	cs := connectTasks(t, srv)
	id := startTask(t, cs, "block")
	<-st.started
	ack, err := cancelTask(context.Background(), cs, id)
	require.NoError(t, err)
	assert.Equal(t, "complete", ack.ResultType)
	assert.ErrorIs(t, <-st.canceled, context.Canceled, "the handler sees the cancel")
	done := pollUntil(t, cs, id)
	assert.Equal(t, "cancelled", done.Status)
}

// A task's tool error is a completed task with an isError result; a
// panic is a failed task with an internal error that names no detail.
func TestServerTaskErrors(t *testing.T) {
	checkLeaks(t)
	bad := toolset.NewRawTool("bad", "Fail.", nil, func(context.Context, json.RawMessage) (any, error) {
		return nil, toolset.NewModelError("no such city")
	}, longRunning)
	boom := toolset.NewRawTool("boom", "Panic.", nil, func(context.Context, json.RawMessage) (any, error) {
		panic("secret detail")
	}, longRunning)
	log, buf := logBuffer()
	srv := mcptoolset.NewServer(toolset.NewFunction(bad, boom), mcptoolset.WithServerLogger(log))
	defer srv.Close()
	cs := connectTasks(t, srv)

	done := pollUntil(t, cs, startTask(t, cs, "bad"))
	require.Equal(t, "completed", done.Status)
	var res mcp.CallToolResult
	require.NoError(t, json.Unmarshal(done.Result, &res))
	assert.True(t, res.IsError)

	done = pollUntil(t, cs, startTask(t, cs, "boom"))
	require.Equal(t, "failed", done.Status)
	require.NotNil(t, done.Error)
	assert.Contains(t, done.Error.Message, "internal error")
	assert.NotContains(t, done.Error.Message, "secret")
	assert.Contains(t, buf.String(), "secret detail", "logged")
}

// The client toolset awaits a served task: the call returns the tool's
// result, and the tool's progress reaches the caller's callback.
func TestToolsetAwaitsTaskWithProgress(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset(), mcptoolset.WithTaskLimits(mcptoolset.TaskLimits{PollInterval: 10 * time.Millisecond}))
	defer srv.Close()
	var n counter
	n.count(srv.MCP())
	for _, over := range []string{"memory", "http"} {
		t.Run(over, func(t *testing.T) {
			st.calls.Store(0)
			var ts *mcptoolset.Toolset
			if over == "memory" {
				ts = mcptoolset.NewInMemory("remote", srv.MCP())
			} else {
				hs := httptest.NewServer(srv.HTTPHandler(nil))
				defer hs.Close()
				ts = mcptoolset.NewHTTP(hs.URL)
			}
			defer ts.Close()
			var mu sync.Mutex
			var got []toolset.Progress
			ctx := toolset.WithProgress(context.Background(), func(p toolset.Progress) {
				mu.Lock()
				got = append(got, p)
				mu.Unlock()
			})
			tools, err := toolset.BuildTools(ctx, "a", ts)
			require.NoError(t, err)
			go func() { <-st.started; time.Sleep(20 * time.Millisecond); st.release <- struct{}{} }()
			v, err := tools.Execute(ctx, toolset.ToolCall{Name: "slow", Args: json.RawMessage(`{}`)})
			require.NoError(t, err)
			text, err := toolset.ResultText(v)
			require.NoError(t, err)
			assert.Equal(t, "done", text)
			assert.Equal(t, int32(1), st.calls.Load())
			assert.Positive(t, n.get("tasks/get"), "the call ran as a task")
			n.mu.Lock()
			n.n = nil
			n.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, got, "progress was forwarded")
			assert.Equal(t, toolset.Progress{Message: "half way", Fraction: 0.5}, got[len(got)-1])
		})
	}
}

// Cancelling the caller's context sends tasks/cancel: the server's
// handler sees its context cancelled.
func TestToolsetCancelsTaskWithItsContext(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset(), mcptoolset.WithTaskLimits(mcptoolset.TaskLimits{PollInterval: 10 * time.Millisecond}))
	defer srv.Close()
	polled := make(chan struct{})
	once := sync.OnceFunc(func() { close(polled) })
	srv.MCP().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tasks/get" {
				once()
			}
			return next(ctx, method, req)
		}
	})
	ts := mcptoolset.NewInMemory("remote", srv.MCP())
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	tools, err := toolset.BuildTools(ctx, "a", ts)
	require.NoError(t, err)
	// Cancelled once the client knows the task, polling it (a cancel while
	// tools/call is in flight cannot name the task).
	go func() { <-st.started; <-polled; cancel() }()
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "block", Args: json.RawMessage(`{}`)})
	require.ErrorIs(t, err, context.Canceled)
	select {
	case cerr := <-st.canceled:
		assert.ErrorIs(t, cerr, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the server's handler was not cancelled")
	}
}

// A task that outlasts WithMaxTaskWait fails with a *TaskError, expired,
// and is cancelled on the server.
func TestToolsetBoundsTaskWait(t *testing.T) {
	checkLeaks(t)
	st := newSlowTools()
	srv := mcptoolset.NewServer(st.toolset())
	defer srv.Close()
	ts := mcptoolset.NewInMemory("remote", srv.MCP(), mcptoolset.WithMaxTaskWait(100*time.Millisecond))
	defer ts.Close()
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "a", ts)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "block", Args: json.RawMessage(`{}`)})
	var te *mcptoolset.TaskError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, mcptoolset.TaskExpired, te.Status)
	assert.NotEmpty(t, te.TaskID)
	assert.Equal(t, "block", te.Tool)
	assert.ErrorIs(t, <-st.canceled, context.Canceled, "cancelled on the server")
}

// A task that fails on the server is a *TaskError, failed, with the
// JSON-RPC error's code.
func TestToolsetReportsFailedTask(t *testing.T) {
	checkLeaks(t)
	boom := toolset.NewRawTool("boom", "Panic.", nil, func(context.Context, json.RawMessage) (any, error) {
		panic("secret detail")
	}, longRunning)
	log, _ := logBuffer()
	srv := mcptoolset.NewServer(toolset.NewFunction(boom), mcptoolset.WithServerLogger(log))
	defer srv.Close()
	ts := mcptoolset.NewInMemory("remote", srv.MCP())
	defer ts.Close()
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "a", ts)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "boom", Args: json.RawMessage(`{}`)})
	var te *mcptoolset.TaskError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, mcptoolset.TaskFailed, te.Status)
	assert.Equal(t, int64(jsonrpc.CodeInternalError), te.Code)
	var se *mcptoolset.ServerError
	require.ErrorAs(t, err, &se, "reported as other remote errors are")
	assert.Equal(t, "call tool", se.Op)
}

// In fake time: a task runs no longer than DefaultTaskMaxLifetime, and a
// client waits no longer than DefaultMaxTaskWait, whichever comes first;
// a server's suggestion to poll every minute is held to 5 seconds.
func TestTaskDefaultBoundsInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			server   mcptoolset.TaskLimits
			client   []mcptoolset.Option
			status   string
			after    time.Duration
			serverTo error
		}{
			{"lifetime", mcptoolset.TaskLimits{PollInterval: time.Minute}, []mcptoolset.Option{mcptoolset.WithMaxTaskWait(2 * time.Hour)},
				mcptoolset.TaskFailed, mcptoolset.DefaultTaskMaxLifetime, context.DeadlineExceeded},
			{"wait", mcptoolset.TaskLimits{MaxLifetime: 3 * time.Hour, PollInterval: time.Minute}, nil,
				mcptoolset.TaskExpired, mcptoolset.DefaultMaxTaskWait, context.Canceled},
		} {
			st := newSlowTools()
			srv := mcptoolset.NewServer(st.toolset(), mcptoolset.WithTaskLimits(tc.server))
			ts := mcptoolset.NewInMemory("remote", srv.MCP(), tc.client...)
			ctx := context.Background()
			tools, err := toolset.BuildTools(ctx, "a", ts)
			require.NoError(t, err)
			start := time.Now()
			_, err = tools.Execute(ctx, toolset.ToolCall{Name: "block", Args: json.RawMessage(`{}`)})
			took := time.Since(start)
			var te *mcptoolset.TaskError
			require.ErrorAs(t, err, &te, tc.name)
			assert.Equal(t, tc.status, te.Status, tc.name)
			assert.GreaterOrEqual(t, took, tc.after, tc.name)
			assert.LessOrEqual(t, took, tc.after+5*time.Second, "%s: polled every 5 seconds at most, whatever the server suggests", tc.name)
			assert.ErrorIs(t, <-st.canceled, tc.serverTo, tc.name)
			require.NoError(t, ts.Close())
			require.NoError(t, srv.Close())
		}
	})
}
