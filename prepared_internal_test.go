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
	assert.Equal(t, "toolsets[1] (Prefixed)", v.snap.contributor(45, ""))
	assert.Equal(t, "b_t5", v.snap.tools[45].Name)

	// Two children showing one name are still named, each.
	dup := NewCombined(NewFunction(tools...).Prefixed("p"), NewFunction(tools...).Prefixed("p"))
	_, err = BuildTools(context.Background(), "agent", dup)
	var nc *NameConflictError
	require.ErrorAs(t, err, &nc)
	require.Len(t, nc.Conflicts, 40)
	assert.Equal(t, []string{"Combined#0 > toolsets[0] (Prefixed)", "Combined#0 > toolsets[1] (Prefixed)"}, nc.Conflicts[0].Contributors)
}
