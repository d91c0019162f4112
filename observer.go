package toolset

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"sync/atomic"
	"time"
)

// Observer watches the turns and the calls of the runs it is attached to:
// for tracing, metrics or logs (package oteltoolset is one, on
// OpenTelemetry). Attach one to a run with [WithObserver], so that every
// turn and call of the run (and of its child runs, such as sub-agents')
// reports to it, or to a context with [ContextWithObserver], for calls and
// turns of no run.
//
// Without an observer nothing is computed for one: a turn's fingerprint,
// a call's composition path and the events are made only for an observer.
//
// Each Start method returns the context the observed work goes on under,
// and an observation that receives what happens next. A turn's context is
// the one its toolsets are materialised under (an MCP toolset's tools/list
// request, say); a call's is the one its policies, middleware and handler
// run under, so a span the observer put there is the parent of whatever
// the tool does, across an MCP hop too. An observer may return the context
// it was given. It may return a nil observation: the turn or the call is
// then not observed further, and costs nothing more (an observer whose
// spans would not be recorded, say), yet still goes on under the context
// returned, so that what it does stays under what the observer put there
// (a span the sampler dropped, say, which its children follow). A nil
// context stands for the one given.
//
// The methods run on the goroutine of the turn or the call, and must be
// safe for concurrent use: calls of one run may run in parallel. They
// should return quickly. A panic in one is recovered and logged with
// [slog.Default], and the turn or call goes on unobserved: observing never
// changes an outcome.
//
// An observer may also implement [EnabledObserver], to tell for next to
// nothing that it would observe no work under a context, and a turn's
// observation may implement [CallDecliner], to decline the calls of its
// turn for next to nothing.
//
// The data structs may gain fields, and [CallEventKind] new kinds; ignore
// what you do not know.
type Observer interface {
	// StartTurn is called when BuildTools begins a turn.
	StartTurn(ctx context.Context, turn TurnInfo) (context.Context, TurnObservation)
	// StartCall is called when a call begins: [ToolList.Execute] before
	// it looks the name up, [Tool.Execute] for a direct call.
	StartCall(ctx context.Context, call CallInfo) (context.Context, CallObservation)
}

// EnabledObserver is an [Observer] that can tell, before a turn or a call
// begins, that it would not observe it: one on no-op providers, say, or
// one whose output is switched off. When Enabled reports false for the
// context of a turn or a call, its Start method is not called, nor is
// anything made for it (the call's [CallInfo], say): the work costs what
// it costs without an observer. When it reports true, the Start method
// is called as usual, and may still return a nil observation.
//
// Enabled is called for every turn and call, on their goroutine, so it
// must be cheap and safe for concurrent use. A panic in it is recovered
// and logged like one of the other methods, and the work goes on
// unobserved.
type EnabledObserver interface {
	Observer
	// Enabled reports whether the observer may observe work under ctx.
	Enabled(ctx context.Context) bool
}

// TurnObservation receives the end of one observed turn.
type TurnObservation interface {
	// EndTurn is called once, when BuildTools returns.
	EndTurn(TurnEnd)
}

// CallDecliner is a [TurnObservation] that can decline the calls of its
// turn before they begin: that of a turn whose span the sampler dropped,
// say, when the calls' spans would be dropped with it. The calls it is
// asked about are those of the turn's [ToolList] for which the observer
// that began the turn would be given it as [CallInfo.Turn], and only
// while that observer is the call's. When DeclineCall declines such a
// call, neither the observer's Enabled nor its StartCall is called, nor
// is anything made for the call (its [CallInfo], say): it costs what it
// costs without an observer, and goes on under the context DeclineCall
// returned, as a call whose StartCall returned a nil observation does.
// When it does not decline it, the call is observed as usual, and the
// observer may still decline it.
//
// Whether a turn's observation is one is asked once, when StartTurn
// returns; the calls of a turn whose observation is not one are observed
// as usual. DeclineCall is called for every call of the turn, on the
// call's goroutine, so it must be cheap and safe for concurrent use, and
// it may be called after EndTurn, for as long as the turn's list is used.
// A panic in it is recovered and logged like one of the observer's
// methods, and the call goes on unobserved, under its own context.
type CallDecliner interface {
	TurnObservation
	// DeclineCall reports whether the turn's observer declines a call of
	// the turn under ctx and, when it does, the context the call goes on
	// under: ctx, or one derived from it (nil stands for ctx).
	DeclineCall(ctx context.Context) (context.Context, bool)
}

