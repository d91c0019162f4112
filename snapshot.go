package toolset

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
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
// order change: once per input snapshot for Prefixed, Renamed and Wrapper
// copies; for the result of a Prepared whenever it differs from its
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
//     Renamed.memo, derive), with a Renamed's clash facts beside them;
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
// memoSlots keeps a few entries per site, so a toolset shared by several
// agents, or a Dynamic that alternates, keeps each input warm. Per-turn and
// per-run state never lives in a snapshot: snapshots are shared by all the
// runs that use a toolset.

// snapshot is an immutable list of tools with a lazily built name index.
type snapshot struct {
	tools []Tool

	// Provenance, used only to name contributors in error messages.
	from *snapshot // the snapshot this one renames, position for position
	segs []segment // for a join: where each range of tools came from
	kind joinKind  // for a join: how to name its parts

	// Where tools lies, when it was taken from a block (see toolBlock).
	block *toolBlock
	off   int

	idxOnce sync.Once
	idx     nameIndex

	turnOnce sync.Once
	turn     []int32 // tools with enabled or prepare functions not yet applied

	policyOnce sync.Once
	policy     *policyFacts

	histOnce sync.Once
	hist     *nameHistory // names before prefixes and renames, for unknown calls

	pathMu sync.Mutex
	paths  map[int32]string // contributor(i, "") of the tools observed calls ran

	joins   memoSlots[joined]  // joins whose first part is this snapshot
	wrapped memoSlots[wrapped] // middleware copies made by Wrappers
}

func newSnapshot(tools []Tool) *snapshot { return &snapshot{tools: tools} }

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

// nameIndex maps names to positions, and records the positions that need
// attention in a turn: names that occur more than once, invalid names, and
// tools with per-turn or per-run policies. For most snapshots all but the
// table are empty, and a turn skips them at no cost.
type nameIndex struct {
	first    nameTable
	dups     [][]int32 // positions sharing a name, in order of first occurrence
	dupOf    map[string]int
	invalid  []int32
	env      []int32 // required environment variables
	deferred []int32 // deferred until a search reveals them
	budgets  []int32 // tools with a failure budget
}

// index returns the snapshot's name index, building it on first use.
func (s *snapshot) index() *nameIndex {
	s.idxOnce.Do(func() {
		ix := &s.idx
		p := s.policies()
		ix.env, ix.deferred, ix.budgets = p.env, p.deferred, p.budgets
		ix.first = newNameTable(len(s.tools))
		for i := range s.tools {
			name := s.tools[i].Name
			if !validName(name) {
				ix.invalid = append(ix.invalid, int32(i))
			}
			j, seen := ix.first.insert(s.tools, int32(i))
			if !seen {
				continue
			}
			if ix.dupOf == nil {
				ix.dupOf = make(map[string]int)
			}
			g, ok := ix.dupOf[name]
			if !ok {
				g = len(ix.dups)
				ix.dupOf[name] = g
				ix.dups = append(ix.dups, []int32{j})
			}
			ix.dups[g] = append(ix.dups[g], int32(i))
		}
	})
	return &s.idx
}

// policyFacts lists the positions of a snapshot's tools that have
// environment, deferral or failure-budget policies, for the name index.
type policyFacts struct {
	env      []int32 // required environment variables
	deferred []int32 // deferred until a search reveals them
	budgets  []int32 // tools with a failure budget
}

var noPolicies = &policyFacts{}

// policies returns the snapshot's policy facts. Policies belong to a
// tool's core, which copies share, so the facts of a copy are those of
// the snapshot it copies, and those of a join are its parts', shifted:
// only the snapshots of Functions and of toolsets of the caller's read
// the cores of their tools. NewFunction reads them at once, so that a
// turn over fresh copies of it does not.
func (s *snapshot) policies() *policyFacts {
	s.policyOnce.Do(func() { s.policy = s.findPolicies() })
	return s.policy
}

