package toolset

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/gotoolset/toolset/internal/canonjson"
)

// NeedsApprovalFunc decides whether a call needs a human's approval before it
// runs.
type NeedsApprovalFunc func(ctx context.Context, t Tool, args json.RawMessage) (bool, error)

// WithApprovalRequired makes calls of the tool for which need reports true
// wait for a human. Such a call returns an [*ApprovalRequiredError]
// carrying the call, which stops the run: the agent loop asks a human,
// records the answer with [RunContext.RecordApproval] or
// [RunContext.RecordDenial] given the error's Call, and executes the call
// again, which then runs, or tells the model it was denied. need sees only
// arguments that passed validation.
//
// A decision holds for one call, and is used up by it: it is bound to the
// call's ID, name and arguments (in any JSON form of the same value), and
// to the tool's parameter schema as offered when the call asked (see
// [PendingApproval]), so it cannot let through another call, nor a call
// of a tool whose schema has changed since: that call asks again. The
// calls waiting for a decision are listed by [RunContext.PendingApprovals].
// Approvals are recorded in the run and
// by call ID, so run such tools under a run (see [NewRun]) with a
// [ToolCall] whose ID is set: a call without an ID gets an
// ApprovalRequiredError that says approvals need one, and a call without a
// run fails with an error that says it needs one.
func WithApprovalRequired(need NeedsApprovalFunc) ToolOption {
	return func(t *Tool) { t.core.approval, t.core.approvalBy = need, "" }
}

// Always is the [NeedsApprovalFunc] of a tool every call of which waits for
// a human: WithApprovalRequired(toolset.Always).
func Always(context.Context, Tool, json.RawMessage) (bool, error) { return true, nil }

// RecordApproval records a human's approval of call in the run, so that the
// next attempt of that very call runs: the same ID, name and arguments (in
// any JSON form of the same value), and the same parameter schema as when
// the call was asked for (see [PendingApproval]); a call asked for again
// after its tool's schema changed is not approved by this decision (a
// call approved before it ever asked is approved for the schema it finds).
// Given
// [WithEditedArgs], the call runs with the approver's arguments instead,
// validated against the tool's schema first. RecordApproval does nothing
// on a run that has ended. For a run made with [ResumeRun], the decision
// is saved with the run's next save (see [RunContext.Save]).
func (rc *RunContext) RecordApproval(call ToolCall, opts ...ApprovalOption) {
	var cfg approvalConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	rc.decide(subjectOf(call), decision{approved: true, edited: cfg.args})
}

// RecordDenial records a human's refusal of call in the run; the next attempt
// of that very call tells the model reason. It does nothing on a run that
// has ended.
func (rc *RunContext) RecordDenial(call ToolCall, reason string) {
	rc.decide(subjectOf(call), decision{reason: reason})
}

// ApprovalOption qualifies an approval; see [RunContext.RecordApproval].
type ApprovalOption func(*approvalConfig)

type approvalConfig struct {
	args json.RawMessage
}

// WithEditedArgs approves the call with the arguments args, edited by the
// approver, in place of the model's. They are validated against the tool's
// parameter schema when the call runs: arguments that do not fit fail the
// call with an [*ArgumentError], and it does not run. args is copied.
// An approval whose args are not JSON is not saved (see [ResumeRun]): in a
// resumed run the call asks again, and never runs the model's arguments.
func WithEditedArgs(args json.RawMessage) ApprovalOption {
	return func(c *approvalConfig) { c.args = append(json.RawMessage{}, args...) }
}

// PendingApproval is a call waiting for a human's approval, as a user
// interface lists it; see [RunContext.PendingApprovals].
type PendingApproval struct {
	// Tool is the name the call was made under.
	Tool string
	// CallID is the call's ID.
	CallID string
	// Args are the call's arguments, in canonical JSON (object keys
	// sorted, no insignificant space, numbers normalised).
	Args json.RawMessage
	// SchemaHash names the tool's parameter schema as offered when the
	// call was asked for: "sha256:" and the hex SHA-256 of its canonical
	// JSON. An approval holds for this schema only.
	SchemaHash string
	// AskedAt is when the call asked for approval (the latest time, if it
	// asked more than once).
	AskedAt time.Time
}

