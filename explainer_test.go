package toolset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An explained walk is the walk of a turn: it yields the same view, the
// same snapshot and the same mask, for every toolset type, as a turn
// after the first (whose Filtered over a Prefixed copies only the tools
// it keeps), and the same tools as the first.
func TestExplainedWalkYieldsTheTurnsView(t *testing.T) {
	ctx := context.Background()
	odd := func(_ context.Context, t Tool) (bool, error) { return len(t.Name)%2 == 1, nil }
	f := NewFunction(nopTool("a"), nopTool("bb"), nopTool("ccc", WithEnabled(func(context.Context, Tool) (bool, error) { return false, nil })))
	picked := f.Prefixed("d")
	drop := func(_ context.Context, ts []Tool) ([]Tool, error) { return ts[1:], nil }
	tree := NewCombined(
		f.Prefixed("p").Filtered(odd),
		f.Renamed(map[string]string{"a": "z"}).Prepared(drop),
		Wrapper{Wrapped: f, Middleware: []Middleware{func(next Handler) Handler { return next }}},
		NewDynamic(func(context.Context) (Toolset, error) { return picked, nil }),
		nopTool("solo"),
		fixedUser{nopTool("u")},
	)
	first, err := materialize(ctx, tree, nil)
	require.NoError(t, err)
	want, err := materialize(ctx, tree, nil)
	require.NoError(t, err)
	assert.Equal(t, first.tools(), want.tools(), "the first turn shows what later turns show")
	assert.Less(t, len(first.snap.tools), len(want.snap.tools), "the first turn copies only what it shows")
	x := newExplainer()
	got, err := materialize(ctx, tree, &scratch{x: x})
	require.NoError(t, err)
	assert.True(t, want.snap == got.snap, "the same memoised join")
	assert.Equal(t, want.keep, got.keep)
	require.Len(t, x.cur.tools, len(got.snap.tools), "every tool is explained")
	for i, e := range x.cur.tools {
		assert.NotEmpty(t, e.path, "tool %d", i)
	}
	assert.Equal(t, -1, x.idx)
	assert.Empty(t, x.path, "the walk is back at the root")
}

// A turn's walk stops at a Renamed's clash; an explained one notes it and
// goes on, so that everything else the turn decides is seen too.
func TestExplainedWalkGoesOnPastARenamedsClash(t *testing.T) {
	ctx := context.Background()
	clash := NewFunction(nopTool("a"), nopTool("b")).Renamed(map[string]string{"a": "b"})
	_, err := materialize(ctx, clash, nil)
	var nce *NameConflictError
	require.ErrorAs(t, err, &nce)
	x := newExplainer()
	v, err := materialize(ctx, clash, &scratch{x: x})
	require.NoError(t, err)
	assert.Len(t, v.snap.tools, 2)
	require.Len(t, x.cur.fails, 1)
	assert.Equal(t, nce.Error(), x.cur.fails[0].Error())
	assert.Equal(t, ReasonNameConflict, x.cur.tools[0].reasons[0].Kind)
}

// Every hook does nothing on a nil explainer, which is what a turn has.
func TestNilExplainerHooksDoNothing(t *testing.T) {
	var x *explainer
	s := newSnapshot([]Tool{{Name: "a"}})
	v := view{snap: s}
	allocs := testing.AllocsPerRun(100, func() {
		x.fresh(1)
		x.hidden(v, []bool{false}, x.notes(), ReasonFiltered)
		x.renamed(s, s, nil)
		x.prepared(v, v)
		x.joined(s)
	})
	assert.Zero(t, allocs)
	assert.Nil(t, x.notes())
}

// fixedUser is a toolset of the caller's that returns the same tools
// every turn.
type fixedUser struct{ tool Tool }

func (u fixedUser) GetTools(context.Context) ([]Tool, error) { return []Tool{u.tool}, nil }
