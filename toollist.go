package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sync/atomic"
)

// ToolList is the set of tools of one turn, made by [BuildTools]: the ordered
// list the model is sent, a lookup by name, and [ToolList.Execute] to run the
// model's calls. It is immutable and safe for concurrent use. A nil *ToolList
// is an empty set.
//
// A set belongs to the run it was built for: the run that the context given
// to BuildTools carried, or no run if it carried none. Its predicates
// decided what this run may call, so [ToolList.Execute] refuses, with a
// [*RunMismatchError], a call under a context of another run: a context
// carrying another run, none when the set was built under one, or one when
// the set was built without. Any context of its own run will do: that of
// any of its turns ([RunContext.Turn]), or one made with [NewContext].
// Build a set per turn, under the turn's context.
type ToolList struct {
	agent string
	rc    *RunContext // the run the set was built for, or nil
	snap  *snapshot
	keep  []bool         // nil: every tool of snap is in the set
	over  map[int32]Tool // tools shown differently this turn (marked unavailable)
	n     int

	unrevealed *unrevealedTools // deferred tools the run hid, or nil: none

	unknown atomic.Pointer[unknownFacts] // made by the first call of an unknown name
	obs     *turnObserved                // the turn's observation, or nil

	turnBudget *ResultBudget // the run's WithTurnResultBudget, or nil
	spend      *turnSpend    // the turn's count against it, when not nil
}

// at returns the tool at position i as this turn shows it.
func (ts *ToolList) at(i int32) Tool {
	if t, ok := ts.over[i]; ok {
		return t
	}
	return ts.snap.tools[i]
}

func newTools(agent string, s *snapshot, keep []bool) *ToolList {
	n := len(s.tools)
	if keep != nil {
		n = 0
		for _, k := range keep {
			if k {
				n++
			}
		}
	}
	return &ToolList{agent: agent, snap: s, keep: keep, n: n}
}

// Agent returns the agent name the set was built for.
func (ts *ToolList) Agent() string {
	if ts == nil {
		return ""
	}
	return ts.agent
}

// Len returns the number of tools in the set.
func (ts *ToolList) Len() int {
	if ts == nil {
		return 0
	}
	return ts.n
}

// All iterates over the tools in the order the model is sent them.
func (ts *ToolList) All() iter.Seq[Tool] {
	return func(yield func(Tool) bool) {
		if ts == nil {
			return
		}
		for i := range ts.snap.tools {
			if (ts.keep == nil || ts.keep[i]) && !yield(ts.at(int32(i))) {
				return
			}
		}
	}
}

// Tools returns a new slice of the tools, in the order the model is sent
// them.
func (ts *ToolList) Tools() []Tool {
	if ts == nil {
		return nil
	}
	return slices.AppendSeq(make([]Tool, 0, ts.n), ts.All())
}

// Names returns the tool names, in the order the model is sent them.
func (ts *ToolList) Names() []string {
	if ts == nil {
		return nil
	}
	names := make([]string, 0, ts.n)
	for t := range ts.All() {
		names = append(names, t.Name)
	}
	return names
}

// Lookup returns the tool the model may call by name this turn.
func (ts *ToolList) Lookup(name string) (Tool, bool) {
	if i, ok := ts.find(name); ok {
		return ts.at(i), true
	}
	return Tool{}, false
}

// find returns the position of the tool the model may call by name this
// turn.
func (ts *ToolList) find(name string) (int32, bool) {
	if ts == nil {
		return 0, false
	}
	ix := ts.snap.index()
	i, ok := ix.first.find(ts.snap.tools, name)
	if !ok {
		return 0, false
	}
	if ts.keep == nil || ts.keep[i] {
		return i, true
	}
	// A hidden tool may share its name with a visible one.
	if g, dup := ix.dupOf[name]; dup {
		for _, j := range ix.dups[g] {
			if ts.keep[j] {
				return j, true
			}
		}
	}
	return 0, false
}

// ToolCall is one tool call from the model.
type ToolCall struct {
	// ID is the provider's call ID; it may be empty.
	ID string
	// Name is the tool name the model called.
	Name string
	// Args is the arguments object, as JSON.
	Args json.RawMessage
}