// CallObservation receives what happens during one observed call.
type CallObservation interface {
	// Event reports a decision of the call's policies, as it is made.
	Event(CallEvent)
	// Progress reports a progress report of the tool (see
	// [ReportProgress]); the caller's own callback, if any, receives it
	// too, after the observer.
	Progress(Progress)
	// EndCall is called once, when the call returns.
	EndCall(CallEnd)
}

// TurnInfo is what an observer is told when a turn begins.
type TurnInfo struct {
	// Agent is the agent name given to BuildTools.
	Agent string
	// RunID and ParentRunID are the IDs of the turn's run and of its
	// parent run (see [RunContext.NewChild]), "" for none.
	RunID, ParentRunID string
	// Step is the turn's step, -1 for no run.
	Step int
}

// TurnEnd is what an observer is told when a turn ends.
type TurnEnd struct {
	// Tools is the number of tools the model is sent.
	Tools int
	// DefinitionBytes is the size of their definitions as the model sees
	// them: names, descriptions and parameter schemas as JSON, added up.
	DefinitionBytes int
	// Fingerprint identifies the definitions the model is sent, in order:
	// 32 hex digits of a SHA-256 of every tool's name, description and
	// parameter schema. Two turns with one fingerprint sent the model the
	// same tools, so a provider's prompt cache stayed warm.
	Fingerprint string
	// PreviousFingerprint is the fingerprint of the run's previous
	// observed turn that built its tools, "" for the first. When it is
	// set and differs from Fingerprint, the tool definitions changed
	// within the run, and a provider's prompt cache was invalidated.
	PreviousFingerprint string
	// Unrevealed is how many deferred tools stayed hidden because no
	// search of the run revealed them, and Spent how many tools were
	// dropped or marked unavailable because their failure budget is
	// spent.
	Unrevealed, Spent int
	// Err is the turn's error, and ErrorKind its kind (see
	// [CallEnd.ErrorKind]); the other fields are zero when Err is set.
	Err       error
	ErrorKind string
}

// CallInfo is what an observer is told when a call begins.
type CallInfo struct {
	// Call is the call as the model made it. Its Args are the model's and
	// may hold what users typed: treat them as sensitive.
	Call ToolCall
	// Agent is the agent of the turn's list, "" for a direct call.
	Agent string
	// RunID is the ID of the call's run, "" for none, and Step the step
	// of the call's context, -1 for none.
	RunID string
	Step  int
	// Turn is the observation of the turn whose list runs the call, when
	// the call runs under a context of that turn (the context given to
	// BuildTools, or one derived from it), and nil otherwise.
	Turn TurnObservation
	// Found reports whether the name was found: false for a name the
	// turn does not offer, and then Tool and the fields below are zero.
	Found bool
	// Tool is the tool called, as offered this turn.
	Tool Tool
	// OriginalName is the name the tool was made with, before any prefix
	// or rename.
	OriginalName string
	// Path names where the tool came from in the turn's composition, as
	// name conflicts and [Explain] do: `Combined#0/Prefixed#1 "db"`. It
	// names the toolsets the tool came through down to the innermost
	// [Combined] that holds it; [ToolExplanation.Path] names every layer.
	// It is "" for a direct call.
	Path string
	// Deferred reports a deferred tool ([WithDeferred]); whether the run
	// revealed it is an event.
	Deferred bool
}

// CallEventKind is the kind of a [CallEvent].
type CallEventKind uint8

