package mcptoolset

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server serves a [toolset.Toolset] as an MCP server. Make one with
// [NewServer]; serve it with [Server.ServeStdio], [Server.HTTPHandler] or,
// for any other transport, through the SDK server that [Server.MCP]
// returns. A Server is safe for concurrent use by any number of sessions.
type Server struct {
	srv    *mcp.Server
	ts     toolset.Toolset
	agent  string
	runCtx RunContextFunc
	page   int
	instr  bool // the toolset's instructions are sent at initialization
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
}

// RunContextFunc builds the run context for one MCP request, from which
// [toolset.BuildTools] builds the tools that request sees: a filtered
// toolset shows each client only its own tools, a Dynamic one picks the
// client's toolset. It is called for every request; cache by
// req.Session.ID() if building is costly. An error refuses the request
// with a JSON-RPC error carrying its text.
type RunContextFunc func(ctx context.Context, req *Request) (*toolset.RunContext, error)

// ServerOption configures a [Server].
type ServerOption func(*serverConfig)

type serverConfig struct {
	impl   *mcp.Implementation
	opts   *mcp.ServerOptions
	agent  string
	runCtx RunContextFunc
	page   int
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

// WithRunContext sets the function that builds each request's run
// context. Without it, requests run with a RunContext whose Agent is the
// agent name and whose RunID is the session's ID.
func WithRunContext(fn RunContextFunc) ServerOption {
	return func(c *serverConfig) { c.runCtx = fn }
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
// call through [toolset.Tools.Execute], so a tool hidden from a client
// cannot be called by it, and arguments are validated. An error the model
// should see ([toolset.ModelMessage] reports true) comes back as a result
// with isError set and the error's text; any other error as a JSON-RPC
// error. A result is sent as text (see [toolset.ResultText]), a
// [*toolset.Content] part by part, and, when the tool has a result
// schema, also as structured content.
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
	so.Capabilities = caps
	s := &Server{ts: ts, agent: cfg.agent, runCtx: cfg.runCtx, page: cfg.page}
	if s.agent == "" {
		s.agent = impl.Name
	}
	if _, ok := ts.(toolset.InstructionsProvider); ok && so.Instructions == "" {
		s.instr = true
	}
	s.srv = mcp.NewServer(impl, &so)
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
// transport; opts may be nil. Every HTTP session is a session of this one
// server.
func (s *Server) HTTPHandler(opts *mcp.StreamableHTTPOptions) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, opts)
}

func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
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
				res, err := s.callTool(ctx, r)
				if err != nil {
					return nil, err
				}
				return res, nil
			}
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
		res, err := next(ctx, method, req)
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Instructions = text
		case *mcp.DiscoverResult:
			r.Instructions = text
		}
		return res, err
	}
}

// context returns ctx with the run context of req.
func (s *Server) context(ctx context.Context, method string, req mcp.Request, tool string) (context.Context, error) {
	r := &Request{Method: method, Extra: req.GetExtra(), Tool: tool}
	r.Session, _ = req.GetSession().(*mcp.ServerSession)
	if ci, ok := req.(interface{ ClientInfo() *mcp.Implementation }); ok {
		r.Client = ci.ClientInfo()
	}
	if p, ok := req.GetParams().(*mcp.InitializeParams); ok && r.Client == nil && p != nil {
		r.Client = p.ClientInfo
	}
	var rc *toolset.RunContext
	if s.runCtx != nil {
		var err error
		if rc, err = s.runCtx(ctx, r); err != nil {
			return nil, fmt.Errorf("mcptoolset: building the run context: %w", err)
		}
	}
	if rc == nil {
		rc = &toolset.RunContext{Agent: s.agent}
		if r.Session != nil {
			rc.RunID = r.Session.ID()
		}
	} else {
		// NewContext may fill in rc: work on a copy, as the function may
		// return one RunContext to concurrent requests.
		c := *rc
		rc = &c
	}
	return toolset.NewContext(ctx, rc), nil
}

func (s *Server) instructions(ctx context.Context, method string, req mcp.Request) (string, error) {
	ctx, err := s.context(ctx, method, req, "")
	if err != nil {
		return "", err
	}
	text, err := toolset.Instructions(ctx, s.ts)
	if err != nil {
		return "", fmt.Errorf("mcptoolset: instructions: %w", err)
	}
	return text, nil
}

func (s *Server) listTools(ctx context.Context, req *mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	ctx, err := s.context(ctx, "tools/list", req, "")
	if err != nil {
		return nil, err
	}
	tools, err := toolset.BuildTools(ctx, s.agent, s.ts)
	if err != nil {
		return nil, err
	}
	list := tools.List()
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
	for _, t := range list[start:end] {
		mt, err := mcpTool(t)
		if err != nil {
			return nil, err
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
		return 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid cursor %q", cursor)}
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

func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing params"}
	}
	name := req.Params.Name
	ctx, err := s.context(ctx, "tools/call", req, name)
	if err != nil {
		return nil, err
	}
	tools, err := toolset.BuildTools(ctx, s.agent, s.ts)
	if err != nil {
		return nil, err
	}
	v, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: req.Params.Arguments})
	if err != nil {
		return errorResult(err)
	}
	t, _ := tools.Lookup(name)
	res, err := toMCP(v, t.Returns != nil)
	if err != nil {
		return nil, fmt.Errorf("mcptoolset: tool %q: %w", name, err)
	}
	return res, nil
}

// errorResult turns an error the model should see into an isError result,
// keeping every part of a proxied MCP tool's error result.
func errorResult(err error) (*mcp.CallToolResult, error) {
	msg, ok := toolset.ModelMessage(err)
	if !ok {
		return nil, err
	}
	var re *ResultError
	if errors.As(err, &re) && re.Content != nil && len(re.Content.Parts) > 0 {
		if res, cerr := contentToMCP(re.Content); cerr == nil {
			res.IsError = true
			return res, nil
		}
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
}
