package toolset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// The call path, whose steps the comments below refer to by number, and
// the reasons for its order are described in the package documentation
// (doc.go, section "The call path"). Keep the two in step.

// Execute runs call with this tool through the whole call path, as
// [ToolList.Execute] does once it has found the tool: a direct call of
// one tool, outside any turn's list, so no turn's predicates apply. The
// run the policies keep their state in is the one ctx carries, if any.
// call.Name is the name used in errors; it defaults to the tool's name.
// Under a context of a run with a turn budget ([WithTurnResultBudget]),
// the call is one of a turn's, the context's turn or else the run's
// latest: its result counts against that turn's budget, and is cut once
// the budget is spent.
func (t Tool) Execute(ctx context.Context, call ToolCall) (any, error) {
	if call.Name == "" {
		call.Name = t.Name
	}
	rc := runOf(ctx)
	if mayObserve(rc) {
		if o := observerOf(ctx, rc); o != nil {
			return t.executeObserved(ctx, call, rc, o)
		}
	}
	return t.execute(ctx, call, rc, nil)
}

// execute is Execute for the run rc that ctx carries, observed by ob.
func (t Tool) execute(ctx context.Context, call ToolCall, rc *RunContext, ob *callObs) (any, error) {
	if sp := rc.turnSpend(); sp != nil {
		res, err := t.executeCall(ctx, call, rc, ob)
		return sp.budgeted(ctx, rc, rc.st.turnBudget, res, err)
	}
	return t.executeCall(ctx, call, rc, ob)
}

// executeCall is execute before the turn's result budget.
func (t Tool) executeCall(ctx context.Context, call ToolCall, rc *RunContext, ob *callObs) (any, error) {
	rc.bindTool(t)
	if t.core != nil && (t.core.limited(rc) || rc.journaling()) {
		return t.executeRecorded(ctx, call, rc, ob)
	}
	res, err := t.executeIn(ctx, call, rc, ob)
	if rc.hasStore() {
		return rc.saveAfterCall(ctx, call.Name, res, err)
	}
	return res, err
}

// runUsable returns the error a call under rc fails with, if rc is a run
// that cannot be used.
func runUsable(name string, rc *RunContext) error {
	switch err := rc.Err(); {
	case err == nil:
		return nil
	case err == ErrRunEnded:
		return fmt.Errorf("toolset: tool %q not called in run %q: %w", boundName(name), boundName(rc.ID()), err)
	default:
		return err
	}
}

// executeIn is Execute for a caller that has already found rc, the run
// ctx carries (or nil); ob observes the call, if not nil.
func (t Tool) executeIn(ctx context.Context, call ToolCall, rc *RunContext, ob *callObs) (any, error) {
	if err := t.Err(); err != nil {
		return nil, fmt.Errorf("toolset: %w", err)
	}
	if err := runUsable(call.Name, rc); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toolset: tool %q not called: %w", call.Name, err)
	}
	c := t.core
	if c.deferred {
		if !rc.isRevealed(c) {
			ob.emit(CallEvent{Kind: EventDeferredUnrevealed})
			return nil, &UnavailableToolError{Tool: call.Name, Reason: "it is not loaded yet; find it with the tool search first"}
		}
		ob.emit(CallEvent{Kind: EventDeferredRevealed})
	}
	if c.maxFailures > 0 && rc.budgetSpent(c) {
		ob.emit(CallEvent{Kind: EventBudgetSpent})
		return nil, &UnavailableToolError{Tool: call.Name, Reason: fmt.Sprintf("it has failed in %d steps, its budget for this run; do without it", c.maxFailures)}
	}
	call.Args = normalizeArgs(call.Args)
	res, err := t.validated(ctx, call, rc, ob)
	if err == nil && c.budget != nil {
		res, err = c.budget.apply(ctx, rc, res)
	}
	if err != nil && c.maxFailures > 0 && countsAsFailure(err) {
		rc.recordFailure(t, call.Name)
		ob.counted(rc, c)
	}
	return res, err
}

// validated runs steps 2 to 8 of the call path.
func (t Tool) validated(ctx context.Context, call ToolCall, rc *RunContext, ob *callObs) (any, error) {
	c := t.core
	if c.fused != nil && c.fusable(t) {
		return t.runFused(ctx, call)
	}
	if err := c.validatorFor(t.Parameters).check(call.Args); err != nil {
		return nil, attributeError(call.Name, err)
	}
	if c.approval != nil {
		var err error
		call, err = c.checkApproval(ctx, t, call, rc, ob)
		ob.approvalDecided(rc, err)
		if err != nil {
			return nil, err
		}
	}
	clock := callClock{ob: ob}
	if c.cache != nil {
		return c.cached(ctx, t, call, rc, &clock)
	}
	return t.run(ctx, call, &clock)
}

// run applies the rate limit and runs the middleware chain and the
// handler: steps 5 to 7 of the call path.
func (t Tool) run(ctx context.Context, call ToolCall, clock *callClock) (any, error) {
	c := t.core
	if c.limiter != nil {
		if err := c.admit(ctx, call.Name, clock); err != nil {
			return nil, err
		}
	} else if c.rateShared != nil {
		if err := c.admitShared(ctx, call.Name, clock); err != nil {
			return nil, err
		}
	}
	if c.timeout > 0 {
		dc := newDeadlineCtx(ctx, clock.now().Add(c.timeout))
		defer dc.finish()
		ctx = dc
	}
	res, err, panicked := t.handle(ctx, call, nil)
	switch {
	case panicked:
		return nil, err
	case err != nil:
		return nil, c.explain(ctx, call.Name, err)
	}
	return res, nil
}

