package toolset

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"weak"
)

// RunContext is one run: one user request answered by one agent, over
// several turns. It says who asks (values read with a [Key] or
// [RunContext.Value]), carries the application's dependencies ([DepsAs]),
// and keeps the run's own bookkeeping across its turns: the failures that
// spend a tool's budget ([WithMaxFailures]), the deferred tools its searches
// revealed ([NewToolSearch]), the approval decisions
// ([RunContext.RecordApproval]) and the run-scoped caches ([CacheRun]).
//
// Make one with [NewRun] when the run begins (or with [ResumeRun], for a
// run whose state a [RunStore] keeps between requests), derive each turn's context
// from it with [RunContext.Turn], and [RunContext.End] it when the run is
// over:
//
//	run := toolset.NewRun(requestID, toolset.WithValue(Role, "admin"))
//	defer run.End()
//	for {
//		ctx := run.Turn(ctx)
//		tools, err := toolset.BuildTools(ctx, "support", entries...)
//		...
//	}
//
// A RunContext has no exported fields and its accessors only read; all of
// them are safe on a nil *RunContext, which is no run. A RunContext is safe
// for concurrent use.
type RunContext struct {
	st  *runState
	err error // why this run is unusable: a *RunConflictError

	// step is the turn's step for a RunContext read from a turn's context
	// (turn is true); the run's own value reads the latest step from st.
	step  int
	turn  bool
	built atomic.Bool // BuildTools ran under this turn

	// spend is the turn's count against the run's WithTurnResultBudget,
	// for a turn's RunContext of a run that has one; otherwise nil.
	spend *turnSpend
}

// runState is what every RunContext of one run shares: its fixed values,
// set by NewRun, and its bookkeeping, guarded by mu.
type runState struct {
	id, parentID string
	vals         []keyedValue   // by key index
	byName       map[string]any // every value, by name
	unindexed    bool           // some names of byName have no key yet
	deps         any
	stable       bool
	limits       *CallLimits     // see WithCallLimits; nil: none
	journal      *JournalOptions // see WithCallJournal; nil: none
	turnBudget   *ResultBudget   // see WithTurnResultBudget; nil: none
	obs          *runObserver    // see WithObserver

	// latestSpend is the latest turn's count against turnBudget (before
	// the first turn, one of its own), for calls under a context that
	// carries the run but no turn; nil without a turn budget.
	latestSpend atomic.Pointer[turnSpend]

	step     atomic.Int64 // the latest turn begun; -1 before the first
	ended    atomic.Bool
	children atomic.Uint64 // for the ids of children made without one

	mu    sync.Mutex
	parts runParts // the policies' per-run state; see runparts.go

	durable *durability // for a run resumed from a store, or nil

	cleanup runtime.Cleanup // the warning for a run dropped without End
}

// ErrRunEnded reports work under a run that has ended: BuildTools and calls
// under the context of a run after its [RunContext.End]. It comes wrapped
// in an error that names the run; test for it with errors.Is.
var ErrRunEnded = errors.New("the run has ended: make a new run with NewRun")

// errNotMade reports a RunContext that NewRun did not make: the zero
// value, as &toolset.RunContext{} makes it.
var errNotMade = errors.New("toolset: the RunContext was not made by NewRun: make each run with NewRun, and derive each turn's context with Turn")

// RunConflictError reports a run made with the ID of another run of the
// process that is still live (made, and not yet ended). The new run is
// unusable: its Err returns this error, and BuildTools and calls under it
// fail with it.
type RunConflictError struct {
	// ID is the run ID both runs have.
	ID string
}

// Error implements error.
func (e *RunConflictError) Error() string {
	return fmt.Sprintf("toolset: run %q is already live: make one RunContext per run with NewRun, derive each turn's context with Turn, and End a run when it is over", boundName(e.ID))
}

// TurnError reports BuildTools under a context that is not the context of
// the run's current turn: one that carries the run but no turn
// ([NewContext]), a turn that already built its tools, or a turn older
// than the run's latest.
type TurnError struct {
	// RunID is the run's ID.
	RunID string
	// Step is the turn's step, or -1 for a context without a turn.
	Step int
	// Reason says what was wrong.
	Reason string
}

