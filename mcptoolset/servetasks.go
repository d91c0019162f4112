package mcptoolset

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TaskLimits bounds the tasks a [Server] runs (see [WithTaskLimits]). A
// zero field takes its default.
type TaskLimits struct {
	// MaxPerClient bounds the tasks running at once for one client (a
	// session, or, for requests without one, a run binding; see
	// [WithRunBinding]); the default is 16.
	MaxPerClient int
	// MaxTotal bounds the tasks running at once in the server; the
	// default is 256.
	MaxTotal int
	// MaxRetained bounds the finished tasks whose result the server
	// keeps; beyond it the one that finished first, of the client that
	// has the most kept, is forgotten. The default is 1024.
	MaxRetained int
	// MaxLifetime bounds how long a task runs: then its context is
	// cancelled and it fails. The default is one hour.
	MaxLifetime time.Duration
	// Retention is how long a finished task's result is kept for its
	// client to get; the default is ten minutes.
	Retention time.Duration
	// PollInterval is the polling interval the server suggests to
	// clients; the default is 500 milliseconds.
	PollInterval time.Duration
}

// Defaults of [TaskLimits].
const (
	DefaultTaskMaxPerClient = 16
	DefaultTaskMaxTotal     = 256
	DefaultTaskMaxRetained  = 1024
	DefaultTaskMaxLifetime  = time.Hour
	DefaultTaskRetention    = 10 * time.Minute
	DefaultTaskPollInterval = 500 * time.Millisecond
)

const (
	taskIDBytes              = 24   // random bytes of a task ID
	maxTaskStatusMessageSize = 1024 // bytes of a task's status message
)

func (l TaskLimits) withDefaults() TaskLimits {
	if l.MaxPerClient <= 0 {
		l.MaxPerClient = DefaultTaskMaxPerClient
	}
	if l.MaxTotal <= 0 {
		l.MaxTotal = DefaultTaskMaxTotal
	}
	if l.MaxRetained <= 0 {
		l.MaxRetained = DefaultTaskMaxRetained
	}
	if l.MaxLifetime <= 0 {
		l.MaxLifetime = DefaultTaskMaxLifetime
	}
	if l.Retention <= 0 {
		l.Retention = DefaultTaskRetention
	}
	if l.PollInterval <= 0 {
		l.PollInterval = DefaultTaskPollInterval
	}
	return l
}

// WithTasks sets the function that says which tools are long running: a
// call of such a tool from a client that declared [ExtensionTasks] on its
// request (or, for a session, at initialization) is answered at once with
// a task, and the tool runs in the background (see the package
// documentation's "Tasks" section). The default marks the tools whose
// [MetaLongRunning] metadata is "true"; a function that reports false for
// every tool serves every call synchronously. A client that did not
// declare the extension always gets a synchronous call. A panic in fn
// fails the call.
func WithTasks(fn func(toolset.Tool) bool) ServerOption {
	return func(c *serverConfig) { c.longRunning = fn }
}

// WithTaskLimits bounds the server's tasks; see [TaskLimits] for the
// defaults.
func WithTaskLimits(l TaskLimits) ServerOption {
	return func(c *serverConfig) { c.taskLimits = l }
}

// defaultLongRunning is the default of WithTasks.
func defaultLongRunning(t toolset.Tool) bool { return t.Metadata[MetaLongRunning] == "true" }

// taskKey is the context key of the task a call runs as.
type taskKey struct{}

// inTask reports whether ctx is the context of a task's call.
func inTask(ctx context.Context) bool { return ctx.Value(taskKey{}) != nil }

// taskOwner is the client a task belongs to: the session that made it,
// or, for a request without a lasting session, its run binding.
type taskOwner struct {
	ss      *mcp.ServerSession
	binding string
}

// serverTask is one task: a tools/call running in the background.
type serverTask struct {
	id      string
	owner   taskOwner
	cancel  context.CancelFunc
	created time.Time

	// Guarded by taskTable.mu.
	updated   time.Time
	finished  time.Time // zero while running
	status    string
	message   string
	fraction  float64
	seq       int64
	result    json.RawMessage
	err       *taskRPCError
	cancelled bool // tasks/cancel was asked
}