func (s *snapshot) findPolicies() *policyFacts {
	switch {
	case s.from != nil && len(s.from.tools) == len(s.tools):
		return s.from.policies()
	case s.segs != nil:
		var out policyFacts
		for _, seg := range s.segs {
			if seg.start == seg.end {
				continue
			}
			p := seg.sub.policies()
			out.env = appendShifted(out.env, p.env, seg.start)
			out.deferred = appendShifted(out.deferred, p.deferred, seg.start)
			out.budgets = appendShifted(out.budgets, p.budgets, seg.start)
		}
		if out.env == nil && out.deferred == nil && out.budgets == nil {
			return noPolicies
		}
		return &out
	}
	var out policyFacts
	for i := range s.tools {
		c := s.tools[i].core
		if c == nil {
			continue
		}
		if len(c.env) > 0 {
			out.env = append(out.env, int32(i))
		}
		if c.deferred {
			out.deferred = append(out.deferred, int32(i))
		}
		if c.maxFailures > 0 {
			out.budgets = append(out.budgets, int32(i))
		}
	}
	if out.env == nil && out.deferred == nil && out.budgets == nil {
		return noPolicies
	}
	return &out
}

func appendShifted(dst, src []int32, by int32) []int32 {
	for _, i := range src {
		dst = append(dst, i+by)
	}
	return dst
}

// nameTable maps each name of a snapshot's tools to its first position.
// It is an open-addressing table of positions that holds no pointers:
// the GC never scans it, no key is copied into it, and a name is compared
// with the tool's own. Building one costs a hash and a probe a tool, a
// third of what a map[string]int32 costs. The hash is keyed with a seed
// made at start-up, so names chosen by a remote toolset cannot be made to
// collide.
type nameTable struct {
	slots []nameSlot // a power of two in length, at most half full
}

type nameSlot struct {
	tag uint32 // the high bits of the name's hash, made odd; 0 when empty
	pos int32
}

var nameSeed = maphash.MakeSeed()

func newNameTable(n int) nameTable {
	size := 8
	for size < 2*n {
		size <<= 1
	}
	return nameTable{slots: make([]nameSlot, size)}
}

// insert records position i of tools under its name, unless an earlier
// position has that name: then it returns that one, and true.
func (t *nameTable) insert(tools []Tool, i int32) (int32, bool) {
	s, tag, found := t.probe(tools, tools[i].Name)
	if found {
		return s.pos, true
	}
	*s = nameSlot{tag: tag, pos: i}
	return 0, false
}

// find returns the first position of tools that has name.
func (t *nameTable) find(tools []Tool, name string) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	s, _, found := t.probe(tools, name)
	return s.pos, found
}

// probe returns the slot that holds name (found), or else the empty slot
// where it would go, and name's tag. The table is at most half full, so
// an empty slot always ends the search.
func (t *nameTable) probe(tools []Tool, name string) (s *nameSlot, tag uint32, found bool) {
	h := maphash.String(nameSeed, name)
	tag, mask := uint32(h>>32)|1, uint64(len(t.slots)-1)
	for j := h & mask; ; j = (j + 1) & mask {
		s = &t.slots[j]
		switch {
		case s.tag == 0:
			return s, tag, false
		case s.tag == tag && tools[s.pos].Name == name:
			return s, tag, true
		}
	}
}

// turnPolicies returns the positions of tools whose enabled or prepare
// function has not run this turn. It scans the tools once, without the name
// index, which a fresh snapshot may never need.
func (s *snapshot) turnPolicies() []int32 {
	s.turnOnce.Do(func() {
		for i, t := range s.tools {
			if t.core.hasTurnPolicy() && !t.prepared {
				s.turn = append(s.turn, int32(i))
			}
		}
	})
	return s.turn
}

// view is what a toolset yields for one turn: a snapshot, and which of its
// tools are visible.
type view struct {
	snap *snapshot
	keep []bool // nil: every tool is visible; otherwise len(keep) == len(snap.tools)
}

func (v view) visible(i int) bool { return v.keep == nil || v.keep[i] }

// tools returns a new slice of the visible tools.
func (v view) tools() []Tool {
	if v.snap == nil {
		return nil
	}
	if v.keep == nil {
		return append([]Tool(nil), v.snap.tools...)
	}
	out := make([]Tool, 0, len(v.snap.tools))
	for i, t := range v.snap.tools {
		if v.keep[i] {
			out = append(out, t)
		}
	}
	return out
}

