package mcptoolset

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/gotoolset/toolset/internal/tracefields"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server serves a [toolset.Toolset] as an MCP server. Make one with
// [NewServer]; serve it with [Server.ServeStdio], [Server.HTTPHandler] or,
// for any other transport, through the SDK server that [Server.MCP]
// returns. A Server is safe for concurrent use by any number of sessions.
type Server struct {
	srv      *mcp.Server
	ts       toolset.Toolset
	agent    string
	runCtx   RunContextFunc
	page     int
	instr    bool // the toolset's instructions are sent at initialization
	logger   *slog.Logger
	runs     sessionRuns
	trace    toolset.TracePropagator
	requests RequestObserver

	// Runs carried by handle, for requests without a session; handles is
	// nil when they are not (see setupHandles).
	keys    *handleKeys
	handles *handleRuns
	runOpts RunOptionsFunc
	binding func(*Request) string
	listTTL time.Duration

	oauth *OAuthConfig // nil for none

	approvals *handleKeys // signs the requestState of requests for approval
	answering sync.Map    // run ID and call ID of the answers being handled

	tasks       *taskTable // the calls running as tasks
	longRunning func(toolset.Tool) bool
}

// Request describes the MCP request that a run context is built for.
type Request struct {
	// Method is "tools/list", "tools/call", or, when the server sends the
	// toolset's instructions, "initialize" or "server/discover".
	Method string
	// Session is the client's session; its ID and InitializeParams tell
	// clients apart. It may be nil for a stateless HTTP request.
	Session *mcp.ServerSession
	// Client is the client's name and version, as it introduced itself;
	// it may be nil.
	Client *mcp.Implementation
	// Extra carries the HTTP header and the verified bearer token of a
	// request over HTTP; it is nil over stdio.
	Extra *mcp.RequestExtra
	// Tool is the name of the tool called, for "tools/call".
	Tool string
	// RunID is the ID of the run the request carries on by run handle
	// (see [WithRunStore]), or "" for a request of a session.
	RunID string

	handle string // the run handle the result carries
}

type requestKey struct{}

// RequestFromContext returns the MCP request whose tools are built or
// called under ctx, or nil: predicates, prepare functions and tools of a
// served toolset read it to decide per request (from its HTTP header or
// token, say), where the run (see [RunContextFunc]) is the session's.
func RequestFromContext(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}

// RunContextFunc says who a client is: it begins the run of an MCP
// session, with [toolset.NewRun], and gives it the values (a role, a
// tenant) and dependencies from which [toolset.BuildTools] builds the
// tools the client sees (a filtered toolset shows each client only its own
// tools, a Dynamic one picks the client's toolset).
//
// It is called when a session needs a run: at its first request, and at
// the next request after its run was ended for the bound of
// [WithMaxSessionRuns]. req is that request. Every request of the session
// is then a turn of the run ([toolset.RunContext.Turn]), and the server
// ends the run ([toolset.RunContext.End]) when the session ends or its run
// is dropped. So what a client may do is decided once per session; to
// decide per request, predicates read the request with
// [RequestFromContext].
//
// A tools/list or tools/call without a session (a 2026-07-28 client's, or
// any request to a stateless HTTP handler) is not given to it: with
// [WithRunOptions] it carries on a run by handle (see [WithRunStore]);
// without, it gets a run of its own from this function, ended after it,
// and no handle.
//
// A nil RunContext means the default run of [WithRunContext]. A run that
// cannot be used ([toolset.RunContext.Err], such as a run whose ID another
// live run has) fails the request as an internal error, and so does one
// that is not new: a run that has begun a turn, or that is already the run
// of another session (the server ends a session's run, and one session's
// reveals, failures and approvals must not reach another).
//
// A session's requests may come at once: each begins its turn and builds
// its tools while the session's other requests wait to begin theirs (one
// cancelled meanwhile stops waiting and fails), and then makes its call
// while they go on.
//
// An error refuses the request. To tell the client why, return a
// [*jsonrpc.Error] as it is (not wrapped): it is sent with its code and
// message (cut to 1 KiB). Any other error is internal (see [NewServer]):
// the client gets only an error ID. A panic is recovered and reported as
// an internal error.
type RunContextFunc func(ctx context.Context, req *Request) (*toolset.RunContext, error)

