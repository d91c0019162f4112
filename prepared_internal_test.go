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