// scratch is the memory of one turn for what it makes and drops: the
// masks of the views of subtrees, which their parents copy into their own,
// and the lists of views and parts of joins. A turn takes one from
// scratchPool and gives it back when done, so that a steady turn
// allocates what it returns and little else, however many toolsets it
// has. What outlives the turn (a ToolList's mask) is never taken from it.
//
// Memory is handed out by bumping through chunks; a chunk too small is
// replaced by one that holds the whole of the turn, so the next turn fits
// in one. A nil *scratch makes everything with make.
type scratch struct {
	boolBuf chunk[bool]
	viewBuf chunk[view]
	partBuf chunk[part]

	// The block that copies of tools are taken from while a fresh
	// Combined materialises its children (toolHint > 0), and how much of
	// it is taken. Unlike the rest, a block outlives the turn: the
	// snapshots made from it own it.
	block    *toolBlock
	used     int
	toolHint int

	// The scratch of the goroutines a large turn was split across
	// (materializeSplit), released with this one; and whether this is
	// one of them, which splits no further.
	workers []*scratch
	worker  bool
}

// toolBlock is memory for the copies of tools (prefixed or renamed) that
// the first turn of a fresh Combined makes: they are laid end to end in
// one block, so that the join of the children shares the block instead
// of copying every tool again. all is never resliced or written once a
// snapshot made from it is published.
type toolBlock struct{ all []Tool }

// newTools returns n zeroed tools for a new snapshot, and the block and
// offset they lie at: from the turn's block while a fresh Combined has
// reserved one (see Combined.view), or newly made (block nil).
func (sc *scratch) newTools(n int) ([]Tool, *toolBlock, int) {
	if sc == nil || sc.toolHint == 0 || n == 0 {
		return make([]Tool, n), nil, 0
	}
	if sc.block == nil || len(sc.block.all)-sc.used < n {
		sc.block, sc.used = &toolBlock{all: make([]Tool, max(sc.toolHint, n))}, 0
	}
	off := sc.used
	sc.used += n
	return sc.block.all[off:sc.used:sc.used], sc.block, off
}

// reserveTools makes the copies of tools made until the returned
// function is called come from one block of about n tools, when no
// reservation is in force already.
func (sc *scratch) reserveTools(n int) (done func()) {
	if sc == nil || sc.toolHint != 0 || n < minBlock {
		return func() {}
	}
	sc.toolHint = n
	return func() { sc.toolHint, sc.block, sc.used = 0, nil, 0 }
}

// minBlock is the fewest tools worth a block of their own.
const minBlock = 64

