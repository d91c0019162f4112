package mcptoolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxTaskWait is the default of [WithMaxTaskWait].
const DefaultMaxTaskWait = time.Hour

// Bounds of the client's polling of a task.
const (
	minTaskPoll      = 20 * time.Millisecond
	maxTaskPoll      = 5 * time.Second
	firstTaskPoll    = 50 * time.Millisecond
	taskCancelWait   = 5 * time.Second
	maxTaskMessageIn = 1024
)

// WithMaxTaskWait bounds how long a call that the server answered with a
// task (see [ExtensionTasks]) waits for the task to end; the default is
// [DefaultMaxTaskWait]. A task still running then is cancelled
// (tasks/cancel) and the call fails with a [*TaskError] whose status is
// [TaskExpired]. Zero or less means the default.
func WithMaxTaskWait(d time.Duration) Option { return func(c *config) { c.maxTaskWait = d } }

// declareTasks declares the Tasks extension in opts' capabilities, which
// the SDK sends at initialization and, to a 2026-07-28 server, on every
// request.
func declareTasks(opts *mcp.ClientOptions) {
	caps := &mcp.ClientCapabilities{}
	if opts.Capabilities != nil {
		cp := *opts.Capabilities
		caps = &cp
	}
	caps.Extensions = maps.Clone(caps.Extensions)
	if _, ok := caps.Extensions[ExtensionTasks]; !ok {
		caps.AddExtension(ExtensionTasks, map[string]any{})
	}
	opts.Capabilities = caps
}

// addTaskMethods registers the Tasks extension's requests with client.
func addTaskMethods(client *mcp.Client) error {
	for _, m := range []string{methodTasksGet, methodTasksUpdate, methodTasksCancel} {
		if err := mcp.AddSendingCustomMethod[*taskParams, *taskWire](client, m); err != nil {
			return err
		}
	}
	return nil
}

// createdTask returns the ID of the task that res, the answer to a
// tools/call, stands for, if it is a task: a result without content
// whose _meta names the related task.
func createdTask(res *mcp.CallToolResult) (string, bool) {
	if res == nil || len(res.Content) > 0 || res.StructuredContent != nil || res.IsError {
		return "", false
	}
	rel, ok := res.Meta[metaRelatedTask].(map[string]any)
	if !ok {
		return "", false
	}
	id, ok := rel["taskId"].(string)
	if !ok || id == "" || len(id) > maxTaskIDBytes {
		return "", false
	}
	return id, true
}

// awaitTask polls the task id that the server made for the call of tool
// name until it ends, and returns its result. Progress the server
// reports reaches ctx's progress callback; ctx's end cancels the task.
func (c *conn) awaitTask(ctx context.Context, s *mcp.ClientSession, name, id string) (*mcp.CallToolResult, error) {
	wait := c.cfg.maxTaskWait
	if wait <= 0 {
		wait = DefaultMaxTaskWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	taskErr := func(status, msg string, code int64) error {
		return &TaskError{Server: c.cfg.name, Tool: name, TaskID: id, Status: status, Message: textcut.Clip(msg, maxTaskMessageIn), Code: code}
	}
	stopped := func() error {
		c.cancelTask(ctx, s, id)
		if err := ctx.Err(); err != nil {
			return err
		}
		return taskErr(TaskExpired, fmt.Sprintf("it did not end within %v (see WithMaxTaskWait); it was cancelled", wait), 0)
	}
	var (
		state   string
		lastSeq float64
		lastMsg string
		backoff = firstTaskPoll
		delay   = time.Duration(0)
	)
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-wctx.Done():
			return nil, stopped()
		case <-timer.C:
		}
		gctx, gcancel := wctx, context.CancelFunc(func() {})
		if d := c.cfg.callTimeout; d > 0 {
			gctx, gcancel = context.WithTimeout(wctx, d)
		}
		w, err := mcp.CallCustomMethod[*taskParams, *taskWire](gctx, s, methodTasksGet, &taskParams{TaskID: id, RequestState: state})
		gcancel()
		if err != nil {
			var je *jsonrpc.Error
			switch {
			case wctx.Err() != nil:
				return nil, stopped()
			case errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams:
				return nil, taskErr(TaskExpired, je.Message, int64(je.Code))
			}
			return nil, fmt.Errorf("polling task %s (tasks/get): %w", textcut.Clip(id, 80), err)
		}
		if w == nil {
			return nil, fmt.Errorf("polling task %s (tasks/get): no result", textcut.Clip(id, 80))
		}
		state = w.RequestState
		lastSeq, lastMsg = forwardProgress(ctx, w, lastSeq, lastMsg)
		switch w.Status {
		case TaskCompleted:
			var res mcp.CallToolResult
			if len(w.Result) == 0 || string(w.Result) == "null" {
				return nil, taskErr(TaskFailed, "the server's completed task has no result", 0)
			}
			if err := res.UnmarshalJSON(w.Result); err != nil {
				return nil, fmt.Errorf("the result of task %s: %w", textcut.Clip(id, 80), err)
			}
			return &res, nil
		case TaskFailed:
			msg, code := w.StatusMessage, int64(0)
			if w.Error != nil {
				msg, code = w.Error.Message, w.Error.Code
			}
			return nil, taskErr(TaskFailed, msg, code)
		case TaskCancelled:
			return nil, taskErr(TaskCancelled, w.StatusMessage, 0)
		case TaskInputRequired:
			// This client has no way to answer a task's input requests.
			c.cancelTask(ctx, s, id)
			return nil, taskErr(TaskInputRequired, "the task asked for input, which this client cannot give; it was cancelled", 0)
		case TaskWorking:
		default:
			return nil, taskErr(TaskFailed, fmt.Sprintf("the server reported an unknown task status %q", textcut.Clip(w.Status, 64)), 0)
		}
		if w.PollInterval > 0 {
			delay = min(max(time.Duration(w.PollInterval)*time.Millisecond, minTaskPoll), maxTaskPoll)
		} else {
			delay, backoff = backoff, min(backoff*2, maxTaskPoll/2)
		}
		timer.Reset(delay)
	}
}