// handle runs h, or when it is nil the middleware chain and the
// handler. A panic becomes a
// *PanicError naming the middleware or the handler.
func (t Tool) handle(ctx context.Context, call ToolCall, h Handler) (res any, err error, panicked bool) {
	c := t.core
	normal := false
	defer func() {
		if normal {
			return
		}
		p := recover()
		if p == nil {
			// runtime.Goexit: the goroutine ends, and nobody will hear back
			// from this call unless the goroutine is one of a caller that
			// watches for it (as the provider adapters' are). Say so.
			logError(ctx, "toolset: a tool called runtime.Goexit; the goroutine calling it ends",
				slog.String("tool", call.Name))
			return
		}
		pe, ok := p.(*PanicError)
		if !ok || !pe.relayed {
			callback := "handler"
			if t.mw != nil || len(c.mw) > 0 {
				callback = "middleware"
			}
			pe = newPanicError(callback, call.Name, "", p)
		}
		pe.relayed = false
		res, err, panicked = nil, pe, true
	}()
	if h == nil {
		h = c.chain
		if t.mw != nil {
			h = t.mw.handler(c)
		}
	}
	res, err = h(ctx, call)
	normal = true
	return res, err, false
}

// fusable reports whether nothing between validation and the handler
// (steps 3 to 6, and the timeout) is configured for t, which is offered
// with the schema it was made with: then no other code sees the arguments
// between the two, and its handler may validate them as it decodes them.
func (c *toolCore) fusable(t Tool) bool {
	return (t.Parameters == nil || t.Parameters == c.params) && t.mw == nil && len(c.mw) == 0 &&
		c.approval == nil && c.cache == nil && c.limiter == nil && c.rateShared == nil &&
		c.timeout == 0 && c.delegate == nil
}

// refusedArgs is the error of a fused handler for arguments the schema
// refuses: the error validation gives them (see validated).
type refusedArgs struct{ err error }

func (e *refusedArgs) Error() string { return e.err.Error() }

// runFused runs steps 2 and 7 of the call path in one for a fusable tool:
// the handler validates the arguments as it decodes them. The errors are
// those of the two steps apart.
func (t Tool) runFused(ctx context.Context, call ToolCall) (any, error) {
	c := t.core
	res, err, panicked := t.handle(ctx, call, c.fusedBase)
	switch {
	case panicked:
		return nil, err
	case err != nil:
		if r, ok := err.(*refusedArgs); ok {
			return nil, attributeError(call.Name, r.err)
		}
		return nil, c.explain(ctx, call.Name, err)
	}
	return res, nil
}

// fusedBase is base for a fusable tool.
func (c *toolCore) fusedBase(ctx context.Context, call ToolCall) (any, error) {
	return c.fused(ctx, call.Args)
}

// base is the innermost handler of a tool without middleware: it calls
// the tool's code.
func (c *toolCore) base(ctx context.Context, call ToolCall) (any, error) {
	if c.delegate != nil {
		ctx = context.WithValue(ctx, agentCallKey{}, call.ID)
	}
	return c.handler(ctx, call.Args)
}

// guardedBase is base under middleware: a panic of the handler is passed
// up through the middleware as a *PanicError naming the handler, so that
// it is not blamed on the middleware.
func (c *toolCore) guardedBase(ctx context.Context, call ToolCall) (any, error) {
	defer func() {
		if p := recover(); p != nil {
			pe := newPanicError("handler", call.Name, "", p)
			pe.relayed = true
			panic(pe)
		}
	}()
	return c.base(ctx, call)
}

// explain turns a failed call's error into the error the caller gets: a
// timeout, an argument error with the tool's name, or the handler's error
// wrapped in a *ToolError. An error the handler meant for the model (a
// ModelError, such as a Retry request) is kept even after the deadline.
// Looking into the error runs its methods (Unwrap, As): a panic of one
// becomes a *PanicError.
func (c *toolCore) explain(ctx context.Context, name string, err error) (out error) {
	defer func() {
		if p := recover(); p != nil {
			out = newPanicError("handler error", name, "", p)
		}
	}()
	if _, forModel := ErrorText(err); c.timeout > 0 && !forModel {
		if dc, ok := ctx.(*deadlineCtx); ok && dc.expired() && dc.Context.Err() == nil {
			if c.timeoutAborts {
				return &AbortError{Tool: name, Reason: fmt.Sprintf("timed out after %v", c.timeout), Err: context.DeadlineExceeded}
			}
			return &TimeoutError{Tool: name, After: c.timeout}
		}
	}
	return attributeError(name, err)
}

// callClock reads the clock at most once per call: every policy that needs
// the time of the call shares one reading. It carries the call's
// observation down the call path too.
type callClock struct {
	t  time.Time
	ob *callObs // nil when the call is not observed
}

func (c *callClock) now() time.Time {
	if c.t.IsZero() {
		c.t = time.Now()
	}
	return c.t
}

// attributeError names the tool in err: an *ArgumentError gets the tool
// name, anything else is wrapped in a *ToolError.
func attributeError(name string, err error) error {
	var ae *ArgumentError
	if errors.As(err, &ae) {
		named := *ae
		named.Tool = name
		return &named
	}
	return &ToolError{Tool: name, Err: err}
}