// contiguous reports whether the tools of parts lie end to end in one
// block, in order, and returns that range when they do.
func contiguous(parts []part) (tools []Tool, b *toolBlock, off int, ok bool) {
	end := -1
	for _, p := range parts {
		s := p.snap
		if len(s.tools) == 0 {
			continue
		}
		switch {
		case s.block == nil || p.standalone:
			return nil, nil, 0, false
		case b == nil:
			b, off, end = s.block, s.off, s.off
		case s.block != b || s.off != end:
			return nil, nil, 0, false
		}
		end += len(s.tools)
	}
	if b == nil {
		return nil, nil, 0, false
	}
	return b.all[off:end:end], b, off, true
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

// release gives sc back to the pool. Nothing taken from sc may be used
// after. A reservation a Goexit unwound past ends here: the block belongs
// to the snapshots made from it, not to the next turn.
func (sc *scratch) release() {
	sc.block, sc.used, sc.toolHint, sc.worker = nil, 0, 0, false
	for _, w := range sc.workers {
		w.worker = false
		w.release()
	}
	clear(sc.workers)
	sc.workers = sc.workers[:0]
	sc.boolBuf.reset()
	sc.viewBuf.reset()
	sc.partBuf.reset()
	scratchPool.Put(sc)
}

// keep returns a mask of n hidden tools.
func (sc *scratch) keep(n int) []bool {
	if sc == nil {
		return make([]bool, n)
	}
	return sc.boolBuf.take(n)
}

// views returns n empty views.
func (sc *scratch) views(n int) []view {
	if sc == nil {
		return make([]view, n)
	}
	return sc.viewBuf.take(n)
}

// parts returns n empty parts.
func (sc *scratch) parts(n int) []part {
	if sc == nil {
		return make([]part, n)
	}
	return sc.partBuf.take(n)
}

// chunk hands out zeroed slices by bumping through a buffer.
type chunk[T any] struct {
	buf  []T
	used int // elements handed out this turn, in every buffer
}

// take returns n zeroed elements from the end of the buffer. When they do
// not fit, it moves to a new buffer of twice what the turn has used, so
// that the next turn fits in one; the elements handed out before stay
// where they are.
func (c *chunk[T]) take(n int) []T {
	b := c.buf
	if cap(b)-len(b) < n {
		b = make([]T, 0, max(2*(c.used+n), 64))
	}
	out := b[len(b) : len(b)+n : len(b)+n]
	clear(out)
	c.buf, c.used = b[:len(b)+n], c.used+n
	return out
}

// reset makes the whole buffer free again, dropping what its elements
// point to so that the pool keeps no snapshot alive.
func (c *chunk[T]) reset() {
	clear(c.buf)
	c.buf, c.used = c.buf[:0], 0
}

// materialize returns the view of ts for this turn. The toolsets of this
// package are recognised by their exact type, never through embedding, so a
// user type that embeds one and overrides GetTools keeps its override.
//
// sc, if not nil, is the turn's scratch memory, from which the masks and
// lists that the turn drops are taken. It is used by one goroutine at a
// time: what is materialised on a goroutine of its own is given none.
func materialize(ctx context.Context, ts Toolset, sc *scratch) (view, error) {
	var v view
	var err error
	switch t := ts.(type) {
	case nil:
		return view{}, errors.New("toolset: nil Toolset")
	case *Function:
		v, err = t.view(ctx, sc)
	case *Prefixed:
		v, err = t.view(ctx, sc)
	case *Renamed:
		v, err = t.view(ctx, sc)
	case *Filtered:
		v, err = t.view(ctx, sc)
	case *Combined:
		v, err = t.view(ctx, sc)
	case *Prepared:
		v, err = t.view(ctx, sc)
	case *Dynamic:
		v, err = t.view(ctx, sc)
	case Tool:
		v, err = t.view(ctx, sc)
	case *Tool:
		if t == nil {
			return view{}, errors.New("toolset: nil *Tool")
		}
		v, err = t.view(ctx, sc)
	case Wrapper:
		v, err = t.view(ctx, sc)
	case *Wrapper:
		if t == nil {
			return view{}, errors.New("toolset: nil *Wrapper")
		}
		v, err = t.view(ctx, sc)
	default:
		var tools []Tool
		tools, err = userTools(ctx, ts)
		if err == nil {
			v, err = leafView(ctx, view{snap: reuseSnapshot(tools)}, sc)
		}
	}
	if err != nil {
		return view{}, err
	}
	if v.snap == nil {
		v.snap = emptySnapshot
	}
	return v, nil
}

// The errors of a nil pointer of a toolset type of this package, returned
// by its methods instead of a panic.
var (
	errNilCombined = errors.New("toolset: nil *Combined")
	errNilDynamic  = errors.New("toolset: nil *Dynamic")
	errNilFiltered = errors.New("toolset: nil *Filtered")
	errNilFunction = errors.New("toolset: nil *Function")
	errNilPrefixed = errors.New("toolset: nil *Prefixed")
	errNilPrepared = errors.New("toolset: nil *Prepared")
	errNilRenamed  = errors.New("toolset: nil *Renamed")
)

// nilToolset says what ts is when it is nil, or a nil pointer of a type
// of this package ("a nil Toolset", "a nil *Filtered"), and returns ""
// otherwise.
func nilToolset(ts Toolset) string {
	switch t := ts.(type) {
	case nil:
		return "a nil Toolset"
	case *Function:
		if t == nil {
			return "a nil *Function"
		}
	case *Prefixed:
		if t == nil {
			return "a nil *Prefixed"
		}
	case *Renamed:
		if t == nil {
			return "a nil *Renamed"
		}
	case *Filtered:
		if t == nil {
			return "a nil *Filtered"
		}
	case *Combined:
		if t == nil {
			return "a nil *Combined"
		}
	case *Prepared:
		if t == nil {
			return "a nil *Prepared"
		}
	case *Dynamic:
		if t == nil {
			return "a nil *Dynamic"
		}
	case *Tool:
		if t == nil {
			return "a nil *Tool"
		}
	case *Wrapper:
		if t == nil {
			return "a nil *Wrapper"
		}
	}
	return ""
}

// userTools runs the GetTools of a toolset of the caller's; a panic becomes
// a *PanicError.
func userTools(ctx context.Context, ts Toolset) (tools []Tool, err error) {
	defer func() {
		if p := recover(); p != nil {
			tools, err = nil, newPanicError("GetTools", "", LabelOf(ts), p)
		}
	}()
	return ts.GetTools(ctx)
}

// isInline reports whether ts is made only of this package's in-memory
// toolsets: [Function]s and tools under Prefixed, Renamed, Filtered,
// Prepared, Combined and Wrapper layers. Materialising one waits on
// nothing but its predicates and prepare functions, which work on tools
// in memory, so it is done on the caller's goroutine; a goroutine costs
// more than the work. Everything else may block (a Dynamic, a remote
// toolset, any type of the caller's) and gets a goroutine of its own when
// it has company.
func isInline(ts Toolset) bool {
	for {
		switch t := ts.(type) {
		case nil, *Function, Tool, *Tool:
			return true // nil pointers fail at once
		case *Prefixed:
			return t == nil || t.inline
		case *Renamed:
			return t == nil || t.inline
		case *Filtered:
			return t == nil || t.inline
		case *Prepared:
			return t == nil || t.inline
		case *Combined:
			return t == nil || t.inline
		case Wrapper:
			ts = t.Wrapped
		case *Wrapper:
			if t == nil {
				return true
			}
			ts = t.Wrapped
		default:
			return false
		}
	}
}

// materializeAll materialises toolsets and returns their views in order.
// The inline ones (see isInline) are done first, on the caller's
// goroutine; then the others, each on a goroutine of its own unless it is
// alone in the list, where the first failure cancels the rest. So a
// callback that calls runtime.Goexit under a toolset that may block is
// reported as a *PanicError whenever it has siblings, as it always was. The errors of all
// failing toolsets are joined, each named by name(i).
//
// size is how many tools the toolsets are known to hold (see knownSize):
// inline work on that many tools is split across goroutines when the
// machine has more than one processor to run them (materializeSplit).
func materializeAll(ctx context.Context, toolsets []Toolset, inline []bool, size int, sc *scratch, name func(i int, err error) error) ([]view, error) {
	views := sc.views(len(toolsets))
	var errs []error
	blocking := 0
	for i := range toolsets {
		if !inline[i] {
			blocking++
		}
	}
	if procs := runtime.GOMAXPROCS(0); size >= splitMin && procs > 1 && sc != nil && !sc.worker && len(toolsets)-blocking > 1 {
		errs = materializeSplit(ctx, toolsets, inline, views, min(procs, len(toolsets)-blocking, size/splitMin*2), sc)
	} else {
		for i, ts := range toolsets {
			if !inline[i] {
				continue
			}
			v, err := materialize(ctx, ts, sc)
			if err != nil {
				if errs == nil {
					errs = make([]error, len(toolsets))
				}
				errs[i] = err
				continue
			}
			views[i] = v
		}
	}
	if errs != nil {
		if err := joinErrors(errs, name); err != nil {
			return nil, err
		}
	}
	switch {
	case blocking == 0:
	case len(toolsets) == 1:
		for i, ts := range toolsets {
			if !inline[i] {
				v, err := materialize(ctx, ts, sc)
				if err != nil {
					return nil, errors.Join(name(i, err))
				}
				views[i] = v
			}
		}
	default:
		errs = make([]error, len(toolsets))
		g, gctx := errgroup.WithContext(ctx)
		// One pointer for what every goroutine shares keeps each closure
		// small. The derived context is wrapped to carry the run itself,
		// in storage of m, so that callbacks find it without walking the
		// chain. The goroutines are given no scratch memory: it is the
		// caller's.
		m := &materializing{g: g, views: views, errs: errs}
		m.ctx = withRun(gctx, FromContext(ctx), &m.tc)
		for i, ts := range toolsets {
			if inline[i] {
				continue
			}
			g.Go(func() error { return m.guarded(i, ts) })
		}
		if g.Wait() != nil && ctx.Err() == nil {
			dropCancelled(errs)
		}
		if err := joinErrors(errs, name); err != nil {
			return nil, err
		}
	}
	return views, nil
}

// splitMin is the fewest known tools whose inline work is split across
// goroutines: below it, starting them costs more than they save.
const splitMin = 1 << 15

// materializeSplit materialises the inline toolsets in n groups of
// consecutive ones, the first on the caller's goroutine and the others
// each on a goroutine of its own with scratch of its own, and returns
// their errors (nil when none failed). A callback that calls
// runtime.Goexit on one of those goroutines fails its toolset with a
// *PanicError, as on the goroutines of toolsets that may block; nothing
// they run can block, so they need no cancelling.
func materializeSplit(ctx context.Context, toolsets []Toolset, inline []bool, views []view, n int, sc *scratch) []error {
	errs := make([]error, len(toolsets))
	group := func(k int, wsc *scratch) {
		lo, hi := k*len(toolsets)/n, (k+1)*len(toolsets)/n
		i, normal := lo, false
		defer func() {
			if !normal && k > 0 {
				// Callbacks recover their own panics: this is a Goexit,
				// or a bug. (On the caller's goroutine, either goes on.)
				errs[i] = newPanicError("callback", "", LabelOf(toolsets[i]), recover())
			}
		}()
		for ; i < hi; i++ {
			if inline[i] {
				views[i], errs[i] = materialize(ctx, toolsets[i], wsc)
			}
		}
		normal = true
	}
	var wg sync.WaitGroup
	for k := 1; k < n; k++ {
		wsc := getScratch()
		wsc.worker = true
		sc.workers = append(sc.workers, wsc)
		wg.Go(func() { group(k, wsc) })
	}
	// The caller's share splits no further, as the workers' do not. A
	// Goexit in it still waits for the workers: until they are done they
	// write into scratch that the unwinding turn gives back to the pool.
	func() {
		sc.worker = true
		defer func() {
			sc.worker = false
			wg.Wait()
		}()
		group(0, sc)
	}()
	for _, err := range errs {
		if err != nil {
			return errs
		}
	}
	return nil
}

// materializing is the state the goroutines of materializeAll share.
type materializing struct {
	ctx   context.Context
	tc    turnContext
	g     *errgroup.Group
	views []view
	errs  []error
}

// guarded materialises ts, the toolset at position i, on a goroutine of
// materializeAll, and returns its error. The callbacks recover their own
// panics; this catches whatever else panics, and user code that calls
// runtime.Goexit, which would otherwise leave the goroutine's view empty
// and its error nil. The goroutine of a Goexit returns nothing to the
// group, so another goroutine of the group returns its error, to cancel
// the siblings as an error returned does.
func (m *materializing) guarded(i int, ts Toolset) error {
	normal := false
	defer func() {
		if normal {
			return
		}
		p := recover()
		err := newPanicError("callback", "", LabelOf(ts), p)
		m.views[i], m.errs[i] = view{}, err
		if p == nil {
			m.g.Go(func() error { return err })
		}
	}()
	m.views[i], m.errs[i] = materialize(m.ctx, ts, nil)
	normal = true
	return m.errs[i]
}

// dropCancelled removes the errors of toolsets that only stopped because a
// sibling failed and cancelled them, unless that would remove them all.
func dropCancelled(errs []error) {
	real := 0
	for _, err := range errs {
		if err != nil && !isCanceled(err) {
			real++
		}
	}
	if real == 0 {
		return
	}
	for i, err := range errs {
		if err != nil && isCanceled(err) {
			errs[i] = nil
		}
	}
}

// isCanceled reports whether err, an error of a toolset's, is
// context.Canceled. An error whose Is or Unwrap method panics is not.
func isCanceled(err error) (yes bool) {
	defer func() {
		if recover() != nil {
			yes = false
		}
	}()
	return errors.Is(err, context.Canceled)
}

func joinErrors(errs []error, name func(i int, err error) error) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, name(i, err))
		}
	}
	return errors.Join(out...)
}