// ServerOption configures a [Server].
type ServerOption func(*serverConfig)

type serverConfig struct {
	impl     *mcp.Implementation
	opts     *mcp.ServerOptions
	agent    string
	runCtx   RunContextFunc
	page     int
	logger   *slog.Logger
	maxRuns  int
	trace    toolset.TracePropagator
	requests RequestObserver

	store        toolset.RunStore
	key          []byte
	keySet       bool
	previousKeys [][]byte
	handleTTL    time.Duration
	runOpts      RunOptionsFunc
	binding      func(*Request) string
	listTTL      time.Duration
	approvalTTL  time.Duration
	oauth        *OAuthConfig

	longRunning func(toolset.Tool) bool
	taskLimits  TaskLimits
}

// WithImplementation sets the server's name and version sent to clients;
// the default is {Name: "toolset", Version: "v0"}.
func WithImplementation(impl *mcp.Implementation) ServerOption {
	return func(c *serverConfig) { c.impl = impl }
}

// WithServerOptions sets the SDK's server options (logger, keep-alive,
// instructions, ...). The tools capability is always advertised, with
// listChanged unless the options' Capabilities.Tools says otherwise.
func WithServerOptions(opts *mcp.ServerOptions) ServerOption {
	return func(c *serverConfig) { c.opts = opts }
}

// WithRunContext sets the function that begins the run of each session
// (see [RunContextFunc]). Without it, a session's run has no values, and
// its ID is "mcp-" and the session's ID (or, for a session without one,
// such as over stdio, an ID made up for the session).
func WithRunContext(fn RunContextFunc) ServerOption {
	return func(c *serverConfig) { c.runCtx = fn }
}

// WithServerLogger sets the logger that records internal errors (with
// their error ID, see [NewServer]), recovered panics and dropped session
// runs; the default is slog.Default().
func WithServerLogger(l *slog.Logger) ServerOption {
	return func(c *serverConfig) { c.logger = l }
}

// WithMaxSessionRuns bounds the number of sessions whose run the server
// keeps (see [NewServer]); the default is [DefaultMaxSessionRuns]. Beyond
// it, the least recently used session's run is ended, and that session
// starts a new run at its next request. A warning is logged for the 1st,
// 2nd, 4th, 8th... run dropped, so a flood of sessions does not flood the
// log.
func WithMaxSessionRuns(n int) ServerOption {
	return func(c *serverConfig) { c.maxRuns = n }
}

// WithServerTracePropagator makes the server take the trace context a
// client put in a tools/call's params._meta ("traceparent" and
// "tracestate", see [WithTracePropagator]) and make it the parent of the
// call's work: the turn that builds the tools, the call's policies and
// the tool. A field that is not a string, is too long or has a byte that
// has no place in it is ignored (see [toolset.MaxTraceparentBytes]), as is
// a tracestate without a valid traceparent; the call goes on without it.
func WithServerTracePropagator(p toolset.TracePropagator) ServerOption {
	return func(c *serverConfig) { c.trace = p }
}

// WithServerRequestObserver makes o observe every tools/call the server
// answers (see [RequestObserver]), under the trace context the client
// sent when the server has a [WithServerTracePropagator].
func WithServerRequestObserver(o RequestObserver) ServerOption {
	return func(c *serverConfig) { c.requests = o }
}

// WithAgent sets the agent name passed to [toolset.BuildTools] and put in
// the default run context; the default is the implementation's name.
func WithAgent(name string) ServerOption { return func(c *serverConfig) { c.agent = name } }

// WithPageSize makes tools/list answer in pages of n tools; the default,
// zero, sends every tool in one page.
func WithPageSize(n int) ServerOption { return func(c *serverConfig) { c.page = n } }

