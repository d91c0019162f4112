package mcptoolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/canonjson"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 server asks for a user's input by answering a tools/call
// with an input-required result (SEP-2322). The client side does not
// answer it from an SDK callback outside the agent's run: a request to
// confirm (a form with one boolean) becomes an approval of the call in
// the run, asked and decided as for any tool that requires one.

// Bounds on what a server's input request may hold.
const (
	maxRequestStateBytes = 16 << 10
	maxAskSchemaBytes    = 8 << 10
	maxAskMessageShown   = 512
	maxAsksKept          = 1024
	askTTL               = time.Hour
)

// serverAsk is a server's request to confirm a call, waiting for the run's
// decision.
type serverAsk struct {
	session bool   // asked by elicitation/create on the session
	state   string // the server's requestState, opaque
	id      string // the input request's ID
	field   string // the boolean property of its form
	at      time.Time
}

// askTable keeps a connection's server requests to confirm, by the call
// they are for; bounded, oldest dropped.
type askTable struct {
	mu sync.Mutex
	m  map[string]serverAsk
}

func (t *askTable) put(key string, a serverAsk) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]serverAsk)
	}
	now := time.Now()
	for k, v := range t.m {
		if now.Sub(v.at) > askTTL {
			delete(t.m, k)
		}
	}
	for len(t.m) >= maxAsksKept {
		oldest, at := "", now
		for k, v := range t.m {
			if !v.at.After(at) {
				oldest, at = k, v.at
			}
		}
		delete(t.m, oldest)
	}
	t.m[key] = a
}

func (t *askTable) take(key string) (serverAsk, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.m[key]
	delete(t.m, key)
	return a, ok && time.Since(a.at) <= askTTL
}

// callKey carries the tool call to the handler of a tool of the server.
type callKey struct{}

// carryCall is the middleware of every tool of the server: it gives the
// handler the call (its ID, which approvals are recorded by).
func carryCall(next toolset.Handler) toolset.Handler {
	return func(ctx context.Context, call toolset.ToolCall) (any, error) {
		return next(context.WithValue(ctx, callKey{}, call), call)
	}
}

// gate is the tool through which a server's request to confirm a call is
// asked in the run: it requires approval of every call, and does nothing
// once approved.
var gate = newGate()

func newGate() toolset.Tool {
	params, err := toolset.ParseSchema([]byte(`{"type":"object"}`))
	if err != nil {
		panic(err) // a fixed schema
	}
	return toolset.NewRawTool("mcp_confirm", "Confirms a call an MCP server asked about.", params,
		func(context.Context, json.RawMessage) (any, error) { return nil, nil },
		toolset.WithApprovalRequired(toolset.Always))
}

// askKey names the call of ctx, of the server's tool name with args, in
// its run; false if ctx has no run or call.
func askKey(ctx context.Context, name string, args json.RawMessage) (string, toolset.ToolCall, bool) {
	rc := toolset.FromContext(ctx)
	call, ok := ctx.Value(callKey{}).(toolset.ToolCall)
	if rc == nil || !ok {
		return "", call, false
	}
	canon, err := canonjson.Append(nil, args)
	if err != nil {
		canon = args
	}
	return strings.Join([]string{rc.ID(), call.ID, call.Name, name, string(canon)}, "\x00"), call, true
}

// pendingAnswer returns the params of a call that answers the server's
// request to confirm the call of ctx, if the run approved it; nil if the
// server did not ask, or an error (the run's denial, or its request for
// approval) if the run has not approved it.
func (c *conn) pendingAnswer(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolParams, error) {
	key, call, ok := askKey(ctx, name, args)
	if !ok {
		return nil, nil
	}
	a, ok := c.asks.take(key)
	if !ok {
		return nil, nil
	}
	if _, err := gate.Execute(ctx, call); err != nil {
		var are *toolset.ApprovalRequiredError
		if errors.As(err, &are) {
			c.asks.put(key, a) // still asked; a denial is used up
		}
		return nil, err
	}
	if a.session {
		// Asked on the session again when the call is repeated: the
		// elicitation handler answers it.
		if f := flightOf(ctx); f != nil {
			f.mu.Lock()
			f.approved = &a
			f.mu.Unlock()
		}
		return nil, nil
	}
	return a.answer(name, args), nil
}