// Call returns the call, to give to [RunContext.RecordApproval] or
// [RunContext.RecordDenial].
func (p PendingApproval) Call() ToolCall {
	return ToolCall{ID: p.CallID, Name: p.Tool, Args: append(json.RawMessage{}, p.Args...)}
}

// PendingApprovals returns the calls of the run that asked for approval
// and have no decision yet, oldest first. For a run made with [ResumeRun]
// they include those of earlier processes, so that a process that only
// records decisions can list them: resume the run, list, record, and
// [RunContext.Suspend] it.
func (rc *RunContext) PendingApprovals() []PendingApproval {
	s := rc.state()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	out := make([]PendingApproval, 0, len(s.parts.pending.calls))
	for subj, p := range s.parts.pending.calls {
		out = append(out, PendingApproval{Tool: subj.name, CallID: subj.id, Args: json.RawMessage(subj.args), SchemaHash: p.schema, AskedAt: p.asked})
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b PendingApproval) int {
		return cmp.Or(a.AskedAt.Compare(b.AskedAt), cmp.Compare(a.CallID, b.CallID), cmp.Compare(a.Tool, b.Tool), cmp.Compare(string(a.Args), string(b.Args)))
	})
	return out
}

type decision struct {
	approved bool
	reason   string
	schema   string          // the schema hash the call was asked with; "" for any
	edited   json.RawMessage // the approver's arguments, or nil
}

// pendingApproval is a call that asked for approval: its schema hash and
// when it asked.
type pendingApproval struct {
	schema string
	asked  time.Time
}

// approvalSubject is what a decision applies to: the call with an ID, a
// name and arguments of one canonical form.
type approvalSubject struct {
	id, name, args string
}

// subjectOf returns the subject of call. Arguments that are not JSON are
// kept as they are (such a call fails validation before any approval).
func subjectOf(call ToolCall) approvalSubject {
	args, err := canonjson.Append(nil, normalizeArgs(call.Args))
	if err != nil {
		args = call.Args
	}
	return approvalSubject{id: call.ID, name: call.Name, args: string(args)}
}

// decide records d for subj, bound to the schema the call was asked with.
func (rc *RunContext) decide(subj approvalSubject, d decision) {
	s := rc.state()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended.Load() {
		return
	}
	if p, ok := s.parts.pending.calls[subj]; ok {
		d.schema = p.schema
		delete(s.parts.pending.calls, subj)
	}
	s.parts.approvals.put(subj, d)
	s.markDirty()
}

// takeDecision returns the decision recorded for the call subj with the
// schema hash schema, using it up. A decision for another schema is
// dropped: the call is asked for again.
func (rc *RunContext) takeDecision(subj approvalSubject, schema string) (decision, bool) {
	s := rc.st
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.parts.approvals.decisions[subj]
	if ok {
		delete(s.parts.approvals.decisions, subj)
		s.markDirty()
	}
	if ok && d.schema != "" && d.schema != schema {
		return decision{}, false
	}
	return d, ok
}

// putBack restores a decision taken by takeDecision.
func (rc *RunContext) putBack(subj approvalSubject, d decision) {
	s := rc.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended.Load() {
		return
	}
	s.parts.approvals.put(subj, d)
	s.markDirty()
}

// ask records that the call subj waits for approval.
func (rc *RunContext) ask(subj approvalSubject, schema string) {
	s := rc.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended.Load() {
		return
	}
	p := &s.parts.pending
	if p.calls == nil {
		p.calls = make(map[approvalSubject]pendingApproval)
	}
	p.calls[subj] = pendingApproval{schema: schema, asked: time.Now()}
	s.markDirty()
}