// NewServer returns an MCP server whose tools are those of ts.
//
// Each tools/list builds the toolset's tools for the request's run context
// (see [WithRunContext]) with [toolset.BuildTools], and lists them with
// their parameter schemas as input schemas, their result schemas as
// output schemas, and the [MetaTitle] and hint metadata as title and
// annotations. Each tools/call builds the tools the same way and runs the
// call through [toolset.ToolList.Execute], under the same context, so a tool
// hidden from a client cannot be called by it, and arguments are
// validated. A result is sent as text (see [toolset.ResultText]), a
// [*toolset.Content] part by part, and, when the tool has a result
// schema, also as structured content.
//
// Each MCP session is one run ([toolset.RunContext]), begun at its first
// request (see [RunContextFunc]): its requests share the run's bookkeeping
// (the tools a tool search revealed, failures counted against failure
// budgets, run-scoped caches), and each request is the run's next turn.
// So a deferred tool that a search revealed is listed and callable from
// the session's next request, and never in another session. A session's
// run is ended when the session ends; at most [WithMaxSessionRuns]
// sessions keep one. A request without a session carries on a run by the
// handle its client sends back (see [WithRunStore]).
//
// A call of a tool that requires a human's approval
// ([toolset.WithApprovalRequired]) asks the client's user. A 2026-07-28
// client that can elicit gets an input-required result (SEP-2322): one
// input request, [ApprovalInputID], a form with the boolean
// [ApprovalField] whose message names the tool and its arguments (cut to
// 1 KiB), and a requestState, signed with the run key (see [WithRunKey]),
// that binds the answer to the tool, its exact arguments (canonical JSON)
// and parameter schema, the run the call was made in, and an expiry (see
// [WithApprovalStateTTL]). When the client repeats the call with the
// answer, the state is checked, the repeated call must have the same
// arguments, and the answer is recorded in the run
// ([toolset.RunContext.RecordApproval], or RecordDenial, whose reason the
// model sees) before the call runs. In a run that spans requests (a run
// handle's, a session's) a state is good for one answer. An older client
// that declared elicitation is asked by elicitation/create on its
// session, and the call runs or is denied in the same request. A client
// that can do neither gets an isError result saying the call needs an
// approval that cannot be asked for here.
//
// An error the model should see ([toolset.ErrorText] reports true)
// comes back as a result with isError set and the error's text. Any other
// error (a handler's failure, a toolset that cannot be built, a panic) is
// internal: the client gets a JSON-RPC error "internal error (id …)" with
// a random error ID, and the error itself is logged (see
// [WithServerLogger]) with the same ID, so its text, which may hold
// details of the host, never reaches a remote client. Every request is
// handled under recover: a panic in any callback it runs (a filter, a
// Dynamic function, a handler, an approval predicate, a cache key, the run
// context function, a handler of the SDK server) fails that request only,
// and the server goes on serving.
//
// If ts provides instructions ([toolset.InstructionsProvider]) and the
// server options set none, they are sent to each client at initialization.
//
// The tools come from ts alone: tools added to [Server.MCP] with the SDK's
// AddTool are not listed.
func NewServer(ts toolset.Toolset, opts ...ServerOption) *Server {
	var cfg serverConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	impl := cfg.impl
	if impl == nil {
		impl = &mcp.Implementation{Name: "toolset", Version: "v0"}
	}
	var so mcp.ServerOptions
	if cfg.opts != nil {
		so = *cfg.opts
	}
	caps := &mcp.ServerCapabilities{}
	if so.Capabilities != nil {
		c := *so.Capabilities
		caps = &c
	}
	if caps.Tools == nil {
		caps.Tools = &mcp.ToolCapabilities{ListChanged: true}
	}
	caps.Extensions = maps.Clone(caps.Extensions)
	caps.AddExtension(ExtensionTasks, map[string]any{})
	so.Capabilities = caps
	s := &Server{ts: ts, agent: cfg.agent, runCtx: cfg.runCtx, page: cfg.page, logger: cfg.logger, trace: cfg.trace, requests: cfg.requests}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	s.runs.logger, s.runs.max = s.logger, cfg.maxRuns
	if s.runs.max <= 0 {
		s.runs.max = DefaultMaxSessionRuns
	}
	if s.agent == "" {
		s.agent = impl.Name
	}
	s.listTTL = cfg.listTTL
	if cfg.oauth != nil {
		cfg.oauth.check()
		s.oauth = cfg.oauth
		if cfg.runCtx == nil && cfg.runOpts == nil {
			cfg.runCtx = tokenRun
			cfg.runOpts = func(_ context.Context, r *Request) ([]toolset.RunOption, error) { return TokenRunOptions(r), nil }
			s.runCtx = cfg.runCtx
		}
	}
	s.setupHandles(&cfg)
	s.approvals = approvalKeysFor(&cfg, s.keys)
	if _, ok := ts.(toolset.InstructionsProvider); ok && so.Instructions == "" {
		s.instr = true
	}
	s.tasks, s.longRunning = newTaskTable(cfg.taskLimits), cfg.longRunning
	s.runs.ended = s.tasks.endSession
	if s.longRunning == nil {
		s.longRunning = defaultLongRunning
	}
	s.srv = mcp.NewServer(impl, &so)
	s.registerTaskMethods()
	s.srv.AddTool(changeMarker, changeMarkerHandler)
	s.srv.AddReceivingMiddleware(s.middleware)
	return s
}