// entryError names the toolset that failed: "toolsets[1] (Prefixed): ..."
// inside a Combined, "Prefixed#1: ..." among the entries of BuildTools.
// It says each thing once: the message it wraps loses this package's
// prefix (the outermost error says it) and a leading label already given.
// The error of a toolset labelled "pkg:name" that names itself as
// `pkg: toolset "name": ...` is named so, with the position added:
// `toolset "name" (pkg, entry 1): ...`.
type entryError struct {
	index    int
	label    string
	combined bool
	err      error
}

func (e *entryError) Error() string {
	inner := strings.TrimPrefix(errorText(e.err), "toolset: ")
	if pkg, name, ok := strings.Cut(e.label, ":"); ok && pkg != "" && name != "" {
		if rest, ok := strings.CutPrefix(inner, pkg+": toolset "+strconv.Quote(name)+": "); ok {
			where := fmt.Sprintf("entry %d", e.index)
			if e.combined {
				where = fmt.Sprintf("toolsets[%d]", e.index)
			}
			return fmt.Sprintf("toolset %q (%s, %s): %s", name, pkg, where, rest)
		}
	}
	inner = strings.TrimPrefix(inner, e.label+": ")
	if e.combined {
		return fmt.Sprintf("toolsets[%d] (%s): %s", e.index, e.label, inner)
	}
	return fmt.Sprintf("%s#%d: %s", e.label, e.index, inner)
}

