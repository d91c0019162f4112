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

// WithApprovalRequired makes calls of the tool for which need reports true
// wait for a human. Such a call returns an [*ApprovalRequiredError]
// carrying the call, which stops the run: the agent loop asks a human,
// records the answer with [RunContext.RecordApproval] or
// [RunContext.RecordDenial] given the error's Call, and executes the call
// again, which then runs, or tells the model it was denied. need sees only
// arguments that passed validation.
//
// A decision holds for one call, and is used up by it: it is bound to the
// call's ID, name and arguments (in any JSON form of the same value), so it
// cannot let through another call. Approvals are recorded in the run and
// by call ID, so run such tools under a run (see [NewRun]) with a
// [ToolCall] whose ID is set: a call without an ID gets an
// ApprovalRequiredError that says approvals need one, and a call without a
// run fails with an error that says it needs one.
func WithApprovalRequired(need NeedsApprovalFunc) ToolOption {
	return func(t *Tool) { t.core.approval = need }
}

// RecordApproval records a human's approval of call in the run, so that the
// next attempt of that very call (same ID, name and arguments) runs. It does
// nothing on a run that has ended.
func (rc *RunContext) RecordApproval(call ToolCall) {
	rc.decide(subjectOf(call), decision{approved: true})
}

// RecordDenial records a human's refusal of call in the run; the next attempt
// of that very call tells the model reason. It does nothing on a run that
// has ended.
func (rc *RunContext) RecordDenial(call ToolCall, reason string) {
	rc.decide(subjectOf(call), decision{reason: reason})
}

type decision struct {
	approved bool
	reason   string
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
	if s.decisions == nil {
		s.decisions = make(map[approvalSubject]decision)
	}
	s.decisions[subj] = d
}

// takeDecision returns the decision recorded for the call subj, using it
// up.
func (rc *RunContext) takeDecision(subj approvalSubject) (decision, bool) {
	s := rc.st
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.decisions[subj]
	if ok {
		delete(s.decisions, subj)
	}
	return d, ok
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
}

// Error implements error.
func (e *ApprovalRequiredError) Error() string {
	if e.Call.ID == "" {
		return fmt.Sprintf("toolset: run %q: a call of tool %q needs approval, and approvals are recorded by call ID: execute it with a ToolCall that has an ID",
			boundName(e.RunID), boundName(e.Call.Name))
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

// checkApproval applies the approval policy: step 3 of the call path.
func (c *toolCore) checkApproval(ctx context.Context, t Tool, call ToolCall, rc *RunContext, ob *callObs) error {
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
	ob.needApproval()
	if rc == nil {
		return fmt.Errorf("toolset: a call of tool %q needs approval, and approvals are recorded in the run: execute it under a run (NewRun)", call.Name)
	}
	if call.ID == "" {
		return &ApprovalRequiredError{Call: call, RunID: rc.ID()}
	}
	d, ok := rc.takeDecision(subjectOf(call))
	switch {
	case !ok:
		return &ApprovalRequiredError{Call: call, RunID: rc.ID()}
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
