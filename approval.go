package toolset

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gotoolset/toolset/internal/canonjson"
)

// NeedsApprovalFunc decides whether a call needs a human's approval before it
// runs.
type NeedsApprovalFunc func(ctx context.Context, t Tool, args json.RawMessage) (bool, error)

// WithApprovalRequired makes calls of the tool for which need reports true wait for
// a human. Such a call returns an [*ApprovalRequiredError] carrying the call
// until the run records a decision for it with [RunContext.RecordApproval] or
// [RunContext.RecordDenial], given the error's Call; calling again then runs
// it, or tells the model it was denied. need sees only arguments that
// passed validation.
//
// A decision holds for one call, and is used up by it: ApproveCall and
// DenyCall bind it to the call's ID, name and arguments (in any JSON form
// of the same value), so it cannot let through another call. The older
// [RunContext.Approve] and [RunContext.Deny] take an ID alone and apply to
// the call first asked about under it (or, when recorded before any was,
// to the first call with that ID), whatever its arguments. Approvals need call IDs and a run context (see
// [NewContext]), so run such tools with [ToolList.Execute] and a [ToolCall]
// whose ID is set. A call without an ID gets an ApprovalRequiredError that
// says so; without a run context, such a call fails with an error that stops
// the run.
func WithApprovalRequired(need NeedsApprovalFunc) ToolOption {
	return func(t *Tool) { t.core.approval = need }
}

// RecordApproval records a human's approval of call in the run, so that the
// next attempt of that very call (same ID, name and arguments) runs.
func (rc *RunContext) RecordApproval(call ToolCall) {
	rc.decide(subjectOf(call), decision{approved: true})
}

// RecordDenial records a human's refusal of call in the run; the next attempt
// of that very call tells the model reason.
func (rc *RunContext) RecordDenial(call ToolCall, reason string) {
	rc.decide(subjectOf(call), decision{reason: reason})
}

// Approve records a human's approval of the call with the given ID in the
// run, so the next attempt of that call runs. Use [RunContext.RecordApproval]
// instead whenever the call is at hand (an [*ApprovalRequiredError] carries
// it): Approve binds the decision to the ID alone, so it applies to
// whatever call was first asked about under that ID.
func (rc *RunContext) Approve(callID string) {
	rc.decide(approvalSubject{id: callID, anyCall: true}, decision{approved: true})
}

// Deny records a human's refusal of the call with the given ID in the run;
// the next attempt of that call tells the model reason. Use
// [RunContext.RecordDenial] instead whenever the call is at hand, as for
// [RunContext.Approve].
func (rc *RunContext) Deny(callID, reason string) {
	rc.decide(approvalSubject{id: callID, anyCall: true}, decision{reason: reason})
}

type decision struct {
	approved bool
	reason   string
}

// approvalSubject is what a decision applies to: the call with an ID, a
// name and arguments of one canonical form, or (anyCall) the call asked
// about under the ID.
type approvalSubject struct {
	id, name, args string
	anyCall        bool
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

func (rc *RunContext) decide(subj approvalSubject, d decision) {
	rc.ensureRun()
	s := rc.run
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decisions == nil {
		s.decisions = make(map[approvalSubject]decision)
	}
	s.decisions[subj] = d
}

// takeDecision returns the decision recorded for the call subj, using it
// up. Without one, it remembers the first call asked about under the ID,
// for a decision recorded later by ID alone.
func (rc *RunContext) takeDecision(subj approvalSubject) (decision, bool) {
	s := rc.run
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.decisions[subj]; ok {
		delete(s.decisions, subj)
		return d, true
	}
	byID := approvalSubject{id: subj.id, anyCall: true}
	d, ok := s.decisions[byID]
	asked, wasAsked := s.asked[subj.id]
	if ok && (!wasAsked || asked == subj) {
		delete(s.decisions, byID)
		delete(s.asked, subj.id)
		return d, true
	}
	if !wasAsked {
		if s.asked == nil {
			s.asked = make(map[string]approvalSubject)
		}
		s.asked[subj.id] = subj
	}
	return decision{}, false
}

// ApprovalRequiredError reports a call that waits for a human's approval.
// An agent loop pauses the run, asks, records the answer with
// [RunContext.RecordApproval] or [RunContext.RecordDenial] given Call, and makes
// the call again. If it reaches the model instead, the model is told to
// wait (or, for a call without an ID, which nobody can approve, to do
// without the tool).
type ApprovalRequiredError struct {
	// Call is the call waiting for approval.
	Call ToolCall
}

// Error implements error.
func (e *ApprovalRequiredError) Error() string {
	if e.Call.ID == "" {
		return fmt.Sprintf("toolset: a call of tool %q needs approval, and approvals are recorded by call ID: run it with Tools.Execute and a ToolCall with an ID", e.Call.Name)
	}
	return fmt.Sprintf("toolset: call %q of tool %q needs approval", e.Call.ID, e.Call.Name)
}

// ModelText implements [ModelError].
func (e *ApprovalRequiredError) ModelText() string {
	if e.Call.ID == "" {
		// Without an ID nobody can record a decision (an MCP client's call,
		// say): asking the model to wait would leave it waiting.
		return fmt.Sprintf("the call of tool %q needs a human's approval, which cannot be asked for here; do without it", e.Call.Name)
	}
	return fmt.Sprintf("the call of tool %q needs a human's approval, which has been requested; do not repeat it until told", e.Call.Name)
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

// checkApproval applies the approval policy: step 3 of the call path.
func (c *toolCore) checkApproval(ctx context.Context, t Tool, call ToolCall, rc *RunContext) error {
	need, err := c.askApproval(ctx, t, call)
	if err != nil {
		if _, ok := err.(*PanicError); ok {
			return err // made by askApproval, which names the tool
		}
		return fmt.Errorf("toolset: tool %q: approval check: %w", call.Name, err)
	}
	if !need {
		return nil
	}
	if rc == nil {
		return fmt.Errorf("toolset: a call of tool %q needs approval, and approvals are recorded in the run context: attach one with NewContext", call.Name)
	}
	if call.ID == "" {
		return &ApprovalRequiredError{Call: call}
	}
	d, ok := rc.takeDecision(subjectOf(call))
	switch {
	case !ok:
		return &ApprovalRequiredError{Call: call}
	case d.approved:
		return nil
	default:
		return &ApprovalDeniedError{Call: call, Reason: d.reason}
	}
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
