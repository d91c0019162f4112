package toolset

import "sync"

// This file holds the bump allocator of a turn: scratch, its chunks, and
// the blocks that the copies of a fresh Combined's children are laid out
// in. The invariant:
//
//	What a turn takes from its scratch is dropped when the turn ends
//	(release); only a toolBlock outlives it, owned by the snapshots made
//	from it. Scratch is used by one goroutine at a time.

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
	// seen counts the tools of the reservation copied so far, or filtered
	// as they were copied (see Prefixed.pickFiltered): toolHint-seen is
	// the most still to come.
	seen int
	// The rest of the buffers that the copies' new names, and the
	// positions of filtered copies, are taken from while the block is
	// reserved: a fresh Combined's names cost one allocation, or a few,
	// not one a child.
	names []byte
	picks []int32

	// The scratch of the goroutines a large turn was split across
	// (materializeSplit), released with this one; and whether this is
	// one of them, which splits no further.
	workers []*scratch
	worker  bool

	// The explainer of an explained walk (see Explain), or nil: the
	// views tell it what they decide. Such a scratch is never pooled.
	x *explainer
}

// explaining returns the explainer of an explained walk, or nil. Every
// hook of an explainer does nothing on a nil one, so a turn pays for
// Explain only this test.
func (sc *scratch) explaining() *explainer {
	if sc == nil {
		return nil
	}
	return sc.x
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
	if sc == nil || sc.toolHint == 0 {
		return make([]Tool, n), nil, 0
	}
	rest := sc.toolHint - sc.seen // the most the reservation still copies
	sc.seen += n
	return sc.takeTools(n, rest)
}

// reserving reports whether a reservation is in force (see
// reserveTools): a fresh Combined's children are being copied.
func (sc *scratch) reserving() bool { return sc != nil && sc.toolHint != 0 }

// passTools counts n tools of the reservation as seen (see seen) that
// are filtered as they are copied, with newKept.
func (sc *scratch) passTools(n int) {
	if sc != nil && sc.toolHint != 0 {
		sc.seen += n
	}
}

// newKept returns k zeroed tools for the copies that a predicate kept of
// n tools, as newTools does. A block begun for them is sized for the
// reservation's tools still to come, kept at the same rate, with some
// room to spare: a block too small costs the join a copy of the turn's
// tools, not a wrong answer.
func (sc *scratch) newKept(k, n int) ([]Tool, *toolBlock, int) {
	if sc == nil || sc.toolHint == 0 {
		return make([]Tool, k), nil, 0
	}
	return sc.takeTools(k, k+keptAhead(sc.toolHint-sc.seen, k, n))
}

// keptAhead estimates how many of rest tools still to come are kept, at
// the rate of k of n, with room to spare.
func keptAhead(rest, k, n int) int {
	if rest <= 0 || n == 0 {
		return 0
	}
	est := int(int64(rest) * int64(k) / int64(n))
	return min(est+est/16+16, rest)
}

// takeTools takes n tools from the reservation's block, beginning a
// block of size tools (or n, if more) when they do not fit.
func (sc *scratch) takeTools(n, size int) ([]Tool, *toolBlock, int) {
	if n == 0 {
		return nil, nil, 0
	}
	if sc.block == nil || len(sc.block.all)-sc.used < n {
		sc.block, sc.used = &toolBlock{all: make([]Tool, max(size, n))}, 0
	}
	off := sc.used
	sc.used += n
	return sc.block.all[off:sc.used:sc.used], sc.block, off
}

// room returns the free tools of the reservation's block and the free
// positions of its buffer of picks (see newPicks) when both have room for
// n, for a copy of those of n tools that a predicate keeps: the first of
// each are then taken with keptIn.
func (sc *scratch) room(n int) ([]Tool, []int32, bool) {
	if sc == nil || sc.toolHint == 0 || sc.block == nil || n == 0 || len(sc.block.all)-sc.used < n || len(sc.picks) < n {
		return nil, nil, false
	}
	return sc.block.all[sc.used : sc.used+n : sc.used+n], sc.picks[:n:n], true
}

// keptIn takes the first k of the tools and positions room returned, and
// returns them with the block and offset the tools lie at.
func (sc *scratch) keptIn(k int) ([]Tool, *toolBlock, int, []int32) {
	if k == 0 {
		return nil, nil, 0, nil
	}
	off := sc.used
	sc.used += k
	pick := sc.picks[:k:k]
	sc.picks = sc.picks[k:]
	return sc.block.all[off:sc.used:sc.used], sc.block, off, pick
}

// newPicks returns k positions for a filtered copy (see snapshot.pick)
// of n tools: while a block is reserved, from a buffer shared by the
// reservation's filtered copies, sized as newKept sizes a block; else
// newly made.
func (sc *scratch) newPicks(k, n int) []int32 {
	if sc == nil || sc.toolHint == 0 || k == 0 {
		return make([]int32, k)
	}
	if len(sc.picks) < k {
		sc.picks = make([]int32, k+keptAhead(sc.toolHint-sc.seen, k, n))
	}
	b := sc.picks[:k:k]
	sc.picks = sc.picks[k:]
	return b
}

// newNames returns size bytes for the names of the tools of a new
// snapshot: while a fresh Combined has reserved a block (see newTools),
// from a buffer shared by its children's copies, sized for the tools
// still to come at the length per tool of these, at most maxNamesChunk
// past what is asked (the snapshots keep the buffer alive: a guess that
// later names are as long as the first must not cost much when wrong);
// else newly made.
func (sc *scratch) newNames(size, tools int) []byte {
	if sc == nil || sc.toolHint == 0 || size == 0 || tools == 0 {
		return make([]byte, size)
	}
	if len(sc.names) < size {
		rest := max(sc.toolHint-sc.seen, 0) // tools of the reservation not yet copied
		sc.names = make([]byte, size+int(min(int64(size)*int64(rest)/int64(tools), maxNamesChunk)))
	}
	b := sc.names[:size:size]
	sc.names = sc.names[size:]
	return b
}

// maxNamesChunk bounds the bytes newNames sets aside for names to come.
const maxNamesChunk = 1 << 20

// reserveTools makes the copies of tools made until the returned
// function is called come from one block of about n tools, when no
// reservation is in force already.
func (sc *scratch) reserveTools(n int) (done func()) {
	if sc == nil || sc.toolHint != 0 || n < minBlock {
		return func() {}
	}
	sc.toolHint = n
	return func() { sc.toolHint, sc.block, sc.used, sc.seen, sc.names, sc.picks = 0, nil, 0, 0, nil, nil }
}

// minBlock is the fewest tools worth a block of their own.
const minBlock = 64

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

// release gives sc back to the pool. Nothing taken from sc may be used
// after. A reservation a Goexit unwound past ends here: the block belongs
// to the snapshots made from it, not to the next turn.
func (sc *scratch) release() {
	sc.block, sc.used, sc.seen, sc.toolHint, sc.names, sc.picks, sc.worker = nil, 0, 0, 0, nil, nil, false
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
