package toolset

import (
	"errors"
	"fmt"
)

// WithMaxFailures gives the tool a budget of failing steps per run: once
// calls of the tool have failed in n steps of a run, the tool is spent for
// that run. A step counts once however many of its calls fail (parallel
// calls, say). A failure is an argument error, a handler error (including
// [NewModelError]), a panic, or a timeout shown to the model; none of them
// is retried by the tool itself, the model decides whether to call again.
// A spent tool leaves the run's later tool lists, or stays in them marked
// unavailable when the run asked for a stable list ([WithStableToolList]),
// and calls of it are refused with an [*UnavailableToolError].
//
// n must be at least 1; [Tool.Err] reports a smaller one. Without this
// option a tool's failures are not counted.
func WithMaxFailures(n int) ToolOption {
	return func(t *Tool) {
		if n < 1 {
			if t.core.err == nil {
				t.core.err = fmt.Errorf("WithMaxFailures(%d): the budget must be at least 1", n)
			}
			return
		}
		t.core.maxFailures = n
	}
}

// unavailablePrefix marks a spent tool's description in a stable list.
const unavailablePrefix = "[UNAVAILABLE] "

// UnavailableToolError reports a call of a tool that exists but may not
// run now: a deferred tool not yet revealed by a tool search, or a tool
// whose failure budget is spent. The model sees it.
type UnavailableToolError struct {
	// Tool is the name the model called.
	Tool string
	// Reason says why.
	Reason string
}

// Error implements error.
func (e *UnavailableToolError) Error() string { return "toolset: " + e.ModelText() }

// ModelText implements [ModelError].
func (e *UnavailableToolError) ModelText() string {
	return fmt.Sprintf("tool %q is not available: %s", e.Tool, e.Reason)
}

type failureCount struct {
	lastStep int
	steps    int
}

// countsAsFailure reports whether err counts against a failure budget. An error whose
// Unwrap or As method panics does.
func countsAsFailure(err error) (yes bool) {
	defer func() {
		if recover() != nil {
			yes = true
		}
	}()
	var (
		ae *ArgumentError
		te *ToolError
		pe *PanicError
		to *TimeoutError
	)
	return errors.As(err, &ae) || errors.As(err, &te) || errors.As(err, &pe) || errors.As(err, &to)
}

// recordFailure counts a failure of t, called as name, in the run's
// current step.
func (rc *RunContext) recordFailure(t Tool, name string) {
	c := t.core
	s := rc.state()
	if s == nil {
		return
	}
	step := rc.currentStep()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended.Load() {
		return
	}
	if s.failures == nil {
		s.failures = make(map[*toolCore]*failureCount)
	}
	s.identify(t, name)
	s.markDirty()
	f, ok := s.failures[c]
	if !ok {
		s.failures[c] = &failureCount{lastStep: step, steps: 1}
		return
	}
	if f.lastStep != step {
		f.lastStep = step
		f.steps++
	}
}

// budgetSpent reports whether c has failed in as many steps of the run as
// its budget allows.
func (rc *RunContext) budgetSpent(c *toolCore) bool {
	s := rc.state()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.failures[c]
	return ok && f.steps >= c.maxFailures
}

// hasFailures reports whether any tool failed in the run, so BuildTools can
// skip the budget checks of a healthy run.
func (rc *RunContext) hasFailures() bool {
	s := rc.state()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.failures) > 0
}

// failuresLeft returns how many failing steps of the run are left of c's
// budget.
func (rc *RunContext) failuresLeft(c *toolCore) int {
	s := rc.state()
	if s == nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	steps := 0
	if f, ok := s.failures[c]; ok {
		steps = f.steps
	}
	return max(c.maxFailures-steps, 0)
}