// unprefixed is an error of this package, or one made by user code that
// may be, wrapped under a message of this package: its message loses the
// "toolset: " that the wrapping message already begins with. errors.Is
// and errors.As see the error unchanged.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(errorText(u.err), "toolset: ") }

func (u unprefixed) Unwrap() error { return u.err }

func (e *entryError) Unwrap() error { return e.err }

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

// derived memoises a snapshot computed from one input snapshot, with
// whatever static facts the computation found (aux).
type derived struct {
	in, out *snapshot
	aux     any
}

// derive returns the memoised derivation of in, computing it with build on
// a miss.
func derive(m *memoSlots[derived], in *snapshot, build func(in *snapshot) *derived) *derived {
	if d := m.find(func(d *derived) bool { return d.in == in }); d != nil {
		return d
	}
	d := build(in)
	d.in = in
	m.store(d)
	return d
}

// joinKind says how the parts of a join are named in error messages.
type joinKind uint8

const (
	joinCombined joinKind = iota // toolsets[i] (Label)
	joinEntries                  // Label#i, or tools[i] (standalone)
)

// part is one input of a join.
type part struct {
	snap       *snapshot
	label      string
	standalone bool
}

// segment is a range of a join's tools that came from one part.
type segment struct {
	start, end int32     // the range in the join
	pos        int       // the part it came from
	sub        *snapshot // that part's snapshot
	label      string
	standalone bool
}

