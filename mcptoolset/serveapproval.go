package mcptoolset

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A served tool that requires a human's approval asks the client for it
// (see [NewServer]): a 2026-07-28 client by an input-required result
// (SEP-2322) whose requestState is signed (see approvalstate.go), an older
// one that can elicit by elicitation/create on its session.

// ApprovalInputID is the key of the input request by which a served tool
// asks for approval, and of its answer in the repeated call's
// inputResponses.
const ApprovalInputID = "approval"

// ApprovalField is the boolean property of the form by which a served tool
// asks for approval: true approves the call.
const ApprovalField = "approve"

// maxApprovalArgsShown bounds the arguments shown in a request for
// approval.
const maxApprovalArgsShown = 1024

// approvalSchema is the form of a request for approval.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"` + ApprovalField +
	`":{"type":"boolean","title":"Approve","description":"Allow this call to run"}},"required":["` + ApprovalField + `"]}`)

// WithApprovalStateTTL sets how long a client has to answer a served
// tool's request for approval: the expiry of the requestState of its
// input-required result (see [NewServer]); the default is
// [DefaultApprovalStateTTL].
func WithApprovalStateTTL(d time.Duration) ServerOption {
	return func(c *serverConfig) { c.approvalTTL = d }
}

// approvalKeysFor returns the keys that sign approval states: the run
// keys, or a random key for a server without run handles.
func approvalKeysFor(cfg *serverConfig, run *handleKeys) *handleKeys {
	k := &handleKeys{ttl: cfg.approvalTTL, now: time.Now}
	if k.ttl <= 0 {
		k.ttl = DefaultApprovalStateTTL
	}
	switch {
	case run != nil:
		k.key, k.previous, k.now = run.key, run.previous, run.now
	case cfg.keySet && len(cfg.key) >= MinRunKeyBytes:
		k.key, k.previous = cfg.key, cfg.previousKeys
	default:
		k.key = make([]byte, 32)
		_, _ = rand.Read(k.key) // never fails
	}
	return k
}

// bindingOf names the client of r for run handles and approval states.
func (s *Server) bindingOf(r *Request) string {
	if s.binding != nil {
		return s.binding(r)
	}
	return defaultBinding(r)
}

// execution is what executing a served call gave: a value or an error for
// the result, an input-required result, or an error for the client.
type execution struct {
	v     any
	err   error
	input *mcp.CallToolResult
	rpc   *jsonrpc.Error
}

// execute runs a served call: asking the client for approval when the
// tool requires it, and recording the answer of a repeated call.
func (s *Server) execute(ctx context.Context, req *mcp.CallToolRequest, tools *toolset.ToolList) execution {
	p := req.Params
	call := toolset.ToolCall{Name: p.Name, Args: p.Arguments}
	if p.RequestState != "" || p.InputResponses != nil {
		return s.answered(ctx, req, tools, call)
	}
	sub := &approvalSubject{nonce: newNonce(), name: p.Name}
	call.ID = sub.callID()
	v, err := tools.Execute(ctx, call)
	rc := toolset.FromContext(ctx)
	var are *toolset.ApprovalRequiredError
	if err == nil || rc == nil || !errors.As(err, &are) || are.Call.ID != call.ID || are.RunID != rc.ID() {
		return execution{v: v, err: err}
	}
	entry, ok := pendingOf(rc, call.ID, p.Name)
	if !ok || len(entry) != 1 {
		return execution{err: err}
	}
	sub.args, sub.schema = string(entry[0].Args), entry[0].SchemaHash
	caps := req.ClientCapabilities()
	switch {
	case multiRoundTrip(req.Session) && canElicit(caps):
		r := RequestFromContext(ctx)
		sub.run = s.approvalRun(ctx, req)
		st, ok := s.approvals.mintApproval(sub, s.bindingOf(r))
		if !ok {
			return execution{err: err}
		}
		return execution{input: inputRequired(sub, st)}
	case canElicit(caps) && canAsk(req):
		res, eerr := req.Session.Elicit(ctx, approvalRequest(sub))
		if eerr != nil {
			s.logger.WarnContext(ctx, "mcptoolset: asking the client for approval failed", "tool", textcut.Clip(p.Name, maxLoggedName), "error", eerr)
			return execution{err: fmt.Errorf("%w (asking the client for it failed)", err)}
		}
		record(rc, entry[0].Call(), res)
		v, err := tools.Execute(ctx, call)
		return execution{v: v, err: err}
	}
	return execution{err: err}
}