// ApprovalRequiredError reports a call that waits for a human's approval.
// It is not for the model: it stops the run. The agent loop asks a human,
// records the answer with [RunContext.RecordApproval] or
// [RunContext.RecordDenial] given Call, and executes the call again.
//
// A call without an ID cannot be approved, since decisions are recorded by
// call ID; its error says so. A sub-agent's call that waits for approval
// (see [NewAgentTool]) stops the calling run too, with the sub-agent's
// error, whose RunID is the sub-agent's run.
type ApprovalRequiredError struct {
	// Call is the call waiting for approval.
	Call ToolCall
	// RunID is the ID of the run the call was made in.
	RunID string
	// SchemaHash names the tool's parameter schema as offered (see
	// [PendingApproval]); it is empty for a call without an ID.
	SchemaHash string
	// Interrupted reports a call that began in this run before and never
	// finished, as its journal says (see [WithCallJournal]): the process
	// that ran it stopped, and the call may or may not have had its
	// effect. Approving it runs it again.
	Interrupted bool
}

// Error implements error.
func (e *ApprovalRequiredError) Error() string {
	if e.Call.ID == "" {
		return fmt.Sprintf("toolset: run %q: a call of tool %q needs approval, and approvals are recorded by call ID: execute it with a ToolCall that has an ID",
			boundName(e.RunID), boundName(e.Call.Name))
	}
	if e.Interrupted {
		return fmt.Sprintf("toolset: run %q: call %q of tool %q began before and never finished, and may have had its effect; the tool is not one that runs again unasked (WithResumeRerun, or EffectPolicies for a read-only or idempotent tool): record whether to run it again with RunContext.RecordApproval or RecordDenial and execute the call again",
			boundName(e.RunID), boundName(e.Call.ID), boundName(e.Call.Name))
	}
	return fmt.Sprintf("toolset: run %q: call %q of tool %q needs a human's approval: record it with RunContext.RecordApproval or RecordDenial and execute the call again",
		boundName(e.RunID), boundName(e.Call.ID), boundName(e.Call.Name))
}

// ApprovalDeniedError reports a call a human refused. The model sees the
// reason.
type ApprovalDeniedError struct {
	// Call is the refused call.
	Call ToolCall
	// Reason is what the human said.
	Reason string
}

// Error implements error.
func (e *ApprovalDeniedError) Error() string { return "toolset: " + e.ModelText() }

