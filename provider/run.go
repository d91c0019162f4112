package provider

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/gotoolset/toolset"
)

// Outcome is what one call produced: a result, or the text of an error the
// model should see.
type Outcome struct {
	// Call is the call as the model made it.
	Call toolset.ToolCall
	// Result is the tool's result; nil when IsError.
	Result any
	// IsError reports an error the model should see; Message is its text.
	IsError bool
	// Message is the model-visible error text when IsError.
	Message string
}

// Exec runs one call. The adapters pass [toolset.ToolList.Execute],
// possibly after adjusting the arguments.
type Exec func(ctx context.Context, call toolset.ToolCall) (any, error)

// CallError is a call whose error should stop the run. Each adapter
// exports it under its own name.
type CallError struct {
	// Call is the call that failed.
	Call toolset.ToolCall
	// Err is the error it returned.
	Err error
}

// Error implements error.
func (e *CallError) Error() string {
	if e.Call.ID == "" {
		return fmt.Sprintf("tool call of %q: %v", e.Call.Name, e.Err)
	}
	return fmt.Sprintf("tool call %s of %q: %v", e.Call.ID, e.Call.Name, e.Err)
}

// Unwrap returns the call's error.
func (e *CallError) Unwrap() error { return e.Err }

// approving returns exec that, when a call waits for approval, asks
// approver, records the answer in the run context of ctx and runs the call
// again. Without an approver (nil), exec is returned as it is, and a call
// that waits for approval stops the run with its
// [*toolset.ApprovalRequiredError].
func approving(exec Exec, approver toolset.Approver) Exec {
	if approver == nil {
		return exec
	}
	return func(ctx context.Context, call toolset.ToolCall) (any, error) {
		res, err := exec(ctx, call)
		var need *toolset.ApprovalRequiredError
		rc := toolset.FromContext(ctx)
		if !errors.As(err, &need) || need.Call.ID == "" || need.Call.ID != call.ID || need.Call.Name != call.Name || need.RunID != rc.ID() {
			// Not this call's approval (a sub-agent's call, say), or one
			// that cannot be recorded: it stops the run as it is.
			return res, err
		}
		ok, reason, aerr := ask(ctx, approver, need.Call)
		if aerr != nil {
			return nil, fmt.Errorf("asking for approval: %w", aerr)
		}
		if ok {
			rc.RecordApproval(need.Call)
		} else {
			rc.RecordDenial(need.Call, reason)
		}
		return exec(ctx, call)
	}
}

// ask puts call to approver; a panic becomes a *toolset.PanicError.
func ask(ctx context.Context, approver toolset.Approver, call toolset.ToolCall) (ok bool, reason string, err error) {
	defer func() {
		if p := recover(); p != nil {
			ok, reason, err = false, "", &toolset.PanicError{Tool: call.Name, Callback: "approver", Value: p, Stack: debug.Stack()}
		}
	}()
	return approver(ctx, call)
}

// run runs calls with exec, at most limit at a time and in the order
// after gives ([toolset.ToolList.CallOrder]: after[i] lists the calls
// that call i waits for; nil, none), and returns their outcomes in call
// order. Errors for which [toolset.ErrorText] reports true become
// outcomes the model sees, except that a call still waiting for approval
// ([*toolset.ApprovalRequiredError]) stops the run: nobody would ever
// ask. Any other error stops the run: the calls still running are
// cancelled, calls not yet started are skipped, and Run returns the first
// such error in call order as a *CallError.
// maxWaiting bounds the goroutines of [run] that wait for a call to be
// allowed to start, beyond those running one.
const maxWaiting = 256

