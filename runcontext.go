package toolset

import (
	"context"
	"sync"
)

// RunContext is the per-run, per-turn state that predicates, prepare
// functions and tools read. It travels inside a [context.Context]: attach it
// with [NewContext] and read it with [FromContext].
//
// Treat a RunContext as immutable once it is attached to a context; derive a
// new one (for example with [RunContext.WithStep]) for the next turn. Copies
// of a RunContext share the run's own bookkeeping, so a copy made for the next
// step still belongs to the same run.
type RunContext struct {
	// RunID identifies the run (one user request answered by one agent).
	RunID string
	// Agent is the name of the agent that runs.
	Agent string
	// Step counts the turns of the run, starting at 0.
	Step int
	// Values holds request-scoped values such as "role", "tenant" or
	// "environment". Read them with [RunContext.Value].
	Values map[string]any
	// Deps carries the application's dependencies (a database handle, an
	// HTTP client, ...). Read them with [DepsAs].
	Deps any
	// StableToolList asks BuildTools to keep tools whose retry budget is
	// spent in the list, marked unavailable, instead of dropping them, so the
	// tool list (and a provider's prompt cache) stays the same across turns.
	StableToolList bool

	// run is the run's own bookkeeping, shared by every copy.
	run *runState
}

// runState is the bookkeeping a run keeps across its turns: failures per
// tool, the deferred tools its searches revealed, approvals and run-scoped
// caches. It is shared by reference between copies of a RunContext.
type runState struct {
	mu        sync.Mutex
	failures  map[*toolCore]*failureCount
	revealed  map[*toolCore]struct{}
	decisions map[approvalSubject]decision
	asked     map[string]approvalSubject // the first call asked about under each ID
	caches    map[*toolCore]*resultCache
}

type runContextKey struct{}

// NewContext returns a copy of ctx that carries rc. A nil rc attaches an
// empty RunContext. The run's bookkeeping is created here if rc has none yet,
// so attach a RunContext once per run and derive later steps from it.
func NewContext(ctx context.Context, rc *RunContext) context.Context {
	if rc == nil {
		rc = &RunContext{}
	}
	rc.ensureRun()
	return context.WithValue(ctx, runContextKey{}, rc)
}

// FromContext returns the RunContext carried by ctx. It never returns nil:
// when ctx carries none, it returns a new, empty RunContext.
func FromContext(ctx context.Context) *RunContext {
	if rc := runOf(ctx); rc != nil {
		return rc
	}
	return &RunContext{}
}

// runInit guards the creation of a run's bookkeeping, so one RunContext
// may be attached by concurrent requests.
var runInit sync.Mutex

// ensureRun creates the run's bookkeeping if rc has none yet.
func (rc *RunContext) ensureRun() {
	runInit.Lock()
	defer runInit.Unlock()
	if rc.run == nil {
		rc.run = &runState{}
	}
}

// runOf returns the run state carried by ctx, or nil.
func runOf(ctx context.Context) *RunContext {
	rc, _ := ctx.Value(runContextKey{}).(*RunContext)
	if rc == nil || rc.run == nil {
		return nil
	}
	return rc
}

// Value returns the request-scoped value stored under key, or nil.
func (rc *RunContext) Value(key string) any {
	if rc == nil {
		return nil
	}
	return rc.Values[key]
}

// String returns the request-scoped value stored under key if it is a
// string, or "".
func (rc *RunContext) String(key string) string {
	s, _ := rc.Value(key).(string)
	return s
}

// WithStep returns a copy of rc for the given step. The copy shares the
// run's bookkeeping with rc (creating it first if rc has none yet), so every
// step of a run sees the failures, reveals and approvals of the others.
func (rc *RunContext) WithStep(step int) *RunContext {
	rc.ensureRun()
	c := *rc
	c.Step = step
	return &c
}

// DepsAs returns the run's dependencies as a T, and whether they are one.
func DepsAs[T any](ctx context.Context) (T, bool) {
	d, ok := FromContext(ctx).Deps.(T)
	return d, ok
}