// The kinds of call events, in the order of the call path.
const (
	// EventDeferredRevealed: a deferred tool a search of the run revealed
	// is called; EventDeferredUnrevealed: one not revealed is refused.
	EventDeferredRevealed CallEventKind = iota + 1
	EventDeferredUnrevealed
	// EventBudgetSpent: the tool's failure budget is spent; the call is
	// refused.
	EventBudgetSpent
	// EventApprovalAsked: the call needs a human's approval and none is
	// recorded (the call returns an [*ApprovalRequiredError]);
	// EventApprovalGranted and EventApprovalDenied: a recorded decision
	// was used.
	EventApprovalAsked
	EventApprovalGranted
	EventApprovalDenied
	// EventCacheHit and EventCacheMiss: the result cache's lookup. A
	// call that waits for an identical call already running is a miss.
	EventCacheHit
	EventCacheMiss
	// EventRateLimitWait: the call waited Wait for its rate limit;
	// EventRateLimitReject: it was refused, Wait being how long until a
	// call would be allowed.
	EventRateLimitWait
	EventRateLimitReject
	// EventFailureCounted: the call's failure was counted against the
	// tool's budget, of which FailuresLeft failing steps are left.
	EventFailureCounted
)

var eventNames = [...]string{
	EventDeferredRevealed:   "deferred_revealed",
	EventDeferredUnrevealed: "deferred_unrevealed",
	EventBudgetSpent:        "budget_spent",
	EventApprovalAsked:      "approval_asked",
	EventApprovalGranted:    "approval_granted",
	EventApprovalDenied:     "approval_denied",
	EventCacheHit:           "cache_hit",
	EventCacheMiss:          "cache_miss",
	EventRateLimitWait:      "rate_limit_wait",
	EventRateLimitReject:    "rate_limit_reject",
	EventFailureCounted:     "failure_counted",
}

// String returns the kind's name in snake case ("cache_hit").
func (k CallEventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "unknown"
}

// CallEvent is one decision of a call's policies.
type CallEvent struct {
	Kind CallEventKind
	// Wait is the rate limit's wait, for the rate-limit kinds.
	Wait time.Duration
	// FailuresLeft is what is left of the failure budget, for
	// EventFailureCounted.
	FailuresLeft int
}

// CallEnd is what an observer is told when a call ends.
type CallEnd struct {
	// Result is the call's result, nil on failure; like the arguments,
	// treat it as sensitive.
	Result any
	// Err is the call's error, and ErrorKind a short name for its kind,
	// for metrics and error.type attributes: "invalid_arguments",
	// "unknown_tool", "unavailable", "call_limit", "approval_required",
	// "approval_denied", "rate_limited", "timeout", "model_error" (a
	// handler's [NewModelError] or another [ModelError]), "tool_error",
	// "panic", "abort", "canceled", "deadline_exceeded", "run_ended",
	// "run_mismatch", "run_conflict", or "_OTHER"; a turn's error may
	// also be "turn" (a [*TurnError]), "name_conflict" or "missing_env".
	Err       error
	ErrorKind string
	// FailuresLeft is what is left of the tool's failure budget in the
	// run after the call, -1 for a tool without one or a call of no run.
	FailuresLeft int
}

// WithObserver attaches o to the run: every turn and call under the run's
// contexts reports to it, and so do those of its child runs. A nil o
// attaches none.
func WithObserver(o Observer) RunOption {
	return func(c *runConfig) { c.obs = o }
}

// observerKey is the context key of ContextWithObserver.
type observerKey struct{}

// ctxObservers is set once any context carries an observer, so that a
// program that never does pays no context lookup per call.
var ctxObservers atomic.Bool

// ContextWithObserver returns a copy of ctx that carries o, the observer
// of turns and calls under it whose run has none (see [WithObserver]),
// such as calls of no run. A nil o removes it.
func ContextWithObserver(ctx context.Context, o Observer) context.Context {
	if o != nil {
		ctxObservers.Store(true)
	}
	return context.WithValue(ctx, observerKey{}, o)
}

// runObserver is a run's observer and what it remembers between turns.
type runObserver struct {
	o      Observer
	en     EnabledObserver          // o, when it is one
	lastFP atomic.Pointer[string]   // the fingerprint of the latest observed turn
	memo   atomic.Pointer[turnMemo] // the definitions measured last
}