// taskTable holds a server's tasks.
type taskTable struct {
	limits TaskLimits
	now    func() time.Time

	ctx    context.Context // cancelled when the server closes
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	m      map[string]*serverTask
	owners map[taskOwner]int // running tasks per owner
	run    int               // running tasks
}

func newTaskTable(l TaskLimits) *taskTable {
	ctx, stop := context.WithCancel(context.Background())
	return &taskTable{limits: l.withDefaults(), now: time.Now, ctx: ctx, stop: stop,
		m: make(map[string]*serverTask), owners: make(map[taskOwner]int)}
}

// errTaskLimit is the error of a call refused for the task limits.
func taskLimitError(what string, n int) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("too many tasks running (%s: %d); retry once some have finished", what, n)}
}

// add makes a task for owner, cancelled by cancel, or refuses it for the
// limits; closed reports a closed server, whose calls are served
// synchronously. The task counts in tt.wg until it calls tt.wg.Done.
func (tt *taskTable) add(owner taskOwner, cancel context.CancelFunc) (t *serverTask, closed bool, err error) {
	var b [taskIDBytes]byte
	_, _ = rand.Read(b[:]) // never fails
	now := tt.now()
	t = &serverTask{id: base64.RawURLEncoding.EncodeToString(b[:]), owner: owner, cancel: cancel, created: now, updated: now, status: TaskWorking, fraction: -1}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.closed {
		return nil, true, nil
	}
	switch {
	case tt.run >= tt.limits.MaxTotal:
		return nil, false, taskLimitError("the server's limit", tt.limits.MaxTotal)
	case tt.owners[owner] >= tt.limits.MaxPerClient:
		return nil, false, taskLimitError("the limit per client", tt.limits.MaxPerClient)
	}
	tt.purge(now)
	tt.m[t.id] = t
	tt.owners[owner]++
	tt.run++
	tt.wg.Add(1) // under mu, so never once close has begun to wait
	return t, false, nil
}

// endSession cancels the running tasks of session ss, which has ended,
// and forgets its finished ones: nobody can get them any more.
func (tt *taskTable) endSession(ss *mcp.ServerSession) {
	var cancels []context.CancelFunc
	tt.mu.Lock()
	for id, t := range tt.m {
		if t.owner.ss != ss {
			continue
		}
		if t.finished.IsZero() {
			t.cancelled = true
			cancels = append(cancels, t.cancel)
		} else {
			delete(tt.m, id)
		}
	}
	tt.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// purge forgets the finished tasks past their retention and, beyond
// MaxRetained, the oldest finished ones of the client that keeps the
// most, so that a client flooding the server with tasks pushes out its
// own results, not those of others. tt.mu is held.
func (tt *taskTable) purge(now time.Time) {
	done := 0
	kept := make(map[taskOwner]int)
	for id, t := range tt.m {
		if t.finished.IsZero() {
			continue
		}
		if now.Sub(t.finished) >= tt.limits.Retention {
			delete(tt.m, id)
			continue
		}
		done++
		kept[t.owner]++
	}
	for ; done >= tt.limits.MaxRetained; done-- {
		var most taskOwner
		n := 0
		for o, k := range kept {
			if k > n {
				most, n = o, k
			}
		}
		var oldest *serverTask
		for _, t := range tt.m {
			if t.owner == most && !t.finished.IsZero() && (oldest == nil || t.finished.Before(oldest.finished)) {
				oldest = t
			}
		}
		if oldest == nil {
			return
		}
		delete(tt.m, oldest.id)
		kept[most]--
	}
}

// lookup returns the task id of owner, or nil: another owner's task is
// not found either.
func (tt *taskTable) lookup(id string, owner taskOwner) *serverTask {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.purge(tt.now())
	t := tt.m[id]
	if t == nil || t.owner != owner {
		return nil
	}
	return t
}

// progress records a progress report of t.
func (tt *taskTable) progress(t *serverTask, p toolset.Progress) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if !t.finished.IsZero() {
		return
	}
	t.seq++
	t.message = textcut.Clip(p.Message, maxTaskStatusMessageSize)
	t.fraction = p.Fraction
	t.updated = tt.now()
}