// changeMarker is a tool registered with the SDK server only so that
// registering it again makes the SDK send notifications/tools/list_changed
// to every session, the one way the SDK offers. Clients never see it:
// tools/list and tools/call are answered from the toolset.
var changeMarker = &mcp.Tool{
	Name:        "toolset_list_changed",
	InputSchema: json.RawMessage(`{"type":"object"}`),
}

func changeMarkerHandler(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errors.New("not a tool")
}

// MCP returns the SDK server, to run it over another transport or to add
// prompts and resources.
func (s *Server) MCP() *mcp.Server { return s.srv }

// ToolsChanged tells every connected client that the tool list changed
// (notifications/tools/list_changed), so that they list the tools again.
// Call it when what the toolset shows changes: a Dynamic toolset's choice,
// a filter's inputs, tools added to a toolset built per turn. Calls close
// together send one notification.
func (s *Server) ToolsChanged() {
	if s != nil && s.srv != nil {
		s.srv.AddTool(changeMarker, changeMarkerHandler)
	}
}

// errZeroServer is the error of a Server that NewServer did not make.
var errZeroServer = errors.New("mcptoolset: a Server must be made with NewServer")

// Run serves one session over transport t until the client disconnects
// or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	if s == nil || s.srv == nil {
		return errZeroServer
	}
	return s.srv.Run(ctx, t)
}

// ServeStdio serves one client over the process's stdin and stdout until
// the client disconnects or ctx ends: the way MCP clients run local
// servers.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.Run(ctx, &mcp.StdioTransport{})
}

// HTTPHandler returns an http.Handler that serves the streamable HTTP
// transport to clients of every protocol revision the SDK speaks; opts
// may be nil. Every HTTP session is a session of this one server.
//
// A client of 2026-07-28 or later (its requests' MCP-Protocol-Version
// header says so) has no session: its requests are served as a stateless
// handler serves them, and carry on their run by run handle (see
// [WithRunStore]). Older clients initialize a session, unless
// opts.Stateless is set: then their requests are sessionless too.
//
// The SDK's handler serves sessions or the 2026-07-28 revision, not both;
// this one holds one of each and sends each request to the one for its
// revision.
//
// With [WithOAuth], the handler serves only requests with a bearer token
// the configuration's verifier accepts (see [OAuthConfig.Protect]).
func (s *Server) HTTPHandler(opts *mcp.StreamableHTTPOptions) http.Handler {
	get := func(*http.Request) *mcp.Server { return s.srv }
	var o mcp.StreamableHTTPOptions
	if opts != nil {
		o = *opts
	}
	protect := func(h http.Handler) http.Handler { return h }
	if s.oauth != nil {
		protect = s.oauth.Protect
	}
	if o.Stateless {
		return protect(mcp.NewStreamableHTTPHandler(get, &o))
	}
	stateful := mcp.NewStreamableHTTPHandler(get, &o)
	o.Stateless = true
	stateless := mcp.NewStreamableHTTPHandler(get, &o)
	return protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if modernRevision(r.Header.Get("MCP-Protocol-Version")) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	}))
}