// answered handles a call repeated with the answer to a request for
// approval.
func (s *Server) answered(ctx context.Context, req *mcp.CallToolRequest, tools *toolset.ToolList, call toolset.ToolCall) execution {
	p := req.Params
	refuse := func(err error) execution {
		return execution{rpc: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}}
	}
	rc := toolset.FromContext(ctx)
	if rc == nil {
		return refuse(errStateInvalid)
	}
	st, err := s.approvals.openApproval(p.RequestState, s.bindingOf(RequestFromContext(ctx)))
	if err != nil {
		return refuse(err)
	}
	run := s.approvalRun(ctx, req)
	if !st.matches(p.Name, run) {
		return refuse(errStateInvalid)
	}
	sub := &approvalSubject{nonce: st.nonce, name: p.Name}
	call.ID = sub.callID()
	if run != "" {
		// A run that spans requests still has the call it asked for,
		// until it is answered: a state is good once. Answers of one
		// state handled at once would each find it pending and take the
		// others' approval, or ask for the call again, so one is handled
		// at a time and the others are refused (a run is held by one
		// server at a time).
		key := run + "\x00" + call.ID
		if _, busy := s.answering.LoadOrStore(key, struct{}{}); busy {
			return refuse(errStateUsed)
		}
		defer s.answering.Delete(key)
		if prev, _ := pendingOf(rc, call.ID, p.Name); len(prev) == 0 {
			return refuse(errStateUsed)
		}
	}
	answer, ok := p.InputResponses[ApprovalInputID].(*mcp.ElicitResult)
	if !ok || answer == nil {
		return refuse(fmt.Errorf("the repeated call has no inputResponses[%q] answering the request for approval", ApprovalInputID))
	}
	v, err := tools.Execute(ctx, call)
	var are *toolset.ApprovalRequiredError
	if err == nil || !errors.As(err, &are) || are.Call.ID != call.ID {
		// It no longer asks for approval: the answer is not needed.
		return execution{v: v, err: err}
	}
	entries, _ := pendingOf(rc, call.ID, p.Name)
	if len(entries) != 1 || !st.matchesCall(string(entries[0].Args), entries[0].SchemaHash) {
		for _, e := range entries {
			rc.RecordDenial(e.Call(), "the approval's requestState did not match the call")
		}
		return refuse(errStateArgs)
	}
	record(rc, entries[0].Call(), answer)
	v, err = tools.Execute(ctx, call)
	return execution{v: v, err: err}
}

// record records in rc the user's answer to the request for approval of
// call.
func record(rc *toolset.RunContext, call toolset.ToolCall, answer *mcp.ElicitResult) {
	switch {
	case answer.Action == "accept" && answer.Content[ApprovalField] == true:
		rc.RecordApproval(call)
	case answer.Action == "accept":
		rc.RecordDenial(call, "the user did not approve it")
	case answer.Action == "decline":
		rc.RecordDenial(call, "the user declined it")
	default:
		rc.RecordDenial(call, "the user dismissed the request for approval")
	}
}

// pendingOf returns the calls of rc waiting for approval with the given
// ID and tool name; false if rc is nil.
func pendingOf(rc *toolset.RunContext, id, name string) ([]toolset.PendingApproval, bool) {
	if rc == nil {
		return nil, false
	}
	var out []toolset.PendingApproval
	for _, p := range rc.PendingApprovals() {
		if p.CallID == id && p.Tool == name {
			out = append(out, p)
		}
	}
	return out, true
}

// approvalRun is the ID of the run an approval state of req is bound to:
// the run a run handle carried on, or a session's, which span requests;
// "" for a request that is a run of its own.
func (s *Server) approvalRun(ctx context.Context, req *mcp.CallToolRequest) string {
	r, rc := RequestFromContext(ctx), toolset.FromContext(ctx)
	if r == nil || rc == nil {
		return ""
	}
	if r.RunID != "" {
		if _, present, _ := requestHandle(req); present {
			return r.RunID
		}
		return ""
	}
	if r.Session != nil && (r.Session.ID() != "" || r.Extra == nil) {
		return rc.ID()
	}
	return ""
}

// multiRoundTrip reports whether the client of session ss speaks
// 2026-07-28 or later, and so takes input-required results; as the SDK
// decides it, a session without initialize parameters (a stateless
// request) speaks the latest.
func multiRoundTrip(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p == nil || modernRevision(p.ProtocolVersion)
}

// canElicit reports whether a client with capabilities caps declared that
// it can answer form elicitation.
func canElicit(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// canAsk reports whether the server can send a request to the client of
// req on its session: not on a stateless HTTP request's.
func canAsk(req *mcp.CallToolRequest) bool {
	return req.Session != nil && (req.Session.ID() != "" || req.Extra == nil)
}

// approvalRequest is the form that asks for approval of sub's call.
func approvalRequest(sub *approvalSubject) *mcp.ElicitParams {
	msg := fmt.Sprintf("Allow the call of tool %q with arguments %s?",
		textcut.Clip(sub.name, maxLoggedName), textcut.Clip(shownJSON(sub.args), maxApprovalArgsShown))
	return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: approvalSchema}
}

// shownJSON returns the canonical JSON js with every character that is not
// printable (bidirectional overrides, zero-width and tag characters, line
// separators) escaped as \uXXXX, which JSON reads as the same value: so
// that the arguments a human is shown read as they are, not reordered or
// hidden by characters the call carries.
func shownJSON(js string) string {
	var b strings.Builder
	for _, r := range js {
		if r == utf8.RuneError || strconv.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// inputRequired returns the input-required result asking for approval of
// sub's call, with requestState st.
func inputRequired(sub *approvalSubject, st string) *mcp.CallToolResult {
	// The SDK sets resultType, which it keeps unexported, only on results
	// of its own tools/call handler; this server answers tools/call
	// before it, so the result is decoded from its wire form, which sets
	// it.
	wire := struct {
		Content       []any               `json:"content"`
		InputRequests mcp.InputRequestMap `json:"inputRequests"`
		RequestState  string              `json:"requestState"`
		ResultType    string              `json:"resultType"`
	}{[]any{}, mcp.InputRequestMap{ApprovalInputID: approvalRequest(sub)}, st, "input_required"}
	b, err := json.Marshal(wire)
	var res mcp.CallToolResult
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil || !res.NeedsInput() {
		panic(fmt.Sprintf("mcptoolset: encoding an input-required result: %v", err)) // the form is fixed
	}
	return &res
}
