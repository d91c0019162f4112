package toolset

import (
	"sync"
	"sync/atomic"
)

// This file holds the machinery that makes a turn cheap: the memoisation
// layer.
//
// Every toolset of this package materialises a view for a turn: an
// immutable snapshot of tools plus, when something hides tools this turn, a
// visibility mask ([]bool). The invariant everything rests on:
//
//	Hiding a tool makes a mask, never a new slice, and a snapshot is never
//	modified once published; so a snapshot's identity (its pointer) stands
//	for its contents, and is the memo key of every layer above it.
//
// Predicates (Filtered, WithEnabled) only make masks, and a Dynamic only
// picks a view. A new snapshot is made where tool definitions or their
// order change: once per input snapshot for Prefixed, Renamed, Guarded and
// Wrapper copies; for the result of a Prepared whenever it differs from its
// recent results (a Prepared that returns the same list turn after turn
// reuses its snapshot); and each turn for the tools a WithPrepare function
// edits, so the layers above those miss their memo in every turn. A turn
// over unchanging toolsets thus allocates no renamed tools and builds no
// name index; what it recomputes is only what the run context can change:
// the verdicts of predicates, and the masks. In-memory toolsets are
// materialised on the caller's goroutine, and the masks and lists a turn
// drops come from pooled scratch memory (scratch), so a steady turn
// allocates a few times however many toolsets it has.
//
// The memo sites, each keyed by identity (of a snapshot, a tool core, a
// schema or a slice):
//
//   - a Function's snapshot, built once by NewFunction (Function.snap);
//   - a Tool used as a toolset of one: its snapshot, on its core
//     (toolCore.solo, Tool.view);
//   - a caller's toolset: the last list it returned that began with a given
//     tool, on that tool's core (toolCore.fresh, reuseSnapshot);
//   - Prefixed and Renamed copies, per input snapshot (Prefixed.memo,
//     Renamed.memo, derive), with a Renamed's clash facts beside them
//     (and, for an input a Prefixed saw once, under a Filtered, only the
//     names it wrote);
//   - the join of the parts of a Combined or of BuildTools's entries, on
//     the first part's snapshot, keyed by the join's kind and every part's
//     snapshot, label and standalone flag (snapshot.joins, join), so
//     unchanged subtrees join for free;
//   - a snapshot's name index: first positions (in a pointer-free
//     nameTable), duplicates and invalid names (snapshot.idx, index), which
//     name checks and lookups read;
//   - a snapshot's positions of tools with environment, deferral or budget
//     policies (snapshot.policy, policies), taken from the snapshot a copy
//     copies and from a join's parts, so only a Function (when it is made)
//     and a caller's toolset read their tools' cores;
//   - a snapshot's positions of tools with enabled or prepare functions
//     (snapshot.turn, turnPolicies);
//   - a Guarded's guarded tools, per input snapshot (Guarded.memo), and
//     each one per name while the tool it guards keeps its definition
//     (Guarded.made);
//   - a Wrapper's middleware copies, per input snapshot and middleware
//     slice (snapshot.wrapped, withMiddleware), and each layer's composed
//     handler per tool core (layer.handlers); a tool's own middleware chain
//     is composed once, by WithMiddleware (toolCore.chain);
//   - validators: the tool's own schema's, compiled once (toolCore.val), and
//     the last few for schemas a prepare function edited, keyed by schema
//     pointer (toolCore.edited); each compiles its full validator lazily
//     (validator.once);
//   - the JSON of a tool's own parameter schema (toolCore.schemaJSON,
//     Tool.ParametersJSON), whose bytes' identity the provider adapters key
//     their converted schemas on;
//   - a Prepared's recent results (Prepared.memo), compared tool by tool;
//   - a tool search's BM25 index, per snapshot searched (searchState.memo).
//
// A fresh Combined's first turn takes its children's copies from one
// block (toolBlock), end to end, so that its join shares them instead of
// copying every tool again.
//
// A first turn pays for what it shows: a Filtered over a Prefixed, on
// the first sight of the Prefixed's input, and a Filtered over a
// Function, on the first turn of a fresh Combined, run the predicate over
// each tool as its copy would be and copy only the tools it keeps, into a
// snapshot of that turn alone (snapshot.perTurn, snapshot.pick), whose
// joins are not memoised. The prefixed names of all the tools are still
// written, once: the next sight of the input makes the copies later turns
// reuse from them (derived.names), and the turn after that is steady.
//
// The rest of the engine is in rooms of its own: what a snapshot knows of
// its tools (nameindex.go), the view (view.go), a turn's memory
// (scratch.go), the table of toolset types (dispatch.go), the walk
// (materialize.go) and its explained form (explainer.go), joins (join.go)
// and the naming of places (path.go).
//
// memoSlots keeps a few entries per site, so a toolset shared by several
// agents, or a Dynamic that alternates, keeps each input warm. Per-turn and
// per-run state never lives in a snapshot: snapshots are shared by all the
// runs that use a toolset.