// turnMemo is the measure of the definitions of a turn's set: a later
// turn over the same snapshot and mask sends the same definitions.
type turnMemo struct {
	snap *snapshot
	keep []bool
	size int
	fp   string
}

// observerOf returns the observer of work under ctx, whose run is rc.
// Call it only when mayObserve reports true.
// It returns nil when the observer is an [EnabledObserver] that is not
// enabled for ctx.
func observerOf(ctx context.Context, rc *RunContext) Observer {
	if rc != nil && rc.st != nil && rc.st.obs != nil {
		ro := rc.st.obs
		if ro.en != nil && !enabled(ctx, ro.en) {
			return nil
		}
		return ro.o
	}
	o, _ := ctx.Value(observerKey{}).(Observer)
	if en, ok := o.(EnabledObserver); ok && !enabled(ctx, en) {
		return nil
	}
	return o
}

// enabled is en.Enabled(ctx); false when it panics.
func enabled(ctx context.Context, en EnabledObserver) (on bool) {
	defer func() {
		if v := recover(); v != nil {
			recovered(ctx, "Enabled", v)
			on = false
		}
	}()
	return en.Enabled(ctx)
}

// newRunObserver returns the runObserver of o.
func newRunObserver(o Observer) *runObserver {
	en, _ := o.(EnabledObserver)
	return &runObserver{o: o, en: en}
}

// mayObserve reports whether work under rc may have an observer: inlined
// where work begins, it costs a few loads when there is none.
func mayObserve(rc *RunContext) bool {
	return (rc != nil && rc.st != nil && rc.st.obs != nil) || ctxObservers.Load()
}

// recovered logs a panic of an observer's method.
func recovered(ctx context.Context, method string, v any) {
	logError(ctx, "toolset: an observer panicked; the work goes on unobserved",
		slog.String("method", method), slog.String("panic", bound(safeText(v), 200)))
}

// buildObserved is BuildTools under the observer o.
func buildObserved(ctx context.Context, agent string, entries []Toolset, rc *RunContext, o Observer) (*ToolList, error) {
	info := TurnInfo{Agent: agent, RunID: rc.ID(), ParentRunID: rc.ParentID(), Step: rc.Step()}
	octx, turn := startTurn(ctx, o, info)
	if turn == nil {
		// Unobserved, under the observer's context all the same (that
		// of a dropped span, say). buildTools keeps the run in it.
		return buildTools(octx, agent, entries, rc, nil)
	}
	// The observer is the run's whenever the run has one (see
	// observerOf): comparing o, whose dynamic type may not be comparable,
	// could panic.
	var ro *runObserver
	if s := rc.state(); s != nil {
		ro = s.obs
	}
	tob := newTurnObserved(turn, o, ro != nil)
	if octx != ctx && rc != nil {
		octx = withRun(octx, rc, &tob.tc)
	}
	var hidden runHidden
	ts, err := buildTools(octx, agent, entries, rc, &hidden)
	var end TurnEnd
	if err != nil {
		end.Err, end.ErrorKind = err, errorKind(err)
	} else {
		ts.obs = tob
		end.Tools = ts.Len()
		end.DefinitionBytes, end.Fingerprint = measure(ts, ro)
		end.Unrevealed, end.Spent = hidden.unrevealed, hidden.spent
		if ro != nil {
			end.PreviousFingerprint = ro.swapFingerprint(end.Fingerprint)
		}
	}
	func() {
		defer func() {
			if v := recover(); v != nil {
				recovered(ctx, "EndTurn", v)
			}
		}()
		turn.EndTurn(end)
	}()
	return ts, err
}

func startTurn(ctx context.Context, o Observer, info TurnInfo) (octx context.Context, turn TurnObservation) {
	defer func() {
		if v := recover(); v != nil {
			recovered(ctx, "StartTurn", v)
			octx, turn = ctx, nil
		}
	}()
	octx, turn = o.StartTurn(ctx, info)
	if octx == nil {
		octx = ctx
	}
	return octx, turn
}