func (s segment) describe(k joinKind) string {
	switch {
	case k == joinCombined:
		return fmt.Sprintf("toolsets[%d] (%s)", s.pos, s.label)
	case s.standalone:
		return fmt.Sprintf("tools[%d] (standalone)", s.pos)
	default:
		return fmt.Sprintf("%s#%d", s.label, s.pos)
	}
}

// joined memoises the join of a list of parts.
type joined struct {
	kind  joinKind
	parts []part
	out   *snapshot
}

func (j *joined) matches(k joinKind, parts []part) bool {
	if j.kind != k || len(j.parts) != len(parts) {
		return false
	}
	for i := range parts {
		if j.parts[i] != parts[i] {
			return false
		}
	}
	return true
}

// join concatenates the parts' snapshots in order. Among the entries of
// BuildTools, a standalone tool that has the name of an earlier standalone
// tool replaces it, at the earlier one's position. The result is memoised
// on the first part's snapshot.
func join(k joinKind, parts []part) *snapshot {
	host := emptySnapshot
	if len(parts) > 0 {
		host = parts[0].snap
	}
	if j := host.joins.find(func(j *joined) bool { return j.matches(k, parts) }); j != nil {
		return j.out
	}
	out := buildJoin(k, parts)
	host.joins.store(&joined{kind: k, parts: append([]part(nil), parts...), out: out})
	return out
}

