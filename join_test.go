package toolset

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The first turn of a fresh Combined lays its children's prefixed copies
// end to end, and its join shares them instead of copying them again;
// where the tools came from is still known, for error messages.
func TestFreshCombinedJoinSharesItsChildrensCopies(t *testing.T) {
	tools := make([]Tool, 40)
	for i := range tools {
		tools[i] = NewTool(fmt.Sprint("t", i), "", func(context.Context, struct{}) (int, error) { return 0, nil })
	}
	a, b := NewFunction(tools...).Prefixed("a"), NewFunction(tools...).Prefixed("b")
	c := NewCombined(a, b)
	sc := getScratch()
	v, err := materialize(context.Background(), c, sc)
	sc.release()
	require.NoError(t, err)
	av, err := materialize(context.Background(), a, nil)
	require.NoError(t, err)
	bv, err := materialize(context.Background(), b, nil)
	require.NoError(t, err)
	require.Len(t, v.snap.tools, 80)
	assert.True(t, &v.snap.tools[0] == &av.snap.tools[0], "the join shares the first child's copies")
	assert.True(t, &v.snap.tools[40] == &bv.snap.tools[0], "and the second's, right after")
	assert.Equal(t, `Prefixed#1 "b"`, v.snap.contributor(45, ""))
	assert.Equal(t, "b_t5", v.snap.tools[45].Name)

	// Two children showing one name are still named, each.
	dup := NewCombined(NewFunction(tools...).Prefixed("p"), NewFunction(tools...).Prefixed("p"))
	_, err = BuildTools(context.Background(), "agent", dup)
	var nc *NameConflictError
	require.ErrorAs(t, err, &nc)
	require.Len(t, nc.Conflicts, 40)
	assert.Equal(t, []string{`Combined#0/Prefixed#0 "p"`, `Combined#0/Prefixed#1 "p"`}, nc.Conflicts[0].Contributors)
}

// A join is memoised on its first part: the same parts give the same
// snapshot, any part that differs (its snapshot, label or path element)
// another.
func TestJoinIsMemoisedOnItsParts(t *testing.T) {
	a, b := newSnapshot([]Tool{{Name: "a"}}), newSnapshot([]Tool{{Name: "b"}, {Name: "c"}})
	parts := []part{{snap: a, label: "A", elem: pathElem{typ: "Function"}}, {snap: b, label: "B", elem: pathElem{typ: "Function"}}}
	s := join(joinCombined, parts)
	assert.Equal(t, []Tool{{Name: "a"}, {Name: "b"}, {Name: "c"}}, s.tools)
	again := append([]part(nil), parts...)
	assert.Same(t, s, join(joinCombined, again))
	again[1].elem.what = "other"
	assert.NotSame(t, s, join(joinCombined, again))
	assert.NotSame(t, s, join(joinEntries, parts), "the kind is part of the key")
	assert.Empty(t, join(joinCombined, nil).tools)
}

// Among a turn's entries, a standalone tool that has the name of an
// earlier one replaces it at the earlier one's position; inside a
// Combined, or for a toolset of several tools, nothing is replaced.
func TestStandaloneToolReplacesTheEarlierOne(t *testing.T) {
	first, later := newSnapshot([]Tool{{Name: "s", Description: "first"}}), newSnapshot([]Tool{{Name: "s", Description: "later"}})
	other := newSnapshot([]Tool{{Name: "x"}})
	parts := []part{{snap: first, standalone: true}, {snap: other}, {snap: later, standalone: true}}
	s := join(joinEntries, parts)
	assert.Equal(t, []Tool{{Name: "s", Description: "later"}, {Name: "x"}}, s.tools)
	assert.Equal(t, 2, s.segs[0].pos, "the position names the later tool")
	assert.Equal(t, s.segs[2].start, s.segs[2].end, "the later tool's own segment is empty")
	assert.Len(t, join(joinCombined, parts).tools, 3)
}

// A join's mask is nil when every part shows everything, and otherwise
// the parts' masks laid end to end.
func TestJoinKeepLaysThePartsMasksEndToEnd(t *testing.T) {
	a, b := newSnapshot([]Tool{{Name: "a"}, {Name: "b"}}), newSnapshot([]Tool{{Name: "c"}})
	s := join(joinCombined, []part{{snap: a}, {snap: b}})
	assert.Nil(t, joinKeep(s, []view{{snap: a}, {snap: b}}, nil))
	assert.Equal(t, []bool{false, true, true}, joinKeep(s, []view{{snap: a, keep: []bool{false, true}}, {snap: b}}, nil))
}

// The tools of parts that lie end to end in one block are shared, not
// copied; a standalone part or a gap breaks the run.
func TestContiguousFindsPartsEndToEnd(t *testing.T) {
	blk := &toolBlock{all: make([]Tool, 10)}
	at := func(off, n int) *snapshot {
		return &snapshot{tools: blk.all[off : off+n : off+n], block: blk, off: off}
	}
	tools, b, off, ok := contiguous([]part{{snap: at(2, 3)}, {snap: emptySnapshot}, {snap: at(5, 4)}})
	assert.True(t, ok)
	assert.Same(t, blk, b)
	assert.Equal(t, 2, off)
	assert.Len(t, tools, 7)
	_, _, _, ok = contiguous([]part{{snap: at(0, 3)}, {snap: at(4, 1)}})
	assert.False(t, ok, "a gap")
	_, _, _, ok = contiguous([]part{{snap: at(0, 1), standalone: true}})
	assert.False(t, ok, "a standalone tool")
	_, _, _, ok = contiguous([]part{{snap: newSnapshot([]Tool{{Name: "x"}})}})
	assert.False(t, ok, "not from a block")
}