// finish records how t ended.
func (tt *taskTable) finish(t *serverTask, status, message string, result json.RawMessage, rerr *taskRPCError) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	now := tt.now()
	t.status, t.result, t.err = status, result, rerr
	if message != "" {
		t.message = textcut.Clip(message, maxTaskStatusMessageSize)
	}
	t.finished, t.updated = now, now
	tt.run--
	if tt.owners[t.owner]--; tt.owners[t.owner] <= 0 {
		delete(tt.owners, t.owner)
	}
}

// wire returns t as tasks/get sends it.
func (tt *taskTable) wire(t *serverTask, resultType string) *taskWire {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	end := t.created.Add(tt.limits.MaxLifetime + tt.limits.Retention)
	if !t.finished.IsZero() {
		end = t.finished.Add(tt.limits.Retention)
	}
	ttl := int64(end.Sub(t.created) / time.Second)
	w := &taskWire{
		ResultType: resultType, TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTLSeconds: &ttl, PollInterval: tt.limits.PollInterval.Milliseconds(),
		Result: t.result, Error: t.err,
	}
	if t.seq > 0 {
		p := map[string]any{"seq": t.seq, "message": t.message}
		if t.fraction >= 0 {
			p["fraction"] = t.fraction
		}
		w.Meta = mcp.Meta{MetaTaskProgress: p}
	}
	return w
}

// close cancels every task and waits for them to end.
func (tt *taskTable) close() {
	tt.mu.Lock()
	tt.closed = true
	tt.mu.Unlock()
	tt.stop()
	tt.wg.Wait()
}

// Close stops the server's tasks: their contexts are cancelled, and
// Close returns once every tool running as a task has returned (a tool
// that ignores its context holds it up). Calls made after it are served
// synchronously. Close does not end the sessions of [Server.MCP]; end
// them by ending the context given to [Server.Run], or by closing the
// HTTP server. It is safe to call more than once.
func (s *Server) Close() error {
	if s == nil || s.tasks == nil {
		return nil
	}
	s.tasks.close()
	return nil
}

// declaresTasks reports whether req's client declared the Tasks
// extension: in the request's per-request capabilities or, without
// them, its session's.
func declaresTasks(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[ExtensionTasks]
	return ok
}

// ownerOf returns the owner of the tasks that req makes and may see.
func (s *Server) ownerOf(req mcp.Request) taskOwner {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss != nil && (ss.ID() != "" || req.GetExtra() == nil) {
		// A session that lasts: stdio, in memory, or HTTP with an ID.
		return taskOwner{ss: ss}
	}
	return taskOwner{binding: s.bindingOf(&Request{Session: ss, Extra: req.GetExtra()})}
}

// asTask reports whether the call of tool t in req is to be a task.
func (s *Server) asTask(ctx context.Context, req *mcp.CallToolRequest, t toolset.Tool) (ok bool, err error) {
	if s.tasks == nil || req.Params.RequestState != "" || req.Params.InputResponses != nil || !declaresTasks(req) {
		return false, nil
	}
	defer func() {
		if p := recover(); p != nil {
			ok, err = false, s.internal(ctx, "tools/call", req, &toolset.PanicError{Tool: t.Name, Callback: "WithTasks function", Value: p, Stack: debug.Stack()})
		}
	}()
	return s.longRunning(t), nil
}