// Error implements error.
func (e *TurnError) Error() string {
	if e.Step < 0 {
		return fmt.Sprintf("toolset: run %q: %s", boundName(e.RunID), e.Reason)
	}
	return fmt.Sprintf("toolset: turn %d of run %q %s", e.Step, boundName(e.RunID), e.Reason)
}

// runConfig is what the options of NewRun and NewChild set.
type runConfig struct {
	vals       map[string]any
	deps       any
	hasDep     bool
	stable     bool
	limits     *CallLimits     // see WithCallLimits
	journal    *JournalOptions // see WithCallJournal
	turnBudget *ResultBudget   // see WithTurnResultBudget

	store           RunStore // set by ResumeRun
	stateTTL, lease time.Duration
	obs             Observer
}

// RunOption configures a run; see [NewRun].
type RunOption func(*runConfig)

// liveRuns maps the ID of every live run to its state, held weakly: a run
// dropped without End is collected, and its cleanup removes its entry.
var liveRuns struct {
	sync.Mutex
	m map[string]weak.Pointer[runState]
}

// NewRun begins a run with the given ID; it is live until [RunContext.End].
// An empty id gets a generated unique one ("run-" and 16 hex digits).
//
// Run IDs are unique among the live runs of the process: if another live
// run already has id, the new run is unusable. Its Err returns a
// [*RunConflictError], and BuildTools and calls under it fail with that
// error. Make one RunContext per run, derive each turn's context with
// [RunContext.Turn], and End the run when it is over. A run dropped without
// End does not leak: once it is garbage-collected its ID is free again,
// and a warning is logged through [slog.Default].
func NewRun(id string, opts ...RunOption) *RunContext {
	var cfg runConfig
	return newRun(id, "", &cfg, opts)
}

// NewChild begins a child run of rc, such as the run of a sub-agent (see
// [NewAgentTool]). The child inherits rc's values, dependencies and
// stable-list setting (opts may add to or override them), and has its own
// steps, failures, reveals, approvals and caches. Its ParentID is rc's ID.
// An empty id gets rc's ID, "/" and a counter. The child is live until its
// End, as for [NewRun]. A child of a nil RunContext is a run without a
// parent. A child of a run that cannot be used, because it has ended or
// for the reasons of [RunContext.Err], cannot be used either: its Err is
// the parent's, so work begun under an ended run (a sub-agent called just
// before its End) does not go on in a child.
func (rc *RunContext) NewChild(id string, opts ...RunOption) *RunContext {
	if err := rc.Err(); err != nil {
		return &RunContext{err: err}
	}
	var cfg runConfig
	parentID := ""
	if s := rc.state(); s != nil {
		parentID = s.id
		cfg.vals = maps.Clone(s.byName)
		cfg.deps, cfg.hasDep, cfg.stable, cfg.limits, cfg.journal, cfg.turnBudget = s.deps, true, s.stable, s.limits, s.journal, s.turnBudget
		if s.obs != nil {
			cfg.obs = s.obs.o
		}
		if id == "" {
			id = s.id + "/" + strconv.FormatUint(s.children.Add(1), 10)
		}
	}
	return newRun(id, parentID, &cfg, opts)
}

func newRun(id, parentID string, cfg *runConfig, opts []RunOption) *RunContext {
	for _, o := range opts {
		if o != nil {
			o(cfg)
		}
	}
	if id == "" {
		var b [8]byte
		rand.Read(b[:])
		id = "run-" + hex.EncodeToString(b[:])
	}
	s := &runState{id: id, parentID: parentID, deps: cfg.deps, stable: cfg.stable, limits: cfg.limits, journal: cfg.journal, turnBudget: cfg.turnBudget}
	if cfg.store != nil {
		s.durable = newDurability(cfg)
	}
	s.step.Store(-1)
	if s.turnBudget != nil {
		s.latestSpend.Store(&turnSpend{step: -1})
	}
	if cfg.obs != nil {
		s.obs = newRunObserver(cfg.obs)
	}
	if len(cfg.vals) > 0 {
		s.byName = cfg.vals
		s.vals, s.unindexed = indexValues(cfg.vals)
	}
	wp := weak.Make(s)
	liveRuns.Lock()
	defer liveRuns.Unlock()
	if old, ok := liveRuns.m[id]; ok && old.Value() != nil {
		return &RunContext{err: &RunConflictError{ID: id}}
	}
	if liveRuns.m == nil {
		liveRuns.m = make(map[string]weak.Pointer[runState])
	}
	liveRuns.m[id] = wp
	s.cleanup = runtime.AddCleanup(s, dropRun, liveRun{id: id, wp: wp})
	return &RunContext{st: s}
}