// inputRequired handles a server's input-required result to the call of
// ctx: a request to confirm is asked in the run; any other is an error
// the model sees, naming what the server asked. It returns the params of
// the call that answers the server if the run had approved the call
// already.
func (c *conn) inputRequired(ctx context.Context, name string, args json.RawMessage, res *mcp.CallToolResult) (*mcp.CallToolParams, error) {
	if len(res.InputRequests) == 0 {
		return nil, &InputRequestError{Server: c.cfg.name, Tool: name, Asked: "nothing (it is busy: try again later)"}
	}
	id, field, asked := confirmation(res.InputRequests)
	if field == "" || len(res.RequestState) > maxRequestStateBytes {
		if field != "" {
			asked = "a confirmation whose requestState is too long"
		}
		return nil, &InputRequestError{Server: c.cfg.name, Tool: name, Asked: asked}
	}
	key, call, ok := askKey(ctx, name, args)
	if !ok {
		return nil, &InputRequestError{Server: c.cfg.name, Tool: name, Asked: asked + ", which needs a run and a tool call to be approved in"}
	}
	a := serverAsk{state: res.RequestState, id: id, field: field, at: time.Now()}
	c.asks.put(key, a)
	if _, err := gate.Execute(ctx, call); err != nil {
		return nil, err
	}
	// Approved before it was asked: answer at once.
	c.asks.take(key)
	return a.answer(name, args), nil
}

// answer returns the params of the call that answers a with an approval.
func (a *serverAsk) answer(name string, args json.RawMessage) *mcp.CallToolParams {
	return &mcp.CallToolParams{
		Name: name, Arguments: args, RequestState: a.state,
		InputResponses: mcp.InputResponseMap{a.id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{a.field: true}}},
	}
}

// confirmation returns the ID and boolean field of reqs if it is one
// request to confirm (a form with one boolean property), and in any case
// a description of what was asked.
func confirmation(reqs mcp.InputRequestMap) (id, field, asked string) {
	var kinds []string
	for k, r := range reqs {
		switch p := r.(type) {
		case *mcp.ElicitParams:
			if f := booleanForm(p); f != "" && len(reqs) == 1 {
				return k, f, "a confirmation"
			}
			msg := ""
			if p != nil {
				msg = fmt.Sprintf(" %q", textcut.Clip(p.Message, maxAskMessageShown))
			}
			kinds = append(kinds, "an elicitation"+msg)
		default:
			kinds = append(kinds, "a "+methodOf(k, r)+" request")
		}
		if len(kinds) == 8 {
			kinds = append(kinds, "more")
			break
		}
	}
	slices.Sort(kinds)
	return "", "", strings.Join(kinds, ", ")
}

// methodOf returns the method of input request r, with ID id, as it goes
// on the wire.
func methodOf(id string, r mcp.InputRequest) string {
	b, err := json.Marshal(mcp.InputRequestMap{id: r})
	var m map[string]struct {
		Method string `json:"method"`
	}
	if err != nil || json.Unmarshal(b, &m) != nil || m[id].Method == "" {
		return "kind of"
	}
	return textcut.Clip(m[id].Method, maxLoggedName)
}

// booleanForm returns the one boolean property of form elicitation p, or
// "" if p is not such a form.
func booleanForm(p *mcp.ElicitParams) string {
	if p == nil || (p.Mode != "" && p.Mode != "form") || p.URL != "" {
		return ""
	}
	b, err := json.Marshal(p.RequestedSchema)
	if err != nil || len(b) > maxAskSchemaBytes {
		return ""
	}
	var s struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(b, &s) != nil || s.Type != "object" || len(s.Properties) != 1 {
		return ""
	}
	for k, v := range s.Properties {
		if v.Type == "boolean" {
			return k
		}
	}
	return ""
}

// InputRequestError reports a server's request for input that the client
// cannot answer in the run: anything but a request to confirm the call.
// The model sees it. (A request to confirm becomes an approval of the
// call, see [New].)
type InputRequestError struct {
	// Server and Tool name the server and its tool.
	Server, Tool string
	// Asked says what the server asked for.
	Asked string
}

