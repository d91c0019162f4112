package toolset

import (
	"context"
	"fmt"
)

// BuildTools turns an agent's toolsets into the tools the model is sent this
// turn. Call it once per turn with the turn's context, from
// [RunContext.Turn], which carries the run that predicates read. Under a
// context that carries a run, BuildTools fails with a [*TurnError] when the
// context carries no turn ([NewContext] only), when its turn already built
// its tools, or when a later turn of the run has begun; with the run's
// [*RunConflictError] when the run is unusable; and with [ErrRunEnded]
// once the run has ended. A context that carries no run builds a set of
// no run: tools that need one (approvals, tool search, run-scoped caches,
// failure budgets) then work without it, or refuse, as each says.
//
// Entries are toolsets; a bare [Tool] (or *Tool) is a standalone tool. A
// name shown this turn by two toolsets, or by a toolset and a standalone
// tool, is a conflict; two standalone tools with one name are not: the later
// replaces the earlier, at the earlier one's position. Every conflict and
// every invalid name of the turn (names must match ^[a-zA-Z0-9_-]{1,64}$) is
// reported in one [*NameConflictError] that names every contributor. The
// errors of toolsets that fail are joined instead.
//
// Entries are materialised like the children of a [Combined]: this
// package's in-memory toolsets on the caller's goroutine, the others
// concurrently. Work that does not depend on the run context is memoised
// across turns, so a turn over unchanged toolsets costs little more than
// running their predicates, and allocates a few times whatever their
// number.
//
// The set belongs to the run of ctx (see [ToolList]). A ctx that is done
// makes BuildTools return its error, even when no toolset would notice. A
// panic of any callback run for the turn (a predicate, a prepare or
// Dynamic function, a toolset's own GetTools or Label) fails the turn
// with a [*PanicError]; so does a callback that calls [runtime.Goexit]
// on one of the goroutines BuildTools starts. (A callback of an in-memory
// toolset runs on the caller's goroutine, where Goexit ends that
// goroutine, as it does anywhere.)
func BuildTools(ctx context.Context, agent string, entries ...Toolset) (*ToolList, error) {
	rc := runOf(ctx)
	if mayObserve(rc) {
		if o := observerOf(ctx, rc); o != nil {
			return buildObserved(ctx, agent, entries, rc, o)
		}
	}
	return buildTools(ctx, agent, entries, rc, nil)
}

// buildTools is BuildTools for the run rc that ctx carries; it counts the
// tools the run hid in hidden, if not nil, for an observer.
func buildTools(ctx context.Context, agent string, entries []Toolset, rc *RunContext, hidden *runHidden) (*ToolList, error) {
	if err := rc.checkTurn(); err != nil {
		if err == ErrRunEnded {
			return nil, fmt.Errorf("toolset: agent %q: tools not built in run %q: %w", agent, boundName(rc.ID()), err)
		}
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toolset: agent %q: tools not built: %w", agent, err)
	}
	if _, ok := ctx.(*turnContext); !ok && rc != nil {
		// A context derived from the turn's: wrap it once, so that
		// callbacks run inline still read the run without a walk.
		ctx = withRun(ctx, rc, nil)
	}
	sc := getScratch()
	s, keep, err := buildSnapshot(ctx, agent, entries, sc)
	sc.release()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toolset: agent %q: tools not built: %w", agent, err)
	}
	rc.bindRestored(s.tools, keep)
	built := keep
	keep, over, h := forRun(rc, s, keep)
	if hidden != nil {
		*hidden = h
	}
	if err := checkNames(s, keep, namedRoot{}, agent, true); err != nil {
		return nil, err
	}
	var missing []MissingEnv
	for _, i := range s.index().env {
		if keep == nil || keep[i] {
			missing = missingEnv(missing, s.tools[i])
		}
	}
	if len(missing) > 0 {
		return nil, &EnvError{Missing: missing}
	}
	if st := rc.state(); st != nil && st.durable != nil {
		if err := st.save(ctx, true); err != nil {
			return nil, err
		}
	}
	if err := rc.markBuilt(); err != nil {
		return nil, err
	}
	ts := newTools(agent, s, keep)
	if h.unrevealed > 0 {
		ts.unrevealed = &unrevealedTools{built: built}
	}
	ts.over = over
	ts.rc = rc
	if sp := rc.turnSpend(); sp != nil {
		ts.turnBudget, ts.spend = rc.st.turnBudget, sp
	}
	return ts, nil
}