// ModelText implements [ModelError].
func (e *ApprovalDeniedError) ModelText() string {
	msg := fmt.Sprintf("the call of tool %q was denied by a human", e.Call.Name)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// checkApproval applies the approval policy: step 3 of the call path. It
// returns the call to run: with the approver's arguments, if edited.
func (c *toolCore) checkApproval(ctx context.Context, t Tool, call ToolCall, rc *RunContext, ob *callObs) (ToolCall, error) {
	need, err := c.askApproval(ctx, t, call)
	if err != nil {
		if _, ok := err.(*PanicError); ok {
			return call, err // made by askApproval, which names the tool
		}
		return call, fmt.Errorf("toolset: tool %q: approval check: %w", call.Name, err)
	}
	if !need {
		return call, nil
	}
	ob.needApproval()
	if rc == nil {
		return call, fmt.Errorf("toolset: a call of tool %q needs approval, and approvals are recorded in the run: execute it under a run (NewRun)", call.Name)
	}
	if call.ID == "" {
		return call, &ApprovalRequiredError{Call: call, RunID: rc.ID()}
	}
	schema, err := schemaHash(t)
	if err != nil {
		return call, fmt.Errorf("toolset: tool %q: approval: hashing the parameter schema: %w", call.Name, err)
	}
	subj := subjectOf(call)
	d, ok := rc.takeDecision(subj, schema)
	switch {
	case !ok:
		rc.ask(subj, schema)
		return call, &ApprovalRequiredError{Call: call, RunID: rc.ID(), SchemaHash: schema}
	case !d.approved:
		return call, &ApprovalDeniedError{Call: call, Reason: d.reason}
	}
	if d.edited != nil {
		args := normalizeArgs(d.edited)
		if err := c.validatorFor(t.Parameters).check(args); err != nil {
			return call, attributeError(call.Name, err)
		}
		call.Args = args
	}
	if s := rc.state(); s.durable != nil {
		// The approval is used up in the store before the call runs, so
		// that no process runs it again.
		if err := s.save(ctx, true); err != nil {
			rc.putBack(subj, d)
			return call, err
		}
	}
	return call, nil
}

// NeedsApproval reports whether a call of the tool with args waits for a
// human's approval: the answer of its [WithApprovalRequired] function
// for a call under ctx, false for a tool without one. A panic of the
// function is a [*PanicError]. A program that offers the tool through a
// tool of its own, whose handler calls [Tool.Execute], asks it so that
// its own policies in front (a result cache, an approval of its own) do
// not answer for a call the tool has a human approve, nor ask twice.
func (t Tool) NeedsApproval(ctx context.Context, args json.RawMessage) (bool, error) {
	if t.core == nil || t.core.approval == nil {
		return false, nil
	}
	return t.core.askApproval(ctx, t, ToolCall{Name: t.Name, Args: normalizeArgs(args)})
}

// askApproval runs the approval predicate. A panic becomes a *PanicError.
func (c *toolCore) askApproval(ctx context.Context, t Tool, call ToolCall) (need bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			need, err = false, newPanicError("approval predicate", call.Name, "", v)
		}
	}()
	return c.approval(ctx, t, call.Args)
}

// approvalPart is the run's part of the approval policy: the decisions
// recorded and not yet used up. Its section of the saved state lists
// them, sorted by call ID, tool and arguments; "schema" is absent for a
// decision made before its call asked, "edited_args" for one that keeps
// the model's arguments:
//
//	"approvals": [{"call_id": "c1", "tool": "transfer", "args": {"id":500},
//	               "schema": "sha256:...", "decision": "approved",
//	               "edited_args": {"id":50}}]
type approvalPart struct {
	decisions map[approvalSubject]decision
}

