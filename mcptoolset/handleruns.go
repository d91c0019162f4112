package mcptoolset

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
)

// handleRuns keeps the runs of run handles that requests in this process
// are using: a request resumes its handle's run from the store, unless
// another request of this process has it already, and the last of them
// suspends it back to the store, so that the next request, here or on
// another server sharing the store, resumes it.
type handleRuns struct {
	store  toolset.RunStore
	logger *slog.Logger

	mu sync.Mutex
	m  map[string]*handleRun
}

type handleRun struct {
	ready   chan struct{} // closed once rc or err is set
	rc      *toolset.RunContext
	err     error
	refs    int           // the requests using it
	closing chan struct{} // set while the last request suspends it; closed once it is gone

	// turn is held by a request from its Turn until it has built its
	// tools, as for a session's run (see sessionRun).
	turn turnLock
}

// resumeWait bounds how long a request waits for another server to let its
// run go.
var resumeWait = 5 * time.Second

// acquire returns the run id for a request, resuming it with resume when
// no request of this process has it; release it with release.
func (h *handleRuns) acquire(ctx context.Context, id string, resume func(context.Context) (*toolset.RunContext, error)) (*handleRun, error) {
	for {
		h.mu.Lock()
		e := h.m[id]
		switch {
		case e == nil:
			e = &handleRun{ready: make(chan struct{}), refs: 1, turn: newTurnLock()}
			if h.m == nil {
				h.m = make(map[string]*handleRun)
			}
			h.m[id] = e
			h.mu.Unlock()
			e.rc, e.err = h.resume(ctx, resume)
			if e.err != nil {
				h.mu.Lock()
				delete(h.m, id)
				h.mu.Unlock()
			}
			close(e.ready)
			return e, e.err
		case e.closing != nil:
			closing := e.closing
			h.mu.Unlock()
			select {
			case <-closing:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		e.refs++
		h.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			h.release(id, e)
			return nil, ctx.Err()
		}
		if e.err != nil {
			h.release(id, e)
			continue // the request that resumed it failed; try on our own
		}
		return e, nil
	}
}

// resume calls resume until it does not fail for another holder of the
// run, for resumeWait at most.
func (h *handleRuns) resume(ctx context.Context, resume func(context.Context) (*toolset.RunContext, error)) (*toolset.RunContext, error) {
	deadline := time.Now().Add(resumeWait)
	delay := 10 * time.Millisecond
	for {
		rc, err := resume(ctx)
		if err == nil || !heldElsewhere(err) || time.Now().Add(delay).After(deadline) {
			return rc, err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// heldElsewhere reports whether err, ResumeRun's, says that another
// holder has the run: another server sharing the store, or another Server
// of this process (which shares its live runs).
func heldElsewhere(err error) bool {
	var (
		se *toolset.RunStateConflictError
		le *toolset.RunConflictError
	)
	return errors.As(err, &se) || errors.As(err, &le)
}

// release ends a request's use of e; the last one suspends the run.
func (h *handleRuns) release(id string, e *handleRun) {
	h.mu.Lock()
	e.refs--
	if e.refs > 0 || e.rc == nil {
		if e.refs == 0 && h.m[id] == e {
			delete(h.m, id)
		}
		h.mu.Unlock()
		return
	}
	closing := make(chan struct{})
	e.closing = closing
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := e.rc.Suspend(ctx); err != nil {
		h.logger.Warn("mcptoolset: a run handle's run could not be saved to the run store; the client's next request starts it afresh",
			"run", e.rc.ID(), "error", err)
		e.rc.End()
	}
	cancel()
	h.mu.Lock()
	if h.m[id] == e {
		delete(h.m, id)
	}
	h.mu.Unlock()
	close(closing)
}

// len returns the number of runs of handles in use.
func (h *handleRuns) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}
