package toolset

import (
	"errors"
	"fmt"
)

// WithMaxRetries gives the tool a budget of n retries per run. A step of
// the run in which a call of the tool fails counts once against it (several
// failures in one step, such as parallel calls, count once). A failure is an
// argument error, a handler error (including [NewModelError]), a panic, or a timeout
// shown to the model. Once more than n steps have failed, the tool is spent
// for the run: BuildTools leaves it out of later turns, or keeps it marked
// unavailable when the run asked for a stable list
// ([RunContext.StableToolList]), and calls of it are refused.
//
// Without this option a tool's failures are not counted.
func WithMaxRetries(n int) ToolOption {
	return func(t *Tool) {
		if n >= 0 {
			t.core.maxRetries = n
		}
	}
}

// unavailablePrefix marks a spent tool's description in a stable list.
const unavailablePrefix = "[UNAVAILABLE] "

// UnavailableToolError reports a call of a tool that exists but may not
// run now: a deferred tool not yet revealed by a tool search, or a tool
// whose retries are spent. The model sees it.
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

// countsAsFailure reports whether err spends a retry. An error whose
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

// recordFailure counts a failure of c in the run's current step.
func (rc *RunContext) recordFailure(c *toolCore) {
	if rc == nil {
		return
	}
	s := rc.run
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures == nil {
		s.failures = make(map[*toolCore]*failureCount)
	}
	f, ok := s.failures[c]
	if !ok {
		s.failures[c] = &failureCount{lastStep: rc.Step, steps: 1}
		return
	}
	if f.lastStep != rc.Step {
		f.lastStep = rc.Step
		f.steps++
	}
}

// retriesSpent reports whether c failed in more steps of the run than its
// budget allows.
func (rc *RunContext) retriesSpent(c *toolCore) bool {
	if rc == nil {
		return false
	}
	s := rc.run
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.failures[c]
	return ok && f.steps > c.maxRetries
}

// hasFailures reports whether any tool failed in the run, so BuildTools can
// skip the retry checks of a healthy run.
func (rc *RunContext) hasFailures() bool {
	if rc == nil {
		return false
	}
	s := rc.run
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.failures) > 0
}