// tokenRun is the default run of a session of a server with WithOAuth:
// the default run, with the request's token's run values.
func tokenRun(_ context.Context, r *Request) (*toolset.RunContext, error) {
	id := ""
	if r.Session != nil && r.Session.ID() != "" {
		id = "mcp-" + r.Session.ID()
	}
	return toolset.NewRun(id, TokenRunOptions(r)...), nil
}

// firstSessionless is the first protocol revision without sessions.
const firstSessionless = "2026-07-28"

// modernRevision reports whether the protocol revision v, as a request's
// MCP-Protocol-Version header gives it, has no sessions. Revisions are
// dates, which compare as strings.
func modernRevision(v string) bool { return v >= firstSessionless }

func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	h := s.handler(next)
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		// The request is handled on a goroutine of its own, so that a
		// callback that panics or calls runtime.Goexit ends that goroutine
		// only, and the client is answered either way.
		var (
			res      mcp.Result
			err      error
			returned bool
		)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if p := recover(); p != nil {
					err = s.internal(ctx, method, req, &toolset.PanicError{Tool: toolName(req), Callback: method + " handler", Value: p, Stack: debug.Stack()})
					returned = true
				}
			}()
			res, err = h(ctx, method, req)
			returned = true
		}()
		<-done
		if !returned {
			return nil, s.internal(ctx, method, req, errors.New("mcptoolset: the request's handling called runtime.Goexit"))
		}
		return res, err
	}
}

// handler handles a request, answering tools/list and tools/call from the
// toolset and passing the rest to next.
func (s *Server) handler(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			if method == "tools/list" {
				res, err := s.listTools(ctx, r)
				if err != nil {
					return nil, err
				}
				return res, nil
			}
		case *mcp.CallToolRequest:
			if method == "tools/call" {
				res, task, err := s.callTool(ctx, r)
				switch {
				case err != nil:
					return nil, err
				case task != nil:
					return task, nil
				}
				return res, nil
			}
		}
		switch method {
		case methodTasksGet, methodTasksUpdate, methodTasksCancel:
			return s.taskRequest(method, req)
		}
		if !s.instr || (method != "initialize" && method != "server/discover") {
			return next(ctx, method, req)
		}
		// The instructions are worked out before the SDK records the
		// session as initialized, so that a failure leaves the client free
		// to try the other handshake.
		text, err := s.instructions(ctx, method, req)
		if err != nil {
			return nil, err
		}
		res, err = next(ctx, method, req)
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Instructions = text
		case *mcp.DiscoverResult:
			r.Instructions = text
		}
		return res, err
	}
}

// toolName returns the name of the tool a tools/call request calls, or "".
func toolName(req mcp.Request) string {
	if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
		return r.Params.Name
	}
	return ""
}

// maxRefusalShown bounds the message of a run context function's refusal.
const maxRefusalShown = 1024

// maxLoggedName bounds the length of a client's tool name in logs and
// messages.
const maxLoggedName = 200

// internal logs err, which the client must not see, under a new error ID,
// and returns the JSON-RPC error the client gets instead.
func (s *Server) internal(ctx context.Context, method string, req mcp.Request, err error) error {
	id := randomID()
	attrs := []any{"error_id", id, "method", method, "error", err}
	if name := toolName(req); name != "" {
		attrs = append(attrs, "tool", textcut.Clip(name, maxLoggedName))
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		attrs = append(attrs, "session", ss.ID())
	}
	var pe *toolset.PanicError
	if errors.As(err, &pe) {
		attrs = append(attrs, "stack", string(pe.Stack))
	}
	s.logger.ErrorContext(ctx, "mcptoolset: request failed", attrs...)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error (id " + id + ")"}
}