func buildJoin(k joinKind, parts []part) *snapshot {
	out := &snapshot{kind: k, segs: make([]segment, 0, len(parts))}
	if len(parts) == 1 && !parts[0].standalone {
		p := parts[0]
		out.tools = p.snap.tools // immutable: share it
		out.segs = append(out.segs, segment{end: int32(len(p.snap.tools)), sub: p.snap, label: p.label})
		return out
	}
	if tools, b, off, ok := contiguous(parts); ok {
		// The parts' copies lie end to end: share them.
		out.tools, out.block, out.off = tools, b, off
		at := int32(0)
		for i, p := range parts {
			n := int32(len(p.snap.tools))
			out.segs = append(out.segs, segment{start: at, end: at + n, pos: i, sub: p.snap, label: p.label})
			at += n
		}
		return out
	}
	total := 0
	for _, p := range parts {
		total += len(p.snap.tools)
	}
	out.tools = make([]Tool, 0, total)
	var standalone map[string]int // name -> segment of the standalone tool
	for i, p := range parts {
		seg := segment{start: int32(len(out.tools)), pos: i, sub: p.snap, label: p.label, standalone: p.standalone}
		if p.standalone && k == joinEntries && len(p.snap.tools) == 1 {
			name := p.snap.tools[0].Name
			if si, ok := standalone[name]; ok {
				// Replace the earlier standalone tool in place.
				prev := &out.segs[si]
				out.tools[prev.start] = p.snap.tools[0]
				prev.pos, prev.sub, prev.label = i, p.snap, p.label
				seg.end = seg.start
				out.segs = append(out.segs, seg)
				continue
			}
			if standalone == nil {
				standalone = make(map[string]int)
			}
			standalone[name] = len(out.segs)
		}
		out.tools = append(out.tools, p.snap.tools...)
		seg.end = int32(len(out.tools))
		out.segs = append(out.segs, seg)
	}
	return out
}

// joinKeep builds the visibility mask of a join for this turn from the
// masks of its parts' views, or returns nil when everything is visible.
// The mask is taken from sc, or made when sc is nil.
func joinKeep(out *snapshot, views []view, sc *scratch) []bool {
	masked := false
	for _, v := range views {
		if v.keep != nil {
			masked = true
			break
		}
	}
	if !masked {
		return nil
	}
	keep := sc.keep(len(out.tools))
	for _, s := range out.segs {
		dst := keep[s.start:s.end]
		if src := views[s.pos].keep; src != nil {
			copy(dst, src)
		} else {
			for i := range dst {
				dst[i] = true
			}
		}
	}
	return keep
}

// contributor names where the tool at position i of s came from, following
// joins and renamings down to the innermost toolset it can name:
// "Combined#0 > toolsets[1] (Prefixed)".
func (s *snapshot) contributor(i int32, root string) string {
	var parts []string
	if root != "" {
		parts = append(parts, root)
	}
	for s != nil {
		if s.segs == nil {
			s = s.from
			continue
		}
		k := sort.Search(len(s.segs), func(k int) bool { return s.segs[k].end > i })
		for k < len(s.segs) && s.segs[k].start == s.segs[k].end {
			k++ // skip empty segments of replaced standalone tools
		}
		if k == len(s.segs) {
			break
		}
		seg := s.segs[k]
		parts = append(parts, seg.describe(s.kind))
		i -= seg.start
		s = seg.sub
	}
	return strings.Join(parts, " > ")
}