// Execute runs a tool call from the model. A call under the context of a
// run that has ended fails with [ErrRunEnded], and one under the context of
// another run than the set's is refused with a [*RunMismatchError]. A name
// that is not in this turn's set, even one a filter hid this turn, is
// refused with an [*UnknownToolError] suggesting the names the model
// likely meant and listing the available ones, and a
// deferred tool this run has not revealed, or one whose failure budget is
// spent, with an [*UnavailableToolError]. The call then goes through the
// call path in this order: argument validation, approval, cache lookup (a
// hit ends the call), rate limit, then the middleware and the handler,
// both under the tool's timeout, then cache store and the run's failure
// accounting. An [*ArgumentError] lists every problem with the arguments,
// and a panic of the handler or of any callback becomes a [*PanicError].
// Use [ErrorText] to tell the errors the model should see from those that
// should stop the run.
//
// The call ID identifies the call to approvals ([WithApprovalRequired])
// and middleware: a call that needs approval stops the run with an
// [*ApprovalRequiredError] until a decision for it is recorded, and one
// without an ID cannot be approved at all.
//
// The handler runs on the caller's goroutine. One that calls
// [runtime.Goexit] (as testing.T.FailNow does) ends that goroutine, as
// Goexit does; run calls on goroutines of your own, as the provider
// adapters do, to have it reported as a [*PanicError] with [ErrGoexit].
func (ts *ToolList) Execute(ctx context.Context, call ToolCall) (any, error) {
	rc := runOf(ctx)
	if mayObserve(rc) {
		o, dctx := ts.callObserver(ctx, rc)
		if o != nil {
			return ts.executeObserved(ctx, call, rc, o)
		}
		return ts.execute(dctx, call, rc, nil)
	}
	return ts.execute(ctx, call, rc, nil)
}

// execute is Execute for the run rc that ctx carries, observed by ob.
func (ts *ToolList) execute(ctx context.Context, call ToolCall, rc *RunContext, ob *callObs) (any, error) {
	if ts != nil && ts.spend != nil {
		res, err := ts.executeCall(ctx, call, rc, ob)
		return ts.spend.budgeted(ctx, rc, ts.turnBudget, res, err)
	}
	return ts.executeCall(ctx, call, rc, ob)
}

// executeCall is execute before the turn's result budget.
func (ts *ToolList) executeCall(ctx context.Context, call ToolCall, rc *RunContext, ob *callObs) (any, error) {
	if err := runUsable(call.Name, rc); err != nil {
		return nil, err
	}
	if ts != nil && !sameRun(rc, ts.rc) {
		return nil, newRunMismatch(call.Name, ts.rc, rc)
	}
	t, ok := ts.Lookup(call.Name)
	if !ok {
		return nil, ts.unknownTool(call.Name)
	}
	if t.core != nil && (t.core.limited(rc) || rc.journaling()) {
		return t.executeRecorded(ctx, call, rc, ob)
	}
	res, err := t.executeIn(ctx, call, rc, ob)
	if rc.hasStore() {
		return rc.saveAfterCall(ctx, call.Name, res, err)
	}
	return res, err
}

// sameRun reports whether a and b are the same run, or both none.
func sameRun(a, b *RunContext) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.st == b.st
}

// RunMismatchError reports a call of a turn's [ToolList] under the context of
// a run other than the one the set was built for. It should stop the run:
// the set's predicates decided what another run may call.
type RunMismatchError struct {
	// Tool is the name called.
	Tool string
	// BuiltFor is the ID of the run the set was built for, and
	// BuiltWithoutRun reports a set built under a context carrying no run.
	BuiltFor        string
	BuiltWithoutRun bool
	// CalledIn is the ID of the run of the call's context, and
	// CalledWithoutRun reports a call under a context carrying no run.
	CalledIn         string
	CalledWithoutRun bool
}

func newRunMismatch(tool string, built, called *RunContext) *RunMismatchError {
	e := &RunMismatchError{Tool: tool, BuiltWithoutRun: built == nil, CalledWithoutRun: called == nil}
	if built != nil {
		e.BuiltFor = built.ID()
	}
	if called != nil {
		e.CalledIn = called.ID()
	}
	return e
}

// Error implements error.
func (e *RunMismatchError) Error() string {
	return fmt.Sprintf("toolset: tool %q not called: the tool set was built for %s and called in %s; build a turn's tools under the context its calls run in",
		boundName(e.Tool), describeRun(e.BuiltFor, e.BuiltWithoutRun), describeRun(e.CalledIn, e.CalledWithoutRun))
}

func describeRun(id string, none bool) string {
	switch {
	case none:
		return "no run"
	case id == "":
		return "a run without an ID"
	}
	return fmt.Sprintf("run %q", boundName(id))
}