// context returns the context of req's turn: a turn of the session's
// run, or of a run of the request's own for a request without a session.
// Call built once the request has built its tools (or at once, for one
// that builds none): until then the session's other requests wait to begin
// their turns. Call end when the request is done; it calls built if that
// has not been called.
func (s *Server) context(ctx context.Context, method string, req mcp.Request, tool string) (_ context.Context, built, end func(), err error) {
	r := &Request{Method: method, Extra: req.GetExtra(), Tool: tool}
	r.Session, _ = req.GetSession().(*mcp.ServerSession)
	if ci, ok := req.(interface{ ClientInfo() *mcp.Implementation }); ok {
		r.Client = ci.ClientInfo()
	}
	if p, ok := req.GetParams().(*mcp.InitializeParams); ok && r.Client == nil && p != nil {
		r.Client = p.ClientInfo
	}
	start := func() (*toolset.RunContext, error) {
		var rc *toolset.RunContext
		if s.runCtx != nil {
			var err error
			if rc, err = s.runCtx(ctx, r); err != nil {
				return nil, s.refusal(ctx, method, req, err)
			}
		}
		if rc == nil {
			id := ""
			if r.Session != nil && r.Session.ID() != "" {
				id = "mcp-" + r.Session.ID()
			}
			rc = toolset.NewRun(id)
		}
		if err := rc.Err(); err != nil {
			rc.End()
			return nil, s.internal(ctx, method, req, fmt.Errorf("mcptoolset: the run context function: %w", err))
		}
		if rc.Step() >= 0 {
			// The application's own loop is using it; it is not the
			// server's to end.
			return nil, s.internal(ctx, method, req, fmt.Errorf("mcptoolset: the run context function returned run %q, which has begun a turn already: begin a new run (toolset.NewRun) for each session", rc.ID()))
		}
		return rc, nil
	}
	if s.usesHandle(r) {
		return s.handleContext(ctx, method, req, r)
	}
	noop := func() {}
	if r.Session == nil {
		// No session to keep a run in: the request is a run of its own.
		rc, err := start()
		if err != nil {
			return nil, nil, nil, err
		}
		return rc.Turn(context.WithValue(ctx, requestKey{}, r)), noop, rc.End, nil
	}
	rc, turn, err := s.runs.run(r.Session, start)
	if err != nil {
		if errors.Is(err, errSharedRun) {
			err = s.internal(ctx, method, req, err)
		}
		return nil, nil, nil, err
	}
	if err := turn.lock(ctx); err != nil {
		return nil, nil, nil, err
	}
	built = sync.OnceFunc(turn.unlock)
	return rc.Turn(context.WithValue(ctx, requestKey{}, r)), built, built, nil
}

// refusal returns the error the client gets when the run context function
// refuses a request with err.
func (s *Server) refusal(ctx context.Context, method string, req mcp.Request, err error) error {
	// Only an error made for the client: one wrapped may come from
	// anywhere, such as another server the function asked.
	if je, ok := err.(*jsonrpc.Error); ok {
		return &jsonrpc.Error{Code: je.Code, Message: textcut.Clip(je.Message, maxRefusalShown)}
	}
	return s.internal(ctx, method, req, fmt.Errorf("mcptoolset: building the run context: %w", err))
}

func (s *Server) instructions(ctx context.Context, method string, req mcp.Request) (string, error) {
	ctx, built, done, err := s.context(ctx, method, req, "")
	if err != nil {
		return "", err
	}
	defer done()
	built()
	text, err := toolset.Instructions(ctx, s.ts)
	if err != nil {
		return "", s.internal(ctx, method, req, fmt.Errorf("mcptoolset: instructions: %w", err))
	}
	return text, nil
}

func (s *Server) listTools(ctx context.Context, req *mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	ctx, built, done, err := s.context(ctx, "tools/list", req, "")
	if err != nil {
		return nil, err
	}
	defer done()
	tools, err := toolset.BuildTools(ctx, s.agent, s.ts)
	built()
	if err != nil {
		return nil, s.internal(ctx, "tools/list", req, err)
	}
	list := tools.Tools()
	start := 0
	if req.Params != nil && req.Params.Cursor != "" {
		if start, err = parseCursor(req.Params.Cursor, len(list)); err != nil {
			return nil, err
		}
	}
	end, next := len(list), ""
	if s.page > 0 && end-start > s.page {
		end = start + s.page
		next = makeCursor(end)
	}
	res := &mcp.ListToolsResult{Tools: make([]*mcp.Tool, 0, end-start), NextCursor: next}
	res.Meta = setHandle(ctx, res.Meta)
	res.TTLMs = int(s.listTTL.Milliseconds())
	res.CacheScope = "private"
	for _, t := range list[start:end] {
		mt, err := mcpTool(t)
		if err != nil {
			return nil, s.internal(ctx, "tools/list", req, err)
		}
		res.Tools = append(res.Tools, mt)
	}
	return res, nil
}