// measure returns the size of the definitions of ts and their
// fingerprint, reusing the run's last measure when ts shows the same
// tools of the same snapshot.
func measure(ts *ToolList, ro *runObserver) (int, string) {
	if ro == nil || ts.over != nil {
		return fingerprint(ts)
	}
	if m := ro.memo.Load(); m != nil && m.snap == ts.snap && slices.Equal(m.keep, ts.keep) {
		return m.size, m.fp
	}
	size, fp := fingerprint(ts)
	ro.memo.Store(&turnMemo{snap: ts.snap, keep: slices.Clone(ts.keep), size: size, fp: fp})
	return size, fp
}

// fingerprint returns the size of the definitions of the tools of ts and
// their fingerprint.
func fingerprint(ts *ToolList) (int, string) {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	size := 0
	for t := range ts.All() {
		params, err := t.ParametersJSON()
		if err != nil {
			params = nil // reported when the call is made; still a definition
		}
		field([]byte(t.Name))
		field([]byte(t.Description))
		field(params)
		size += len(t.Name) + len(t.Description) + len(params)
	}
	var sum [sha256.Size]byte
	return size, hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// swapFingerprint records fp as the fingerprint of the run's latest
// observed turn, and returns the previous one, "" for none. A turn that
// sends what the previous one sent stores nothing.
func (ro *runObserver) swapFingerprint(fp string) string {
	if prev := ro.lastFP.Load(); prev != nil && *prev == fp {
		return fp
	}
	p := new(string)
	*p = fp
	if prev := ro.lastFP.Swap(p); prev != nil {
		return *prev
	}
	return ""
}

// turnObserved is the observation of the turn of a ToolList.
type turnObserved struct {
	turn TurnObservation
	// dc is turn when it is a CallDecliner whose answers apply: to the
	// calls of the run's observer, when byRun, and otherwise to those of
	// the context's observer o, which is then of a comparable type.
	dc    CallDecliner
	byRun bool
	o     Observer
	// tc is the storage of the context the turn's toolsets are
	// materialised under, when the observer returned one of its own.
	tc turnContext
}

// newTurnObserved returns the observation turn of a turn that o began,
// the run's observer when byRun.
func newTurnObserved(turn TurnObservation, o Observer, byRun bool) *turnObserved {
	tob := &turnObserved{turn: turn, byRun: byRun}
	if dc, ok := turn.(CallDecliner); ok {
		if byRun {
			tob.dc = dc
		} else if reflect.TypeOf(o).Comparable() {
			tob.dc, tob.o = dc, o
		}
	}
	return tob
}

// declineCall is tob.dc.DeclineCall(ctx), its context ctx for nil;
// declined, under ctx, when it panics.
func (tob *turnObserved) declineCall(ctx context.Context) (dctx context.Context, declined bool) {
	defer func() {
		if v := recover(); v != nil {
			recovered(ctx, "DeclineCall", v)
			dctx, declined = ctx, true
		}
	}()
	dctx, declined = tob.dc.DeclineCall(ctx)
	if dctx == nil {
		dctx = ctx
	}
	return dctx, declined
}

// callObserver is observerOf(ctx, rc) for a call of ts, and the context
// the call goes on under when the observation of the turn that built ts
// declines it (see [CallDecliner]): the observer is then nil. Call it
// only when mayObserve reports true.
func (ts *ToolList) callObserver(ctx context.Context, rc *RunContext) (Observer, context.Context) {
	if ts == nil || ts.obs == nil || ts.obs.dc == nil || rc != ts.rc {
		return observerOf(ctx, rc), ctx
	}
	tob := ts.obs
	if tob.byRun {
		// rc is the run the turn was observed in, whose observer is
		// the turn's: asked first, the turn spares the observer's
		// Enabled.
		if dctx, declined := tob.declineCall(ctx); declined {
			return nil, callContext(ctx, dctx, rc)
		}
		return observerOf(ctx, rc), ctx
	}
	o := observerOf(ctx, rc)
	if o != nil && o == tob.o {
		if dctx, declined := tob.declineCall(ctx); declined {
			return nil, callContext(ctx, dctx, rc)
		}
	}
	return o, ctx
}

// callObs is the observation of one call, carried down the call path.
// A nil *callObs observes nothing.
type callObs struct {
	ctx            context.Context
	co             CallObservation
	failuresLeft   int
	approvalNeeded bool
}

// emit reports e; it does nothing on a nil ob.
func (ob *callObs) emit(e CallEvent) {
	if ob != nil {
		ob.send(e)
	}
}

func (ob *callObs) send(e CallEvent) {
	defer func() {
		if v := recover(); v != nil {
			recovered(ob.ctx, "Event", v)
		}
	}()
	ob.co.Event(e)
}

// counted records that a failure of c was counted in rc.
func (ob *callObs) counted(rc *RunContext, c *toolCore) {
	if ob == nil {
		return
	}
	ob.failuresLeft = rc.failuresLeft(c)
	ob.send(CallEvent{Kind: EventFailureCounted, FailuresLeft: ob.failuresLeft})
}

// startCall begins the observation of a call, and returns the context it
// goes on under; a nil observation when the observer declined the call or
// panicked (the context is then the one given).
func startCall(ctx context.Context, o Observer, info CallInfo) (context.Context, *callObs) {
	octx, co := func() (octx context.Context, co CallObservation) {
		defer func() {
			if v := recover(); v != nil {
				recovered(ctx, "StartCall", v)
				octx, co = ctx, nil
			}
		}()
		return o.StartCall(ctx, info)
	}()
	if octx == nil {
		octx = ctx
	}
	if co == nil {
		return octx, nil
	}
	ob := &callObs{ctx: octx, co: co, failuresLeft: -1}
	if info.Found && info.Tool.core != nil && info.Tool.core.maxFailures > 0 {
		if rc := FromContext(ctx); rc.state() != nil {
			ob.failuresLeft = rc.failuresLeft(info.Tool.core)
		}
	}
	// The tool's progress reports reach the observer, then the caller's
	// own callback.
	outer, _ := octx.Value(progressKey{}).(func(Progress))
	octx = context.WithValue(octx, progressKey{}, func(p Progress) {
		func() {
			defer func() {
				if v := recover(); v != nil {
					recovered(ctx, "Progress", v)
				}
			}()
			co.Progress(p)
		}()
		if outer != nil {
			outer(p)
		}
	})
	return octx, ob
}

// end reports the end of the call.
func (ob *callObs) end(res any, err error) {
	end := CallEnd{Result: res, Err: err, FailuresLeft: ob.failuresLeft}
	if err != nil {
		end.Result, end.ErrorKind = nil, errorKind(err)
	}
	defer func() {
		if v := recover(); v != nil {
			recovered(ob.ctx, "EndCall", v)
		}
	}()
	ob.co.EndCall(end)
}

// callContext returns octx, the context an observer returned for a call
// under ctx of the run rc, as the call's context: as it is when it
// carries rc (one derived from ctx, say), and wrapped to carry it
// otherwise, so that the call runs in its run whatever the observer
// returned.
func callContext(ctx, octx context.Context, rc *RunContext) context.Context {
	if octx == ctx || FromContext(octx) == rc {
		return octx
	}
	return withRun(octx, rc, nil)
}

// executeObserved is ToolList.Execute under the observer o.
func (ts *ToolList) executeObserved(ctx context.Context, call ToolCall, rc *RunContext, o Observer) (any, error) {
	info := CallInfo{Call: call, Agent: ts.Agent(), RunID: rc.ID(), Step: rc.Step()}
	if ts != nil && ts.obs != nil && rc == ts.rc {
		info.Turn = ts.obs.turn
	}
	if i, ok := ts.find(call.Name); ok {
		t := ts.at(i)
		info.Found, info.Tool, info.Path = true, t, ts.snap.path(i)
		info.OriginalName, info.Deferred = t.core.name, t.core.deferred
	}
	octx, ob := startCall(ctx, o, info)
	octx = callContext(ctx, octx, rc)
	if ob == nil {
		return ts.execute(octx, call, rc, nil)
	}
	res, err := ts.execute(octx, call, rc, ob)
	ob.end(res, err)
	return res, err
}

// path is contributor(i, ""), worked out once per tool of the snapshot:
// an observer is told it on every call, which then reads it without a
// lock.
func (s *snapshot) path(i int32) string {
	s.pathOnce.Do(func() { s.paths = make([]atomic.Pointer[string], len(s.tools)) })
	if i < 0 || int(i) >= len(s.paths) {
		return s.contributor(i, "")
	}
	if p := s.paths[i].Load(); p != nil {
		return *p
	}
	p := s.contributor(i, "")
	s.paths[i].Store(&p)
	return p
}

// executeObserved is Tool.Execute under the observer o.
func (t Tool) executeObserved(ctx context.Context, call ToolCall, rc *RunContext, o Observer) (any, error) {
	info := CallInfo{Call: call, RunID: rc.ID(), Step: rc.Step(), Found: true, Tool: t}
	if t.core != nil {
		info.OriginalName, info.Deferred = t.core.name, t.core.deferred
	}
	octx, ob := startCall(ctx, o, info)
	octx = callContext(ctx, octx, rc)
	if ob == nil {
		return t.execute(octx, call, rc, nil)
	}
	res, err := t.execute(octx, call, rc, ob)
	ob.end(res, err)
	return res, err
}

// errorKind names the kind of err, for observers. A method of err that
// panics makes it "_OTHER".
func errorKind(err error) (kind string) {
	defer func() {
		if recover() != nil {
			kind = "_OTHER"
		}
	}()
	var (
		pe  *PanicError
		ab  *AbortError
		to  *TimeoutError
		rl  *RateLimitError
		ar  *ApprovalRequiredError
		ad  *ApprovalDeniedError
		ae  *ArgumentError
		ut  *UnknownToolError
		ua  *UnavailableToolError
		cl  *CallLimitError
		rm  *RunMismatchError
		rcf *RunConflictError
		te  *TurnError
		nc  *NameConflictError
		ee  *EnvError
		me  ModelError
		tle *ToolError
	)
	switch {
	case errors.As(err, &pe):
		return "panic"
	case errors.As(err, &ab):
		return "abort"
	case errors.As(err, &to):
		return "timeout"
	case errors.As(err, &rl):
		return "rate_limited"
	case errors.As(err, &ar):
		return "approval_required"
	case errors.As(err, &ad):
		return "approval_denied"
	case errors.As(err, &ae):
		return "invalid_arguments"
	case errors.As(err, &ut):
		return "unknown_tool"
	case errors.As(err, &ua):
		return "unavailable"
	case errors.As(err, &cl):
		return "call_limit"
	case errors.As(err, &rm):
		return "run_mismatch"
	case errors.As(err, &rcf):
		return "run_conflict"
	case errors.As(err, &te):
		return "turn"
	case errors.As(err, &nc):
		return "name_conflict"
	case errors.As(err, &ee):
		return "missing_env"
	case errors.Is(err, ErrRunEnded):
		return "run_ended"
	case errors.As(err, &me):
		return "model_error"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.As(err, &tle):
		return "tool_error"
	}
	return "_OTHER"
}

// needApproval records that the call needs a human's approval.
func (ob *callObs) needApproval() {
	if ob != nil {
		ob.approvalNeeded = true
	}
}

// approvalDecided reports what the approval policy made of a call that
// needed approval, from the error of checkApproval.
func (ob *callObs) approvalDecided(rc *RunContext, err error) {
	if ob == nil || !ob.approvalNeeded {
		return
	}
	switch err.(type) {
	case nil:
		ob.send(CallEvent{Kind: EventApprovalGranted})
	case *ApprovalDeniedError:
		ob.send(CallEvent{Kind: EventApprovalDenied})
	case *ApprovalRequiredError:
		ob.send(CallEvent{Kind: EventApprovalAsked})
	default:
		if rc == nil { // approvals need a run
			ob.send(CallEvent{Kind: EventApprovalAsked})
		}
	}
}
