package toolset

import "context"

// Approver asks a human whether a call that waits for approval (see
// [WithApprovalRequired]) may run, and returns the answer: approved, or
// refused with a reason the model is told. An error means nobody could be
// asked, and stops the run.
//
// The provider adapters take an Approver as an option (WithApprover): for
// each call that stops with an [*ApprovalRequiredError], they ask it, the
// run records the answer with [RunContext.RecordApproval] or
// [RunContext.RecordDenial], and the call runs again. Without an Approver,
// such a call stops the run with its ApprovalRequiredError. An Approver is
// called from the goroutines that run a turn's calls, so it may be called
// concurrently.
type Approver func(ctx context.Context, call ToolCall) (approved bool, reason string, err error)
