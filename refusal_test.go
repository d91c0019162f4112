package toolset_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusing is a toolset of the caller's that refuses some of its
// source's tools, and says so.
type refusing struct {
	tools   []toolset.Tool
	refused []toolset.ToolExplanation
	panics  bool
	asked   atomic.Int32
}

func (r *refusing) GetTools(context.Context) ([]toolset.Tool, error) { return r.tools, nil }

func (r *refusing) Label() string { return "remote" }

func (r *refusing) RefusedTools(context.Context) []toolset.ToolExplanation {
	r.asked.Add(1)
	if r.panics {
		panic("no report")
	}
	return r.refused
}

// A toolset's refused tools are in the explanation, hidden, under the
// name its source gave them, from the toolset's path; BuildTools never
// asks for them.
func TestExplainListsRefusedTools(t *testing.T) {
	ts := &refusing{
		tools: []toolset.Tool{echoTool("list_users")},
		refused: []toolset.ToolExplanation{
			{Name: "admin.delete_user", Visible: true, Path: "lies", Reasons: []toolset.Reason{{Detail: "the name is not one a model can call"}}},
			{Name: "no.reason"},
			{Name: "long", Reasons: []toolset.Reason{{Kind: toolset.ReasonInvalidName, Detail: strings.Repeat("x", 10_000)}}},
		},
	}
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewPrefixed(ts, "ops"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ops_list_users"}, tools.Names())
	assert.Zero(t, ts.asked.Load(), "a turn does not ask")

	e, err := toolset.Explain(ctx, "a", toolset.NewPrefixed(ts, "ops"))
	require.NoError(t, err)
	require.NoError(t, e.Err, "a refused tool does not fail the turn")
	del := only(t, e, "admin.delete_user")
	assert.False(t, del.Visible)
	assert.Equal(t, `Prefixed#0 "ops"/refusing "remote"`, del.Path, "the toolset's path, not its claim")
	assert.Equal(t, []toolset.Reason{{Kind: toolset.ReasonRefused, Path: del.Path, Detail: "the name is not one a model can call"}}, del.Reasons)
	assert.Equal(t, []toolset.ReasonKind{toolset.ReasonRefused}, kinds(only(t, e, "no.reason").Reasons))
	long := only(t, e, "long").Reasons
	require.Len(t, long, 1)
	assert.Equal(t, toolset.ReasonInvalidName, long[0].Kind, "a kind the toolset gives is kept")
	assert.LessOrEqual(t, len(long[0].Detail), 210, "a reason's detail is bounded")
	assert.Contains(t, e.String(), "admin.delete_user: hidden, from "+del.Path+"\n  - refused by its toolset at "+del.Path+": the name is not one a model can call")
	assert.Contains(t, e.String(), `agent "a": 1 of 4 tools shown`)

	// A toolset speaks for itself alone: a reason that claims another
	// place of the turn is placed at the toolset's path, and cannot add
	// a line to the report.
	forged := &refusing{refused: []toolset.ToolExplanation{{Name: "x", Reasons: append([]toolset.Reason{
		{Kind: toolset.ReasonFiltered, Path: "Combined#0/Filtered"},
		{Path: "refusing \"remote\"\nbilling: hidden, from Function#1"},
	}, make([]toolset.Reason, 10_000)...)}}}
	e, err = toolset.Explain(ctx, "a", toolset.NewCombined(toolset.NewFunction(echoTool("y")).Filtered(func(context.Context, toolset.Tool) (bool, error) { return true, nil }), forged))
	require.NoError(t, err)
	x := only(t, e, "x")
	assert.Len(t, x.Reasons, 16, "a tool's reasons are bounded")
	for _, r := range x.Reasons {
		assert.Equal(t, `Combined#0/refusing#1 "remote"`, r.Path)
	}
	assert.NotContains(t, e.String(), "\nbilling")

	panics := &refusing{tools: []toolset.Tool{echoTool("x")}, refused: ts.refused, panics: true}
	e, err = toolset.Explain(ctx, "a", panics)
	require.NoError(t, err, "the report is not the turn's")
	assert.Len(t, e.Tools, 1)
	assert.Equal(t, int32(1), panics.asked.Load())
}
