package toolset_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTools(t *testing.T) {
	ctx := withRole(t, "guest")
	users := toolset.NewFunction(
		echoTool("get_user"),
		toolset.NewTool("delete_user", "", func(context.Context, struct{}) (string, error) { return "deleted", nil },
			toolset.WithMetadata(map[string]string{"audience": "admin"})),
		echoTool("list_users"),
	).Filtered(adminsOnly)
	tools, err := toolset.BuildTools(ctx, "Ops", users)
	require.NoError(t, err)
	assert.Equal(t, "Ops", tools.Agent())
	assert.Equal(t, 2, tools.Len())
	assert.Equal(t, []string{"get_user", "list_users"}, tools.Names())
	list := tools.Tools()
	require.Len(t, list, 2)
	list[0].Name = "changed"
	assert.Equal(t, []string{"get_user", "list_users"}, tools.Names(), "List returns a copy")
	var seen []string
	for tool := range tools.All() {
		seen = append(seen, tool.Name)
		break
	}
	assert.Equal(t, []string{"get_user"}, seen)
	_, ok := tools.Lookup("delete_user")
	assert.False(t, ok)

	var none *toolset.ToolList
	assert.Zero(t, none.Len())
	assert.Empty(t, none.Tools())
	assert.Empty(t, none.Names())

	empty, err := toolset.BuildTools(nextTurn(ctx), "Ops")
	require.NoError(t, err)
	assert.Zero(t, empty.Len())
}

func TestBuildToolsLookupSkipsHiddenDuplicate(t *testing.T) {
	ctx := withRole(t, "guest")
	adminSearch := toolset.NewFunction(toolset.NewTool("search", "", func(context.Context, struct{}) (string, error) { return "admin", nil },
		toolset.WithMetadata(map[string]string{"audience": "admin"}))).Filtered(adminsOnly)
	userSearch := toolset.NewFunction(toolset.NewTool("search", "", func(context.Context, struct{}) (string, error) { return "user", nil }))
	tools, err := toolset.BuildTools(ctx, "a", adminSearch, userSearch)
	require.NoError(t, err)
	got, err := tools.Execute(ctx, toolset.ToolCall{Name: "search", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "user", got)
}

// usersToolset shows delete_user to admins only, and counts deletions.
func usersToolset(deleted *int) toolset.Toolset {
	return toolset.NewFunction(
		echoTool("get_user"),
		toolset.NewTool("delete_user", "Delete a user.", func(context.Context, struct{}) (string, error) {
			*deleted++
			return "deleted", nil
		}, toolset.WithMetadata(map[string]string{"audience": "admin"})),
	).Filtered(adminsOnly)
}

func requireMismatch(t *testing.T, err error, want toolset.RunMismatchError) {
	t.Helper()
	var me *toolset.RunMismatchError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, want, *me)
	_, forModel := toolset.ErrorText(err)
	assert.False(t, forModel, "a set called in another run stops the run")
}

func TestAdminToolsCalledWithViewerContextAreRefused(t *testing.T) {
	deleted := 0
	users := usersToolset(&deleted)
	admin := withRole(t, "admin")
	adminTools, err := toolset.BuildTools(admin, "a", users)
	require.NoError(t, err)

	viewer := withRole(t, "viewer")
	_, err = adminTools.Execute(viewer, toolset.ToolCall{Name: "delete_user", Args: nil})
	requireMismatch(t, err, toolset.RunMismatchError{Tool: "delete_user", BuiltFor: "run-admin", CalledIn: "run-viewer"})
	assert.Contains(t, err.Error(), `tool "delete_user"`)
	assert.Contains(t, err.Error(), `run "run-admin"`)
	assert.Contains(t, err.Error(), `run "run-viewer"`)

	// A run made again with the ID of an ended run is another run still.
	later := testRun(t, "later", toolset.WithValue(Role, "admin"))
	laterTools, err := toolset.BuildTools(later.Turn(context.Background()), "a", users)
	require.NoError(t, err)
	later.End()
	again := newRun(t, "later", toolset.WithValue(Role, "admin"))
	_, err = laterTools.Execute(again, toolset.ToolCall{Name: "delete_user", Args: nil})
	requireMismatch(t, err, toolset.RunMismatchError{Tool: "delete_user", BuiltFor: "later", CalledIn: "later"})
	assert.Zero(t, deleted)

	got, err := adminTools.Execute(admin, toolset.ToolCall{Name: "delete_user", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "deleted", got)
}

func TestToolsBuiltUnderARunRefuseCallsWithoutOne(t *testing.T) {
	deleted := 0
	users := usersToolset(&deleted)
	adminTools, err := toolset.BuildTools(withRole(t, "admin"), "a", users)
	require.NoError(t, err)
	_, err = adminTools.Execute(context.Background(), toolset.ToolCall{Name: "delete_user", Args: nil})
	requireMismatch(t, err, toolset.RunMismatchError{Tool: "delete_user", BuiltFor: "run-admin", CalledWithoutRun: true})
	assert.Contains(t, err.Error(), "no run")

	plain, err := toolset.BuildTools(context.Background(), "a", users)
	require.NoError(t, err)
	_, err = plain.Execute(newRun(t, "admin2", toolset.WithValue(Role, "admin")), toolset.ToolCall{Name: "get_user", Args: nil})
	requireMismatch(t, err, toolset.RunMismatchError{Tool: "get_user", BuiltWithoutRun: true, CalledIn: "admin2"})
	got, err := plain.Execute(context.Background(), toolset.ToolCall{Name: "get_user", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "get_user", got)
	assert.Zero(t, deleted)
}

func TestToolsOfOneStepServeEveryStepOfTheRun(t *testing.T) {
	rc := testRun(t, "r", toolset.WithValue(Role, "admin"))
	step0 := rc.Turn(context.Background())
	tools, err := toolset.BuildTools(step0, "a", usersToolset(new(int)))
	require.NoError(t, err)
	_, err = tools.Execute(step0, toolset.ToolCall{Name: "delete_user", Args: nil})
	require.NoError(t, err)
	step1 := rc.Turn(context.Background())
	_, err = tools.Execute(step1, toolset.ToolCall{Name: "delete_user", Args: nil})
	require.NoError(t, err, "a later step of the same run")
	_, err = tools.Execute(toolset.NewContext(context.Background(), rc), toolset.ToolCall{Name: "delete_user", Args: nil})
	require.NoError(t, err, "the run's own context")
}

func TestRunMismatchBoundsTheName(t *testing.T) {
	tools, err := toolset.BuildTools(withRole(t, "admin"), "a", echoTool("x"))
	require.NoError(t, err)
	_, err = tools.Execute(withRole(t, "viewer"), toolset.ToolCall{Name: strings.Repeat("n", 1<<20), Args: nil})
	var me *toolset.RunMismatchError
	require.ErrorAs(t, err, &me)
	assert.Less(t, len(err.Error()), 500)
}