// forwardProgress reports the progress that w, a task's status, carries
// to ctx's progress callback, if it is new: the server's
// [MetaTaskProgress] or, from a server that does not send it, a changed
// status message.
func forwardProgress(ctx context.Context, w *taskWire, lastSeq float64, lastMsg string) (float64, string) {
	if !toolset.HasProgress(ctx) {
		return lastSeq, lastMsg
	}
	if p, ok := w.Meta[MetaTaskProgress].(map[string]any); ok {
		seq, _ := p["seq"].(float64)
		if seq <= lastSeq {
			return lastSeq, lastMsg
		}
		msg, _ := p["message"].(string)
		frac, ok := p["fraction"].(float64)
		if !ok || frac < 0 || frac > 1 {
			frac = -1
		}
		toolset.ReportProgress(ctx, toolset.Progress{Message: textcut.Prefix(msg, maxTaskMessageIn), Fraction: frac})
		return seq, msg
	}
	if w.Status == TaskWorking && w.StatusMessage != "" && w.StatusMessage != lastMsg {
		toolset.ReportProgress(ctx, toolset.Progress{Message: textcut.Prefix(w.StatusMessage, maxTaskMessageIn), Fraction: -1})
		return lastSeq, w.StatusMessage
	}
	return lastSeq, lastMsg
}

// cancelTask asks the server to cancel task id, waiting a little for the
// acknowledgement even though ctx may have ended.
func (c *conn) cancelTask(ctx context.Context, s *mcp.ClientSession, id string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskCancelWait)
	defer cancel()
	if _, err := mcp.CallCustomMethod[*taskParams, *taskWire](cctx, s, methodTasksCancel, &taskParams{TaskID: id}); err != nil {
		c.cfg.logger.WarnContext(ctx, "mcptoolset: cancelling a task failed", "server", c.cfg.name, "task", textcut.Clip(id, 80), "error", err)
	}
}

// maxTrackedCalls bounds the tools/call requests a taskConn remembers
// while they wait for their answer.
const maxTrackedCalls = 4096

// taskTransport wraps a transport whose connection the SDK uses as any
// other (stdio, in memory, a command's), so that a server's
// CreateTaskResult reaches the client even without the related-task
// _meta that this package's Server adds: see taskConn.
type taskTransport struct{ mcp.Transport }

// Connect implements mcp.Transport.
func (t taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskConn{Connection: conn, calls: make(map[jsonrpc.ID]struct{})}, nil
}

// withTaskTransport wraps tr in a taskTransport when it is one of the
// SDK's message-stream transports; others (streamable HTTP, whose
// connection the SDK updates through methods a wrapper would hide, or an
// application's) are left as they are.
func withTaskTransport(tr mcp.Transport) mcp.Transport {
	switch tr.(type) {
	case *mcp.InMemoryTransport, *mcp.IOTransport, *mcp.CommandTransport, *mcp.StdioTransport, *commandTransport:
		return taskTransport{tr}
	}
	return tr
}

// taskConn turns the answer to a tools/call that is a CreateTaskResult
// (resultType "task") into a CallToolResult without content whose _meta
// names the task, as this package's Server sends it: the SDK's client
// decodes a tools/call answer as a CallToolResult, which would drop the
// task's ID.
type taskConn struct {
	mcp.Connection
	mu    sync.Mutex
	calls map[jsonrpc.ID]struct{} // the tools/call requests awaiting an answer
}

// Write implements mcp.Connection.
func (c *taskConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "tools/call" && r.IsCall() {
		c.mu.Lock()
		if len(c.calls) < maxTrackedCalls {
			c.calls[r.ID] = struct{}{}
		}
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// Read implements mcp.Connection.
func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		_, call := c.calls[r.ID]
		delete(c.calls, r.ID)
		c.mu.Unlock()
		if call && r.Error == nil {
			r.Result = namedTask(r.Result)
		}
	}
	return msg, err
}

// namedTask returns raw, a tools/call answer, as a CallToolResult naming
// its task when it is a CreateTaskResult, and as it is otherwise.
func namedTask(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"resultType"`)) || !bytes.Contains(raw, []byte(`"task"`)) {
		return raw // the common case, without decoding a large result
	}
	var probe struct {
		ResultType string         `json:"resultType"`
		TaskID     string         `json:"taskId"`
		Meta       map[string]any `json:"_meta"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.ResultType != "task" || probe.TaskID == "" || len(probe.TaskID) > maxTaskIDBytes {
		return raw
	}
	meta := probe.Meta
	if meta == nil {
		meta = map[string]any{}
	}
	meta[metaRelatedTask] = map[string]any{"taskId": probe.TaskID}
	b, err := json.Marshal(map[string]any{"content": []any{}, "_meta": meta})
	if err != nil {
		return raw
	}
	return b
}