const cursorPrefix = "toolset:"

func makeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.Itoa(offset)))
}

// parseCursor reads a cursor made by makeCursor. The list may have
// shrunk since: a cursor past its end gives an empty page.
func parseCursor(cursor string, n int) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	s, ok := strings.CutPrefix(string(b), cursorPrefix)
	offset, aerr := strconv.Atoi(s)
	if err != nil || !ok || aerr != nil || offset < 0 {
		return 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid cursor %q", textcut.Clip(cursor, 64))}
	}
	return min(offset, n), nil
}

// mcpTool describes t to MCP clients.
func mcpTool(t toolset.Tool) (*mcp.Tool, error) {
	params, err := t.ParametersJSON()
	if err != nil {
		return nil, fmt.Errorf("mcptoolset: tool %q: %w", t.Name, err)
	}
	mt := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: params, Title: t.Metadata[MetaTitle]}
	if t.Returns != nil {
		b, err := json.Marshal(t.Returns)
		if err != nil {
			return nil, fmt.Errorf("mcptoolset: tool %q: encoding the result schema: %w", t.Name, err)
		}
		mt.OutputSchema = json.RawMessage(b)
	}
	mt.Annotations = annotationsOf(t.Metadata)
	if e, declared := t.Effects(); declared && mt.Annotations == nil {
		// A tool of the program's that declares its effects: its
		// annotations say them.
		mt.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: e.ReadOnly, IdempotentHint: e.Idempotent,
			DestructiveHint: &e.Destructive, OpenWorldHint: &e.OpenWorld}
	}
	return mt, nil
}

// annotationsOf reads the hint metadata back into MCP annotations, or
// returns nil when there is none.
func annotationsOf(md map[string]string) *mcp.ToolAnnotations {
	var a mcp.ToolAnnotations
	found := false
	flag := func(key string) *bool {
		v, err := strconv.ParseBool(md[key])
		if err != nil {
			return nil
		}
		found = true
		return &v
	}
	if v := flag(MetaReadOnly); v != nil {
		a.ReadOnlyHint = *v
	}
	if v := flag(MetaIdempotent); v != nil {
		a.IdempotentHint = *v
	}
	a.DestructiveHint = flag(MetaDestructive)
	a.OpenWorldHint = flag(MetaOpenWorld)
	if !found {
		return nil
	}
	return &a
}

func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *taskWire, error) {
	if req.Params == nil {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing params"}
	}
	if s.trace != nil {
		meta := req.Params.Meta
		parent, state := tracefields.Get(func(k string) (string, bool) { v, ok := meta[k].(string); return v, ok })
		ctx = tracefields.Extract(ctx, s.trace, parent, state)
	}
	var sessionID string
	if req.Session != nil {
		sessionID = req.Session.ID()
	}
	ctx, endRequest := startRequest(ctx, s.requests, s.logger, RequestInfo{Method: "tools/call", Tool: req.Params.Name, SessionID: sessionID})
	var (
		res  *mcp.CallToolResult
		task *taskWire
		err  error
	)
	defer func() { endRequest(RequestEnd{Err: err, ToolError: err == nil && res != nil && res.IsError}) }()
	res, task, err = s.call(ctx, req)
	return res, task, err
}

