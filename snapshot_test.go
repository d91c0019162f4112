package toolset

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Prepared whose function returns the same list turn after turn yields
// the same snapshot, so the layers above it keep their memo: the
// prefixed copies above it are made once, not every turn.
func TestPreparedUnchangedKeepsTheMemoAbove(t *testing.T) {
	tools := make([]Tool, 50)
	for i := range tools {
		tools[i] = NewTool(fmt.Sprint("t", i), "", func(context.Context, struct{}) (int, error) { return 0, nil })
	}
	drop := true
	ts := NewPrepared(NewFunction(tools...), func(_ context.Context, tools []Tool) ([]Tool, error) {
		if drop {
			return tools[1:], nil
		}
		return tools, nil
	}).Prefixed("p")
	ctx := context.Background()
	turn := func() *snapshot {
		v, err := materialize(ctx, ts, nil)
		require.NoError(t, err)
		return v.snap
	}
	first := turn()
	assert.True(t, first == turn(), "an unchanged prepared list keeps the prefixed copies")
	drop = false
	other := turn()
	assert.True(t, first != other, "a changed list is prefixed anew")
	assert.Len(t, other.tools, 50)
	drop = true
	assert.True(t, first == turn(), "a recent list is remembered")
}

// nopTool returns a tool named name for the internal tests.
func nopTool(name string, opts ...ToolOption) Tool {
	return NewTool(name, "", func(context.Context, struct{}) (int, error) { return 0, nil }, opts...)
}

// A memo keeps the last four entries stored, the oldest replaced first.
func TestMemoSlotsKeepTheLastFour(t *testing.T) {
	var m memoSlots[int]
	vals := make([]*int, 6)
	for i := range vals {
		vals[i] = new(int)
		*vals[i] = i
		m.store(vals[i])
	}
	for i, v := range vals {
		got := m.find(func(e *int) bool { return *e == i })
		if i < 2 {
			assert.Nil(t, got, "entry %d was replaced", i)
		} else {
			assert.Same(t, v, got, "entry %d is kept", i)
		}
	}
}

// A derivation is built once per input snapshot, and found by the
// input's identity, not its contents.
func TestDeriveBuildsOncePerInput(t *testing.T) {
	var m memoSlots[derived]
	builds := 0
	build := func(in *snapshot) *derived { builds++; return &derived{out: newSnapshot(in.tools)} }
	a, b := newSnapshot([]Tool{{Name: "x"}}), newSnapshot([]Tool{{Name: "x"}})
	da := derive(&m, a, build)
	assert.Same(t, da, derive(&m, a, build))
	assert.Equal(t, 1, builds)
	assert.NotSame(t, da, derive(&m, b, build), "an equal snapshot is another input")
	assert.Equal(t, 2, builds)
	assert.Same(t, a, da.in)
}

// The list a toolset of the caller's returns is given the snapshot of
// the last equal list, so what is built on it is reused; a list that
// differs in any tool gets a new one.
func TestReuseSnapshotKeepsTheLastEqualList(t *testing.T) {
	a, b := nopTool("a"), nopTool("b")
	s := reuseSnapshot([]Tool{a, b})
	assert.Same(t, s, reuseSnapshot([]Tool{a, b}), "an equal list, in a new slice")
	edited := b
	edited.Description = "changed"
	assert.NotSame(t, s, reuseSnapshot([]Tool{a, edited}))
	assert.NotSame(t, s, reuseSnapshot([]Tool{a}))
	assert.Same(t, emptySnapshot, reuseSnapshot(nil))
	assert.Len(t, reuseSnapshot([]Tool{{Name: "bare"}}).tools, 1, "a tool with no core is not memoised, but listed")
}
