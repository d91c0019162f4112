package toolset_test

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLabels(t *testing.T) {
	f := toolset.NewFunction()
	assert.Equal(t, "Function", toolset.LabelOf(f))
	assert.Equal(t, "Prefixed", toolset.LabelOf(f.Prefixed("x")))
	assert.Equal(t, "weather", toolset.LabelOf(f.WithLabel("weather").Prefixed("x").Filtered(adminsOnly)))
	assert.Equal(t, "listToolset", toolset.LabelOf(listToolset{}))
	assert.Equal(t, "Combined", toolset.LabelOf(toolset.NewCombined()))
	assert.Equal(t, "Tool", toolset.LabelOf(echoTool("t")))
}

func TestInstructions(t *testing.T) {
	ctx := context.Background()
	db := toolset.NewFunction(echoTool("q")).WithInstructions("Use db_q for reads.")
	web := toolset.NewFunction(echoTool("w")).WithInstructions("  Cite your sources.\n")
	quiet := toolset.NewFunction(echoTool("z"))
	combined := toolset.NewCombined(db.Prefixed("db"), quiet, listToolset{}, web.Filtered(adminsOnly))
	got, err := combined.Instructions(ctx)
	require.NoError(t, err)
	assert.Equal(t, "Use db_q for reads.\n\nCite your sources.", got)

	got, err = toolset.Instructions(ctx, combined.Prefixed("x"), db)
	require.NoError(t, err)
	assert.Equal(t, "Use db_q for reads.\n\nCite your sources.\n\nUse db_q for reads.", got)

	// A toolset whose tools are all hidden this turn says nothing about them.
	hideAll := func(context.Context, toolset.Tool) (bool, error) { return false, nil }
	dropAll := func(context.Context, []toolset.Tool) ([]toolset.Tool, error) { return nil, nil }
	got, err = toolset.Instructions(ctx, db.Filtered(hideAll), db.Prepared(dropAll).Prefixed("p"), web)
	require.NoError(t, err)
	assert.Equal(t, "Cite your sources.", got)

	// Dynamic forwards the instructions of the toolset it picks this turn.
	pick := toolset.NewDynamic(func(ctx context.Context) (toolset.Toolset, error) {
		if Role.Get(ctx) == "admin" {
			return db, nil
		}
		return quiet, nil
	})
	got, err = pick.Instructions(withRole(t, "admin"))
	require.NoError(t, err)
	assert.Equal(t, "Use db_q for reads.", got)
	got, err = pick.Instructions(ctx)
	require.NoError(t, err)
	assert.Empty(t, got)
}