// call answers a tools/call request under the context of its trace: with
// a result, or with a task that makes the call in the background.
func (s *Server) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *taskWire, error) {
	name := req.Params.Name
	ctx, built, done, err := s.context(ctx, "tools/call", req, name)
	if err != nil {
		return nil, nil, err
	}
	handedOff := false
	defer func() {
		if !handedOff {
			done()
		}
	}()
	// The tools are built and the call made under the context of one turn
	// of the session's run; the calls of the session's other requests may
	// run meanwhile.
	tools, err := toolset.BuildTools(ctx, s.agent, s.ts)
	built()
	if err != nil {
		return nil, nil, s.internal(ctx, "tools/call", req, err)
	}
	if t, ok := tools.Lookup(name); ok {
		long, err := s.asTask(ctx, req, t)
		if err != nil {
			return nil, nil, err
		}
		if long {
			// The task ends the request's turn when it is done.
			task, err := s.startTask(ctx, req, tools, done)
			if err != nil || task != nil {
				handedOff = task != nil
				return nil, task, err
			}
		}
	}
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		ctx = toolset.WithProgress(ctx, progressSender(ctx, req.Session, tok))
	}
	res, err := s.finishCall(ctx, req, tools)
	return res, nil, err
}

// finishCall makes the call of req with tools, under the turn's context.
func (s *Server) finishCall(ctx context.Context, req *mcp.CallToolRequest, tools *toolset.ToolList) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	x := s.execute(ctx, req, tools)
	switch {
	case x.rpc != nil:
		return nil, x.rpc
	case x.input != nil:
		x.input.Meta = setHandle(ctx, x.input.Meta)
		return x.input, nil
	}
	v, err := x.v, x.err
	if err != nil {
		res, ok := errorResult(err)
		if !ok {
			if inTask(ctx) && ctx.Err() != nil {
				// The task was stopped; it says why.
				return nil, err
			}
			return nil, s.internal(ctx, "tools/call", req, err)
		}
		res.Meta = setHandle(ctx, res.Meta)
		return res, nil
	}
	more := revealed(v)
	if more {
		// The run lists more from its next request: clients list again.
		s.ToolsChanged()
	}
	t, _ := tools.Lookup(name)
	res, err := toMCP(v, t.Returns != nil)
	if err != nil {
		return nil, s.internal(ctx, "tools/call", req, fmt.Errorf("mcptoolset: tool %q: %w", name, err))
	}
	res.Meta = setHandle(ctx, res.Meta)
	if more {
		// Said in the result too, for a client with no session and no
		// listen stream to be notified on.
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		res.Meta[MetaListChanged] = true
	}
	return res, nil
}

// revealed reports whether v, a call's result, is a tool search's that
// revealed a tool to the run.
func revealed(v any) bool {
	switch r := v.(type) {
	case toolset.ToolSearchResult:
		return len(r.Tools) > 0
	case *toolset.ToolSearchResult:
		return r != nil && len(r.Tools) > 0
	}
	return false
}

// errorResult turns an error the model should see into an isError result,
// keeping every part of a proxied MCP tool's error result. It reports
// false for any other error.
func errorResult(err error) (*mcp.CallToolResult, bool) {
	msg, ok := toolset.ErrorText(err)
	var are *toolset.ApprovalRequiredError
	if !ok && errors.As(err, &are) {
		// Nobody here can approve it: tell the model, which can do without.
		msg, ok = fmt.Sprintf("the call of tool %q needs a human's approval, which cannot be asked for here; do without it", are.Call.Name), true
	}
	if !ok {
		return nil, false
	}
	var re *ResultError
	if errors.As(err, &re) && re.Content != nil && len(re.Content.Parts) > 0 {
		if res, cerr := contentToMCP(re.Content); cerr == nil {
			res.IsError = true
			return res, true
		}
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, true
}

// progressSender returns the progress callback of a call whose client
// sent a progress token: each report becomes a notifications/progress.
// Progress must increase with each notification (MCP): a known fraction
// is sent as a percentage of a total of 100, and a report without one
// moves the count on by one, or by a hundredth once a total was sent.
func progressSender(ctx context.Context, ss *mcp.ServerSession, token any) func(toolset.Progress) {
	var mu sync.Mutex
	var last, total float64
	return func(p toolset.Progress) {
		mu.Lock()
		defer mu.Unlock()
		next := last + 1
		switch {
		case p.Fraction >= 0:
			total = 100
			next = max(p.Fraction*100, last+0.01)
		case total > 0:
			next = last + 0.01
		}
		last = next
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Message: p.Message, Progress: next, Total: total,
		})
	}
}
