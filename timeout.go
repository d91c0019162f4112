package toolset

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// TimeoutBehavior says what a tool's timeout means for the run.
type TimeoutBehavior int

const (
	// TimeoutTellModel returns a [*TimeoutError], which the model sees and
	// can react to (try smaller input, another tool).
	TimeoutTellModel TimeoutBehavior = iota
	// TimeoutAbortRun returns an [*AbortError], which should stop the run.
	TimeoutAbortRun
)

// WithTimeout limits each call of the tool to d. The handler's context is
// cancelled at the deadline. If the handler then returns an error, the
// caller gets a timeout error instead ([*TimeoutError] shown to the model,
// or [*AbortError] stopping the run, as b says), unless the handler's error
// is itself meant for the model (a [ModelError], such as [NewModelError]). A result
// returned after the deadline is kept.
func WithTimeout(d time.Duration, b TimeoutBehavior) ToolOption {
	return func(t *Tool) {
		if d > 0 {
			t.core.timeout = d
			t.core.timeoutAborts = b == TimeoutAbortRun
		}
	}
}

// TimeoutError reports a call that ran out of time. The model sees it.
type TimeoutError struct {
	// Tool is the name the model called.
	Tool string
	// After is the tool's timeout.
	After time.Duration
}

// Error implements error.
func (e *TimeoutError) Error() string { return "toolset: " + e.ModelText() }

// ModelText implements [ModelError].
func (e *TimeoutError) ModelText() string {
	return fmt.Sprintf("tool %q timed out after %v; try again with a smaller request, or another approach", e.Tool, e.After)
}

// Unwrap returns context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// AbortError reports a tool call that should stop the run, such as a
// timeout configured with [TimeoutAbortRun].
type AbortError struct {
	// Tool is the name the model called.
	Tool string
	// Reason says why the run stops.
	Reason string
	// Err is the underlying error.
	Err error
}

// Error implements error.
func (e *AbortError) Error() string {
	return fmt.Sprintf("toolset: tool %q %s; the run stops", e.Tool, e.Reason)
}

// Unwrap returns the underlying error.
func (e *AbortError) Unwrap() error { return e.Err }

// deadlineCtx is the context a handler runs under when its tool has a
// timeout. context.WithTimeout would arm a timer on every call, which costs
// more than a whole call without policies; deadlineCtx arms its timer only
// when the handler first asks for Done, and reads the clock for Err only
// when asked. Deadline, Err and Done behave as context.WithDeadline's.
type deadlineCtx struct {
	context.Context
	deadline time.Time

	mu         sync.Mutex
	done       chan struct{}
	err        error
	timer      *time.Timer
	stopParent func() bool
}

func newDeadlineCtx(parent context.Context, deadline time.Time) *deadlineCtx {
	return &deadlineCtx{Context: parent, deadline: deadline}
}

// Deadline implements context.Context.
func (c *deadlineCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done implements context.Context, arming the deadline on first use.
func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.err == nil {
		if err := c.Context.Err(); err != nil {
			c.err = err
		} else if d := time.Until(c.deadline); d <= 0 {
			c.err = context.DeadlineExceeded
		}
	}
	if c.err != nil {
		close(c.done)
		return c.done
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.cancel(context.DeadlineExceeded) })
	c.stopParent = context.AfterFunc(c.Context, func() { c.cancel(c.Context.Err()) })
	return c.done
}

// Err implements context.Context.
func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err := c.Context.Err(); err != nil {
		c.cancel(err)
		return err
	}
	if !time.Now().Before(c.deadline) {
		c.cancel(context.DeadlineExceeded)
		return context.DeadlineExceeded
	}
	return nil
}

// Value implements context.Context.
func (c *deadlineCtx) Value(key any) any { return c.Context.Value(key) }

func (c *deadlineCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.stopParent != nil {
		c.stopParent()
	}
}

// finish cancels the context once the call is over, as a deferred cancel
// of context.WithDeadline would.
func (c *deadlineCtx) finish() { c.cancel(context.Canceled) }

// expired reports whether the deadline passed.
func (c *deadlineCtx) expired() bool {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	return err == context.DeadlineExceeded || !time.Now().Before(c.deadline)
}