type savedDecision struct {
	CallID     string          `json:"call_id"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Schema     string          `json:"schema,omitempty"`
	Decision   string          `json:"decision"`
	Reason     string          `json:"reason,omitempty"`
	EditedArgs json.RawMessage `json:"edited_args,omitempty"`
}

const (
	decisionApproved = "approved"
	decisionDenied   = "denied"
)

// put records d for subj.
func (p *approvalPart) put(subj approvalSubject, d decision) {
	if p.decisions == nil {
		p.decisions = make(map[approvalSubject]decision)
	}
	p.decisions[subj] = d
}

func (*approvalPart) key() string { return "approvals" }

func (p *approvalPart) save(saving) any {
	var out []savedDecision
	for subj, dec := range p.decisions {
		if !json.Valid([]byte(subj.args)) {
			continue // arguments that are not JSON never pass validation
		}
		sd := savedDecision{CallID: subj.id, Tool: subj.name, Args: json.RawMessage(subj.args), Schema: dec.schema, Decision: decisionDenied, Reason: dec.reason}
		if dec.approved {
			sd.Decision = decisionApproved
			if dec.edited != nil {
				// The approver's arguments, as the call would take them.
				// Arguments that are not JSON fail the call here; saved
				// without them, the approval would run the model's, so it
				// is not saved at all: the resumed call asks again.
				edited := normalizeArgs(dec.edited)
				if !json.Valid(edited) {
					continue
				}
				sd.EditedArgs = edited
			}
		}
		out = append(out, sd)
	}
	slices.SortFunc(out, func(a, b savedDecision) int {
		return cmp.Or(cmp.Compare(a.CallID, b.CallID), cmp.Compare(a.Tool, b.Tool), cmp.Compare(string(a.Args), string(b.Args)))
	})
	return out
}

func (*approvalPart) section() any { return new([]savedDecision) }

func (p *approvalPart) restore(v any, _ *restoring) error {
	saved := *v.(*[]savedDecision)
	decisions := make(map[approvalSubject]decision, len(saved))
	for i, a := range saved {
		args, err := canonArgs(a.Args)
		if err != nil || a.Tool == "" {
			return fmt.Errorf("approvals[%d]: no tool, or %v", i, err)
		}
		d := decision{schema: a.Schema, reason: a.Reason}
		switch a.Decision {
		case decisionApproved:
			d.approved = true
			if a.EditedArgs != nil {
				d.edited = slices.Clone(a.EditedArgs)
			}
		case decisionDenied:
		default:
			return fmt.Errorf("approvals[%d]: decision %q is neither %q nor %q", i, boundName(a.Decision), decisionApproved, decisionDenied)
		}
		subj := approvalSubject{id: a.CallID, name: a.Tool, args: args}
		if _, dup := decisions[subj]; dup {
			return fmt.Errorf("approvals[%d]: a second decision for call %q of tool %q", i, boundName(a.CallID), boundName(a.Tool))
		}
		decisions[subj] = d
	}
	p.decisions = decisions
	return nil
}

// pendingPart is the run's part of the approval policy that lists the
// calls waiting for a decision (see [RunContext.PendingApprovals]). Its
// section of the saved state lists them oldest first:
//
//	"pending": [{"call_id": "c2", "tool": "transfer", "args": {"id":900},
//	             "schema": "sha256:...", "asked_at": "2026-01-02T15:00:00Z"}]
type pendingPart struct {
	calls map[approvalSubject]pendingApproval
}

type savedPending struct {
	CallID  string          `json:"call_id"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Schema  string          `json:"schema"`
	AskedAt time.Time       `json:"asked_at"`
}

func (*pendingPart) key() string { return "pending" }

func (p *pendingPart) save(saving) any {
	var out []savedPending
	for subj, pa := range p.calls {
		if !json.Valid([]byte(subj.args)) {
			continue
		}
		out = append(out, savedPending{CallID: subj.id, Tool: subj.name, Args: json.RawMessage(subj.args), Schema: pa.schema, AskedAt: pa.asked.UTC()})
	}
	slices.SortFunc(out, func(a, b savedPending) int {
		return cmp.Or(a.AskedAt.Compare(b.AskedAt), cmp.Compare(a.CallID, b.CallID), cmp.Compare(a.Tool, b.Tool), cmp.Compare(string(a.Args), string(b.Args)))
	})
	return out
}

func (*pendingPart) section() any { return new([]savedPending) }

func (p *pendingPart) restore(v any, _ *restoring) error {
	saved := *v.(*[]savedPending)
	calls := make(map[approvalSubject]pendingApproval, len(saved))
	for i, sp := range saved {
		args, err := canonArgs(sp.Args)
		if err != nil || sp.Tool == "" {
			return fmt.Errorf("pending[%d]: no tool, or %v", i, err)
		}
		subj := approvalSubject{id: sp.CallID, name: sp.Tool, args: args}
		if _, dup := calls[subj]; dup {
			return fmt.Errorf("pending[%d]: call %q of tool %q is listed twice", i, boundName(sp.CallID), boundName(sp.Tool))
		}
		calls[subj] = pendingApproval{schema: sp.Schema, asked: sp.AskedAt}
	}
	p.calls = calls
	return nil
}

// canonArgs returns the canonical form of a saved call's arguments.
func canonArgs(raw json.RawMessage) (string, error) {
	b, err := canonjson.Append(nil, raw)
	if err != nil {
		return "", fmt.Errorf("arguments: %v", err)
	}
	return string(b), nil
}
