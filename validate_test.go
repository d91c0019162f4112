package toolset_test

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateReportsWhatAFilterHides checks at start-up what a guest's
// turn would never show: two admin-only tools of one name, and an
// admin-only tool with an invalid name, are reported before any run, and
// a start-up without such problems passes.
func TestValidateReportsWhatAFilterHides(t *testing.T) {
	admin := map[string]string{"audience": "admin"}
	adminTool := func(name string) toolset.Tool {
		return toolset.NewTool(name, "", func(context.Context, struct{}) (string, error) { return name, nil }, toolset.WithMetadata(admin))
	}
	billing := toolset.NewFunction(echoTool("invoice"), adminTool("purge")).Filtered(adminsOnly)
	users := toolset.NewFunction(echoTool("get_user"), adminTool("purge")).Filtered(adminsOnly)

	guest := withRole(t, "guest")
	tools, err := toolset.BuildTools(guest, "Ops", billing, users)
	require.NoError(t, err, "neither purge is shown to a guest")
	assert.Equal(t, []string{"invoice", "get_user"}, tools.Names())

	for _, ctx := range []context.Context{context.Background(), withRole(t, "guest")} {
		err = toolset.Validate(ctx, billing, users)
		var nce *toolset.NameConflictError
		require.ErrorAs(t, err, &nce, "Validate checks every tool, shown this turn or not")
		assert.Equal(t, []toolset.NameConflict{{Name: "purge", Contributors: []string{"Filtered#0", "Filtered#1"}}}, nce.Conflicts)
		assert.Empty(t, nce.Invalid)
	}

	badName := toolset.NewFunction(echoTool("ok"), adminTool("drop table")).Filtered(adminsOnly)
	_, err = toolset.BuildTools(withRole(t, "guest"), "Ops", badName)
	require.NoError(t, err)
	err = toolset.Validate(context.Background(), badName)
	var nce *toolset.NameConflictError
	require.ErrorAs(t, err, &nce)
	require.Len(t, nce.Invalid, 1)
	assert.Equal(t, "drop table", nce.Invalid[0].Name)

	require.NoError(t, toolset.Validate(context.Background(), billing, users.Prefixed("users")))
	require.NoError(t, toolset.Validate(context.Background()), "nothing to check")
}

// TestValidateReportsAnUnusableTool reports the error of a tool NewTool
// could not make, and a nil entry, without a run.
func TestValidateReportsAnUnusableTool(t *testing.T) {
	broken := toolset.NewTool("tree", "", func(context.Context, treeNode) (int, error) { return 0, nil })
	want := broken.Err()
	require.Error(t, want)
	err := toolset.Validate(context.Background(), toolset.NewFunction(echoTool("ok")), toolset.NewFunction(broken))
	require.ErrorContains(t, err, `Function#1: tools[0]: `+want.Error(), "the entry and the tool are named, as BuildTools names them")

	err = toolset.Validate(context.Background(), toolset.NewFunction(), nil)
	require.ErrorContains(t, err, "a nil Toolset")
}