// Error implements error.
func (e *InputRequestError) Error() string { return "mcptoolset: " + e.ModelText() }

// ModelText implements [toolset.ModelError].
func (e *InputRequestError) ModelText() string {
	return fmt.Sprintf("the MCP server %q asked, for the call of its tool %q, for input this client cannot give: %s",
		textcut.Clip(e.Server, maxLoggedName), textcut.Clip(e.Tool, maxLoggedName), e.Asked)
}

// askInRun sets opts so that a server's input requests reach the run: the
// SDK's own answering of input-required results is off (the call answers
// them, see inputRequired), and form elicitation is declared, so that a
// server asks. An elicitation/create on the session is answered by the
// options' ElicitationHandler, if any; without one, by c (see
// sessionElicit).
func (c *conn) askInRun(opts *mcp.ClientOptions) {
	opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	caps := &mcp.ClientCapabilities{}
	if opts.Capabilities != nil {
		cp := *opts.Capabilities
		caps = &cp
	}
	if caps.Elicitation == nil {
		caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
	}
	opts.Capabilities = caps
	if opts.ElicitationHandler == nil {
		opts.ElicitationHandler = c.sessionElicit
	}
}

// callFlight is a tools/call in flight on a connection, for the elicitation
// an older server sends on the session while it runs.
type callFlight struct {
	ctx  context.Context // the call's: its run and tool call
	name string          // the server's tool name
	args json.RawMessage

	mu       sync.Mutex
	approved *serverAsk // the run approved the call: accept its confirmation
	err      error      // the call's error, set by the elicitation handler
}

type flightKey struct{}

func flightOf(ctx context.Context) *callFlight {
	f, _ := ctx.Value(flightKey{}).(*callFlight)
	return f
}

// fly records a call in flight on c, returning its context and a
// function that ends it.
func (c *conn) fly(ctx context.Context, name string, args json.RawMessage) (context.Context, *callFlight, func()) {
	f := &callFlight{name: name, args: args}
	ctx = context.WithValue(ctx, flightKey{}, f)
	f.ctx = ctx
	c.mu.Lock()
	if c.calls == nil {
		c.calls = make(map[*callFlight]struct{})
	}
	c.calls[f] = struct{}{}
	c.mu.Unlock()
	return ctx, f, func() {
		c.mu.Lock()
		delete(c.calls, f)
		c.mu.Unlock()
	}
}

// errWhichCall refuses an elicitation that cannot be tied to one call.
var errWhichCall = errors.New("this client answers elicitation/create only while exactly one of its tool calls is in flight on the session, to tell which call it is about")

// sessionElicit answers an elicitation/create an older server sends on
// the session while a call runs. The SDK does not say which request it
// belongs to, so it is taken to belong to the one call in flight, and
// refused when there is not exactly one. A confirmation (a form with one
// boolean) the run has approved is accepted; one it has not decided is
// cancelled, and the call fails with the run's request for approval; any
// other question is cancelled, and the call fails with an
// [*InputRequestError].
func (c *conn) sessionElicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	c.mu.Lock()
	var f *callFlight
	if len(c.calls) == 1 {
		for f = range c.calls {
		}
	}
	c.mu.Unlock()
	if f == nil || req == nil || req.Params == nil {
		return nil, errWhichCall
	}
	field := booleanForm(req.Params)
	f.mu.Lock()
	defer f.mu.Unlock()
	if field == "" {
		f.err = &InputRequestError{Server: c.cfg.name, Tool: f.name, Asked: fmt.Sprintf("an elicitation %q", textcut.Clip(req.Params.Message, maxAskMessageShown))}
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	if f.approved != nil {
		f.approved = nil
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{field: true}}, nil
	}
	key, call, ok := askKey(f.ctx, f.name, f.args)
	if !ok {
		f.err = &InputRequestError{Server: c.cfg.name, Tool: f.name, Asked: "a confirmation, which needs a run and a tool call to be approved in"}
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	a := serverAsk{session: true, field: field, at: time.Now()}
	c.asks.put(key, a)
	if _, err := gate.Execute(f.ctx, call); err != nil {
		f.err = err
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	c.asks.take(key) // approved before it was asked
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{field: true}}, nil
}