// buildSnapshot materialises the entries of a turn and joins them.
// The turn's mask is made; everything else is taken from sc.
func buildSnapshot(ctx context.Context, agent string, entries []Toolset, sc *scratch) (*snapshot, []bool, error) {
	inline := sc.keep(len(entries))
	parts := sc.parts(len(entries))
	for i, e := range entries {
		if err := describeEntry(agent, i, e, &parts[i]); err != nil {
			return nil, nil, err
		}
		inline[i] = isInline(e)
	}
	views, err := materializeAll(ctx, entries, inline, 0, sc, func(i int, err error) error {
		return &entryError{index: i, label: parts[i].label, elem: parts[i].elem, err: err}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("toolset: agent %q: %w", agent, err)
	}
	for i, v := range views {
		parts[i].snap = v.snap
		if parts[i].standalone && len(v.snap.tools) != 1 {
			parts[i].standalone = false
		}
	}
	out := join(joinEntries, parts)
	return out, joinKeep(out, views, nil), nil
}

// forRun applies what the run itself decides to the turn's set: deferred
// tools stay hidden until a search of this run revealed them, and tools
// whose failure budget is spent are dropped, or marked unavailable in over.
// It counts both in hidden.
func forRun(rc *RunContext, s *snapshot, keep []bool) (_ []bool, _ map[int32]Tool, hidden runHidden) {
	ix := s.index()
	visible := func(i int32) bool { return keep == nil || keep[i] }
	owned := false
	hide := func(i int32) {
		if !owned {
			keep, owned = cloneKeep(keep, len(s.tools)), true
		}
		keep[i] = false
	}
	for _, i := range ix.deferred {
		if visible(i) && !rc.isRevealed(s.tools[i].core) {
			hide(i)
			hidden.unrevealed++
		}
	}
	var over map[int32]Tool
	if len(ix.budgets) > 0 && rc.hasFailures() {
		for _, i := range ix.budgets {
			t := s.tools[i]
			if !visible(i) || !rc.budgetSpent(t.core) {
				continue
			}
			hidden.spent++
			if !rc.stableList() {
				hide(i)
				continue
			}
			if over == nil {
				over = make(map[int32]Tool)
			}
			t.Description = unavailablePrefix + t.Description
			over[i] = t
		}
	}
	return keep, over, hidden
}

// runHidden counts the tools forRun hid.
type runHidden struct{ unrevealed, spent int }

// getTools is the GetTools of every toolset of this package: it
// materialises ts as the root of a turn, checks that no name is shown twice,
// and returns a copy of its visible tools. Whether names suit a model is
// checked by BuildTools, since a later Renamed may still fix them.
func getTools(ctx context.Context, ts Toolset) ([]Tool, error) {
	sc := getScratch()
	defer sc.release()
	v, err := materialize(ctx, ts, sc)
	if err != nil {
		return nil, err
	}
	if err := checkNames(v.snap, v.keep, rootOf(ts), "", false); err != nil {
		return nil, err
	}
	return v.tools(), nil
}

// describeEntry fills in what a turn's entry i says of itself: whether it
// is a standalone tool, and its label. A nil entry, or a Label that
// fails, is an error naming the agent and the entry.
func describeEntry(agent string, i int, e Toolset, p *part) error {
	if what := nilToolset(e); what != "" {
		return fmt.Errorf("toolset: agent %q: %w", agent, badEntry(e, i, what, nil))
	}
	p.standalone = kindOf(e).standalone
	label, err := labelOf(e)
	if err != nil {
		return fmt.Errorf("toolset: agent %q: %w", agent, badEntry(e, i, "", err))
	}
	p.label, p.elem = label, elemOf(e, label)
	return nil
}