func run(ctx context.Context, calls []toolset.ToolCall, limit int, after [][]int, exec Exec) ([]Outcome, error) {
	if limit < 1 {
		return nil, fmt.Errorf("concurrency limit must be at least 1, got %d", limit)
	}
	if after != nil && len(after) != len(calls) {
		return nil, fmt.Errorf("call order for %d calls, not %d", len(after), len(calls))
	}
	out := make([]Outcome, len(calls))
	errs := make([]error, len(calls))
	one := func(ctx context.Context, i int) {
		out[i].Call = calls[i]
		res, err := exec(ctx, calls[i])
		if err == nil {
			out[i].Result = res
			return
		}
		var need *toolset.ApprovalRequiredError
		if errors.As(err, &need) {
			errs[i] = err
			return
		}
		if msg, ok := toolset.ErrorText(err); ok {
			out[i].IsError, out[i].Message = true, msg
			return
		}
		errs[i] = err
	}
	if len(calls) <= 1 || limit == 1 {
		// In call order, one at a time: every order is kept.
		for i := range calls {
			done := make(chan struct{})
			go func() {
				defer close(done)
				guard(calls[i], &errs[i], func() { one(ctx, i) })
			}()
			<-done
			if errs[i] != nil {
				return nil, &CallError{Call: calls[i], Err: errs[i]}
			}
		}
		return out, nil
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, limit)
	done := make([]chan struct{}, len(calls))
	for i := range done {
		done[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := false
	notStarted := -1 // the first call the caller's context ended before
	// A model's response may hold any number of calls: at most limit run
	// and maxWaiting more wait (for their turn or for the calls they are
	// ordered after), each on a goroutine; the rest are started as those
	// end. Calls are started in call order and wait only for earlier
	// calls, so the earliest unfinished one can always go on.
	alive := make(chan struct{}, limit+maxWaiting)
	for i := range calls {
		alive <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-alive }()
			defer close(done[i])
			var deps []int
			if after != nil {
				deps = after[i]
			}
			started := func() bool {
				for _, j := range deps {
					if j < 0 || j >= i {
						continue // not an earlier call: nothing to wait for
					}
					select {
					case <-done[j]:
					case <-ctx.Done():
						return false
					}
				}
				select {
				case sem <- struct{}{}:
					if ctx.Err() != nil {
						<-sem
						return false
					}
					return true
				case <-ctx.Done():
					return false
				}
			}()
			if !started {
				mu.Lock()
				if notStarted < 0 || i < notStarted {
					notStarted = i
				}
				mu.Unlock()
				return
			}
			defer func() { <-sem }()
			// Deferred: a handler's runtime.Goexit unwinds past guard.
			defer func() {
				if errs[i] != nil {
					mu.Lock()
					failed = true
					mu.Unlock()
					cancel()
				}
			}()
			guard(calls[i], &errs[i], func() { one(ctx, i) })
		}()
	}
	wg.Wait()
	if !failed {
		if notStarted >= 0 {
			// The caller's context ended before every call started.
			return nil, &CallError{Call: calls[notStarted], Err: fmt.Errorf("not run: %w", context.Cause(ctx))}
		}
		return out, nil
	}
	return nil, firstError(calls, errs)
}

// guard runs fn, the execution of call on a goroutine of Run's own. A
// panic that escapes it (the tools recover their own; an Exec or an
// Approver may not), and a call of runtime.Goexit, which ends the
// goroutine, set *err to a *toolset.PanicError naming the call's tool, so
// that the model is never told that such a call succeeded.
func guard(call toolset.ToolCall, err *error, fn func()) {
	normal := false
	defer func() {
		if normal {
			return
		}
		p := recover()
		if pe, ok := p.(*toolset.PanicError); ok {
			*err = pe
			return
		}
		if p == nil {
			p = toolset.ErrGoexit
		}
		*err = &toolset.PanicError{Tool: call.Name, Callback: "handler", Value: p, Stack: debug.Stack()}
	}()
	fn()
	normal = true
}

// firstError returns the first error in call order, preferring errors that
// did not merely come from the cancellation that another failure caused.
func firstError(calls []toolset.ToolCall, errs []error) error {
	first := -1
	for i, err := range errs {
		if err == nil {
			continue
		}
		if !isCanceled(err) {
			return &CallError{Call: calls[i], Err: err}
		}
		if first < 0 {
			first = i
		}
	}
	return &CallError{Call: calls[first], Err: errs[first]}
}

// isCanceled reports whether err is context.Canceled. An error that wraps
// a value of user code whose Is or Unwrap method panics (a handler's panic
// value, say) is not.
func isCanceled(err error) (yes bool) {
	defer func() {
		if recover() != nil {
			yes = false
		}
	}()
	return errors.Is(err, context.Canceled)
}