// startTask runs the call of req in the background as a task and
// returns its CreateTaskResult; end is the request's end, which the task
// calls when it is done. A nil result with a nil error means the server
// is closed: the call is to be made synchronously.
func (s *Server) startTask(ctx context.Context, req *mcp.CallToolRequest, tools *toolset.ToolList, end func()) (*taskWire, error) {
	tt := s.tasks
	// The task outlives the request: its context keeps the request's
	// values (the run's turn, the trace) but is cancelled by tasks/cancel,
	// its lifetime, the end of its session, or the server's Close.
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tt.limits.MaxLifetime)
	t, closed, err := tt.add(s.ownerOf(req), cancel)
	if closed || err != nil {
		cancel()
		return nil, err
	}
	stop := context.AfterFunc(tt.ctx, cancel)
	tctx = toolset.WithProgress(context.WithValue(tctx, taskKey{}, t), func(p toolset.Progress) { tt.progress(t, p) })
	created := tt.wire(t, "task")
	// The run handle too, so that a client without a session carries its
	// run on from this answer, as from a result.
	created.Meta = setHandle(ctx, mcp.Meta{metaRelatedTask: map[string]any{"taskId": t.id}})
	go func() {
		defer tt.wg.Done()
		defer end()
		defer stop()
		defer cancel()
		res, rerr := s.runTask(tctx, req, tools)
		var (
			status  = TaskCompleted
			message string
			raw     json.RawMessage
			werr    *taskRPCError
		)
		tt.mu.Lock()
		asked := t.cancelled
		tt.mu.Unlock()
		switch {
		case asked:
			status, message = TaskCancelled, "cancelled by the client"
		case tt.ctx.Err() != nil:
			status, message = TaskCancelled, "the server closed"
		case errors.Is(tctx.Err(), context.DeadlineExceeded):
			status, message = TaskFailed, "the task ran past its lifetime"
			werr = &taskRPCError{Code: jsonrpc.CodeInternalError, Message: message}
		case rerr != nil:
			var je *jsonrpc.Error
			if !errors.As(rerr, &je) {
				je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
			}
			status, message = TaskFailed, textcut.Clip(je.Message, maxTaskStatusMessageSize)
			werr = &taskRPCError{Code: je.Code, Message: message}
		default:
			b, merr := json.Marshal(res)
			if merr != nil {
				ie := s.internal(ctx, "tools/call", req, fmt.Errorf("mcptoolset: encoding the result of task %s: %w", t.id, merr))
				status, message = TaskFailed, ie.Error()
				werr = &taskRPCError{Code: jsonrpc.CodeInternalError, Message: message}
			} else {
				raw = b
			}
		}
		tt.finish(t, status, message, raw, werr)
	}()
	return created, nil
}

// runTask makes the call of a task, under recover.
func (s *Server) runTask(ctx context.Context, req *mcp.CallToolRequest, tools *toolset.ToolList) (res *mcp.CallToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, s.internal(ctx, "tools/call", req, &toolset.PanicError{Tool: req.Params.Name, Callback: "tools/call handler", Value: p, Stack: debug.Stack()})
		}
	}()
	res, err = s.finishCall(ctx, req, tools)
	if err == nil && res.NeedsInput() {
		// A task has no round trip to ask in: the model learns it.
		res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("the call of tool %q needs a human's approval, which cannot be asked for while it runs as a task; do without it", req.Params.Name)}}}
	}
	return res, err
}

// taskRequest answers tasks/get, tasks/update and tasks/cancel.
func (s *Server) taskRequest(method string, req mcp.Request) (mcp.Result, error) {
	p, _ := req.GetParams().(*taskParams)
	id := ""
	if p != nil {
		id = p.TaskID
	}
	ack := &taskWire{ResultType: "complete"}
	if s.tasks == nil {
		if method == methodTasksGet {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
		}
		return ack, nil
	}
	valid := id != "" && len(id) <= maxTaskIDBytes
	switch method {
	case methodTasksGet:
		if !valid {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Failed to retrieve task: a taskId must be a string of 1 to %d bytes", maxTaskIDBytes)}
		}
		t := s.tasks.lookup(id, s.ownerOf(req))
		if t == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
		}
		return s.tasks.wire(t, "complete"), nil
	case methodTasksCancel:
		// Acknowledged whatever the ID (SEP-2663).
		if valid {
			if t := s.tasks.lookup(id, s.ownerOf(req)); t != nil {
				s.tasks.mu.Lock()
				running := t.finished.IsZero()
				if running {
					t.cancelled = true
				}
				s.tasks.mu.Unlock()
				if running {
					t.cancel()
				}
			}
		}
		return ack, nil
	}
	// tasks/update: this server's tasks never ask for input; the
	// responses are ignored, as for any key not outstanding.
	return ack, nil
}

// registerTaskMethods makes the SDK server parse the Tasks extension's
// requests, which the server's middleware answers.
func (s *Server) registerTaskMethods() {
	never := func(context.Context, *mcp.ServerSession, *taskParams) (*taskWire, error) {
		return nil, errors.New("mcptoolset: not reached: the middleware answers tasks requests")
	}
	for _, m := range []string{methodTasksGet, methodTasksUpdate, methodTasksCancel} {
		if err := mcp.AddReceivingCustomMethod(s.srv, m, never); err != nil {
			panic(err) // the names are not the SDK's
		}
	}
}