// snapshot is an immutable list of tools with a lazily built name index.
type snapshot struct {
	tools []Tool

	// Provenance, used only to name contributors in error messages.
	from *snapshot // the snapshot this one renames, position for position
	// pick, when not nil, says that tools are copies of some of from's
	// tools only: tool i copies from.tools[pick[i]] (see
	// Prefixed.pickFiltered). Positions increase.
	pick []int32
	segs []segment // for a join: where each range of tools came from
	kind joinKind  // for a join: how to name its parts
	// ownPolicies says that the tools' policies are not from's: they
	// are copies with policies of their own (Guarded).
	ownPolicies bool

	// Where tools lies, when it was taken from a block (see toolBlock).
	block *toolBlock
	off   int

	// names is the length of the tools' names put together, when it was
	// known as the snapshot was made, or 0 (see nameBytes).
	names int

	// perTurn says that the snapshot holds only what one turn showed (the
	// tools a predicate kept on the first sight of a toolset, see
	// Prefixed.pickFiltered), or is made from one that does: no later turn
	// can reuse it, so a join of it is not memoised, and a fresh Combined
	// stays fresh until a turn of it makes snapshots later turns reuse.
	perTurn bool

	idxOnce sync.Once
	idx     nameIndex

	turnOnce sync.Once
	turn     []int32 // tools with enabled or prepare functions not yet applied

	policyOnce sync.Once
	policy     *policyFacts

	histOnce sync.Once
	hist     *nameHistory // names before prefixes and renames, for unknown calls

	pathOnce sync.Once
	paths    []atomic.Pointer[string] // contributor(i, "") of the tools observed calls ran

	joins   memoSlots[joined]  // joins whose first part is this snapshot
	wrapped memoSlots[wrapped] // middleware copies made by Wrappers
}

func newSnapshot(tools []Tool) *snapshot { return &snapshot{tools: tools} }

// nameBytes returns the length of the tools' names put together.
func (s *snapshot) nameBytes() int {
	if s.names > 0 {
		return s.names
	}
	n := 0
	for i := range s.tools {
		n += len(s.tools[i].Name)
	}
	return n
}

// emptySnapshot hosts the memo of joins without parts.
var emptySnapshot = newSnapshot(nil)

// reuseSnapshot returns a snapshot of tools that a toolset of the caller's
// returned from GetTools. When the list is the same as the last one that
// began with the same tool, the earlier snapshot is returned, so the
// memoised work built on it (prefixed copies, joins, name indexes) is reused
// turn after turn; comparing costs no allocation. The last list is kept on
// the first tool's core.
func reuseSnapshot(tools []Tool) *snapshot {
	if len(tools) == 0 {
		return emptySnapshot
	}
	c := tools[0].core
	if c == nil {
		return newSnapshot(tools)
	}
	if s := c.fresh.Load(); s != nil && sameTools(s.tools, tools) {
		return s
	}
	s := newSnapshot(tools)
	c.fresh.Store(s)
	return s
}

func sameTools(a, b []Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameToolValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

// memoSlots is a small, lock-free memo: a handful of recent entries,
// replaced round-robin. Toolsets shared by several agents, or Dynamic
// toolsets that alternate, keep a few inputs warm at once.
type memoSlots[T any] struct {
	slots [4]atomic.Pointer[T]
	next  atomic.Uint32
}

func (m *memoSlots[T]) find(match func(*T) bool) *T {
	for i := range m.slots {
		if e := m.slots[i].Load(); e != nil && match(e) {
			return e
		}
	}
	return nil
}

func (m *memoSlots[T]) store(e *T) {
	m.slots[m.next.Add(1)%uint32(len(m.slots))].Store(e)
}

// replace puts e in the place of old, or stores it as a new entry when
// old is no longer kept.
func (m *memoSlots[T]) replace(old, e *T) {
	for i := range m.slots {
		if m.slots[i].CompareAndSwap(old, e) {
			return
		}
	}
	m.store(e)
}

// derived memoises a snapshot computed from one input snapshot, with
// whatever static facts the computation found (aux).
type derived struct {
	in, out *snapshot
	aux     any
	// names, for a Prefixed's entry of an input seen once (out nil): the
	// prefixed names of in's tools, end to end, written on that turn
	// (see Prefixed.pickFiltered) for the copies to take.
	names []byte
}

// derive returns the memoised derivation of in, computing it with build on
// a miss.
func derive(m *memoSlots[derived], in *snapshot, build func(in *snapshot) *derived) *derived {
	if d := m.find(func(d *derived) bool { return d.in == in && d.out != nil }); d != nil {
		return d
	}
	d := build(in)
	d.in = in
	m.store(d)
	return d
}