// liveRun names a registry entry for the cleanup of a run's state.
type liveRun struct {
	id string
	wp weak.Pointer[runState]
}

// dropRun is the cleanup of a run dropped without End.
func dropRun(r liveRun) {
	liveRuns.Lock()
	if liveRuns.m[r.id] == r.wp {
		delete(liveRuns.m, r.id)
	}
	liveRuns.Unlock()
	slog.Default().Warn(fmt.Sprintf("toolset: run %q was garbage-collected without End", boundName(r.id)))
}

// End ends the run: its ID is free for a new run, and its bookkeeping
// (failures, reveals, approval decisions, run-scoped caches) is dropped.
// For a run made with [ResumeRun], End deletes its saved state too
// (unless another process has taken the run over); a failure to delete
// is logged through [slog.Default]. Use [RunContext.Suspend] instead to
// keep it. BuildTools and calls under the run's contexts fail with
// [ErrRunEnded] from now on. End is idempotent, and does nothing on an
// unusable run (see [RunConflictError]) or a nil one.
func (rc *RunContext) End() {
	rc.end(true)
}

// end ends the run; forget deletes the saved state of a run with a store.
func (rc *RunContext) end(forget bool) {
	s := rc.state()
	if s == nil || s.ended.Swap(true) {
		return
	}
	if forget && s.durable != nil {
		s.forget()
	}
	s.cleanup.Stop()
	liveRuns.Lock()
	if wp, ok := liveRuns.m[s.id]; ok && wp.Value() == s {
		delete(liveRuns.m, s.id)
	}
	liveRuns.Unlock()
	s.mu.Lock()
	s.parts = runParts{}
	s.mu.Unlock()
}

// Turn begins the run's next turn and returns a copy of ctx that carries
// the run at that turn's step: the first turn is step 0, the next 1, and so
// on. Concurrent calls get distinct steps. On a nil RunContext, Turn
// returns ctx. Build the turn's tools under the
// returned context, once (see [BuildTools]); the turn's calls may run under
// it or under any other context of the run.
//
// Predicates, prepare functions and tools read the run from the context
// with [FromContext] or a [Key]; a context returned by Turn answers them
// without walking the context chain.
func (rc *RunContext) Turn(ctx context.Context) context.Context {
	if rc == nil {
		return ctx // no run: no turn
	}
	// A turn's context carries nothing but its run, which the new turn
	// replaces: a loop that writes ctx = run.Turn(ctx) does not stack one
	// per turn.
	for {
		prev, ok := ctx.(*turnContext)
		if !ok {
			break
		}
		ctx = prev.Context
	}
	tc := &turnContext{Context: ctx}
	tc.turn.st, tc.turn.err, tc.turn.turn = rc.state(), rc.Err(), true
	if s := rc.state(); s != nil {
		tc.turn.step = int(s.step.Add(1))
		if s.turnBudget != nil {
			tc.turn.spend = s.newTurnSpend(tc.turn.step)
		}
	}
	tc.rc = &tc.turn
	return tc
}

// turnContext is the context of a turn: it carries the run itself, so that
// FromContext and Key.Get find it with a type assertion. BuildTools and
// Combined wrap the contexts they derive in one again for their callbacks.
type turnContext struct {
	context.Context
	rc   *RunContext
	turn RunContext // the storage of rc, for a turn made by Turn
}

// Value implements [context.Context].
func (c *turnContext) Value(key any) any {
	if _, ok := key.(runContextKey); ok {
		return c.rc
	}
	return c.Context.Value(key)
}

// withRun returns ctx, derived from a context that carries rc, in a
// turnContext, so that callbacks given it find rc without a walk. tc, if
// not nil, is the storage to use.
func withRun(ctx context.Context, rc *RunContext, tc *turnContext) context.Context {
	if rc == nil {
		return ctx
	}
	if tc == nil {
		tc = new(turnContext)
	}
	tc.Context, tc.rc = ctx, rc
	return tc
}

