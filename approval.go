package toolset

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gotoolset/toolset/internal/canonjson"
)

// ApprovalFunc decides whether a call needs a human's approval before it
// runs.
type ApprovalFunc func(ctx context.Context, t Tool, args json.RawMessage) (bool, error)

// WithApproval makes calls of the tool for which need reports true wait for
// a human. Such a call returns an [*ApprovalRequiredError] carrying the call
// until the run records a decision for its call ID with
// [RunContext.Approve] or [RunContext.Deny]; calling again with the same ID
// then runs it, or tells the model it was denied. need sees only arguments
// that passed validation.
//
// A decision holds for one call: the tool and the arguments of the call
// first seen with its ID (or, for a decision recorded before the call was
// seen, the first call with that ID), and it is used up by that call. A call
// with the same ID but another tool or other arguments needs a decision of
// its own. Approvals need call IDs, so run such tools with [Tools.Execute]
// and a [ToolCall] whose ID is set; a call without an ID is never approved.
func WithApproval(need ApprovalFunc) ToolOption {
	return func(t *Tool) { t.core.approval = need }
}

// Approve records a human's approval of the call with the given ID in the
// run, so the next attempt of that call runs.
func (rc *RunContext) Approve(callID string) { rc.decide(callID, decision{approved: true}) }

// Deny records a human's refusal of the call with the given ID in the run;
// the next attempt of that call tells the model reason.
func (rc *RunContext) Deny(callID, reason string) { rc.decide(callID, decision{reason: reason}) }

type decision struct {
	approved bool
	reason   string
}

// approvalSubject is what a decision applies to: one tool (under any of
// its names) with arguments of one canonical form.
type approvalSubject struct {
	tool *toolCore
	args string
}

func (rc *RunContext) decide(callID string, d decision) {
	rc.ensureRun()
	s := rc.run
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decisions == nil {
		s.decisions = make(map[string]decision)
	}
	s.decisions[callID] = d
}

// takeDecision returns the decision recorded for the call with the given ID
// and subject, using it up. Without one, it remembers the subject the ID
// was asked for, so that a later decision applies to that call only.
func (rc *RunContext) takeDecision(callID string, subj approvalSubject) (decision, bool) {
	if rc == nil {
		return decision{}, false
	}
	rc.ensureRun()
	s := rc.run
	s.mu.Lock()
	defer s.mu.Unlock()
	asked, wasAsked := s.asked[callID]
	if wasAsked && asked != subj {
		return decision{}, false // another call under the same ID
	}
	d, ok := s.decisions[callID]
	if !ok {
		if s.asked == nil {
			s.asked = make(map[string]approvalSubject)
		}
		s.asked[callID] = subj
		return decision{}, false
	}
	delete(s.decisions, callID)
	delete(s.asked, callID)
	return d, true
}

// ApprovalRequiredError reports a call that waits for a human's approval.
// An agent loop pauses the run, asks, records the answer with
// [RunContext.Approve] or [RunContext.Deny], and makes the call again. If it
// reaches the model instead, the model is told to wait.
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

// ModelMessage implements [ModelError].
func (e *ApprovalRequiredError) ModelMessage() string {
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
func (e *ApprovalDeniedError) Error() string { return "toolset: " + e.ModelMessage() }

// ModelMessage implements [ModelError].
func (e *ApprovalDeniedError) ModelMessage() string {
	msg := fmt.Sprintf("the call of tool %q was denied by a human", e.Call.Name)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// checkApproval applies the approval policy: step 3 of the call path.
func (c *toolCore) checkApproval(ctx context.Context, t Tool, call ToolCall, rc *RunContext) error {
	need, err := c.approval(ctx, t, call.Args)
	if err != nil {
		return fmt.Errorf("toolset: tool %q: approval check: %w", call.Name, err)
	}
	if !need {
		return nil
	}
	if call.ID == "" {
		return &ApprovalRequiredError{Call: call}
	}
	args, err := canonjson.Append(nil, call.Args)
	if err != nil {
		args = call.Args // not reached: the arguments are valid JSON
	}
	d, ok := rc.takeDecision(call.ID, approvalSubject{tool: c, args: string(args)})
	switch {
	case !ok:
		return &ApprovalRequiredError{Call: call}
	case d.approved:
		return nil
	default:
		return &ApprovalDeniedError{Call: call, Reason: d.reason}
	}
}