type runContextKey struct{}

// NewContext returns a copy of ctx that carries rc, without beginning a
// turn: to hand a run to code that begins its turns itself (an [Agent]'s
// Run, which calls Turn), or to attach a turn's RunContext to another
// context. BuildTools under a context that carries a run but no turn fails
// with a [*TurnError]; calls under it run in the run. A nil rc makes a
// context that carries no run.
func NewContext(ctx context.Context, rc *RunContext) context.Context {
	if rc == nil {
		return context.WithValue(ctx, runContextKey{}, (*RunContext)(nil))
	}
	return &turnContext{Context: ctx, rc: rc}
}

// FromContext returns the RunContext that ctx carries, or nil if it
// carries none. The methods of a nil *RunContext report no run.
func FromContext(ctx context.Context) *RunContext {
	if tc, ok := ctx.(*turnContext); ok {
		return tc.rc
	}
	rc, _ := ctx.Value(runContextKey{}).(*RunContext)
	return rc
}

// runOf returns the usable run ctx carries, or nil (an unusable run is
// checked where it matters).
func runOf(ctx context.Context) *RunContext { return FromContext(ctx) }

// state returns rc's shared state, or nil for no run or an unusable one.
func (rc *RunContext) state() *runState {
	if rc == nil {
		return nil
	}
	return rc.st
}

// ID returns the run's ID, or "" for a nil RunContext.
func (rc *RunContext) ID() string {
	if rc == nil {
		return ""
	}
	if e, ok := rc.err.(*RunConflictError); ok {
		return e.ID
	}
	if rc.st == nil {
		return ""
	}
	return rc.st.id
}

// ParentID returns the ID of the run this one is a child of (see
// [RunContext.NewChild]), or "".
func (rc *RunContext) ParentID() string {
	if s := rc.state(); s != nil {
		return s.parentID
	}
	return ""
}

// Step returns the turn's step for a RunContext read from a turn's context
// (see [RunContext.Turn]); for the run's own value, made by NewRun, it
// returns the step of the latest turn begun, or -1 before the first.
func (rc *RunContext) Step() int {
	s := rc.state()
	switch {
	case s == nil:
		return -1
	case rc.turn:
		return rc.step
	}
	return int(s.step.Load())
}

// Err returns why the run cannot be used, or nil: a [*RunConflictError]
// for a run made with the ID of another live run, [ErrRunEnded] once the
// run has ended, or an error for a RunContext that NewRun did not make
// (the zero value). A nil RunContext has no error: it is no run.
func (rc *RunContext) Err() error {
	if rc == nil {
		return nil
	}
	if rc.err != nil {
		return rc.err
	}
	if rc.st == nil {
		return errNotMade
	}
	if rc.st.ended.Load() {
		return ErrRunEnded
	}
	if d := rc.st.durable; d != nil {
		if e := d.lost.Load(); e != nil {
			return e
		}
	}
	return nil
}

// checkTurn checks that BuildTools may build the tools of rc's turn.
func (rc *RunContext) checkTurn() error {
	if rc == nil {
		return nil
	}
	if err := rc.Err(); err != nil {
		return err
	}
	s := rc.st
	if !rc.turn {
		return &TurnError{RunID: s.id, Step: -1, Reason: "the context carries the run but no turn: derive each turn's context with RunContext.Turn"}
	}
	if latest := int(s.step.Load()); rc.step < latest {
		return &TurnError{RunID: s.id, Step: rc.step, Reason: fmt.Sprintf("is stale: turn %d has begun; build under the context of the latest turn", latest)}
	}
	if rc.built.Load() {
		return errBuilt(rc)
	}
	return nil
}

// markBuilt records that BuildTools built the tools of rc's turn; it fails
// if a concurrent BuildTools under the same turn did first. A failed build
// does not use up its turn, so it may be tried again.
func (rc *RunContext) markBuilt() error {
	if rc == nil || rc.built.CompareAndSwap(false, true) {
		return nil
	}
	return errBuilt(rc)
}

func errBuilt(rc *RunContext) error {
	return &TurnError{RunID: rc.st.id, Step: rc.step, Reason: "already built its tools: call Turn for the next turn"}
}
