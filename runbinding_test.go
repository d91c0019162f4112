package toolset_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

func TestBuildToolsUnderCancelledContextFails(t *testing.T) {
	ctx, cancel := context.WithCancel(newRun(t, "r"))
	cancel()
	// Functions only: no goroutine would notice the cancellation.
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTools("a", "b")...), echoTool("c"))
	require.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, tools)

	ctx, cancel = context.WithDeadline(newRun(t, "r"), time.Now().Add(-time.Second))
	defer cancel()
	_, err = toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTool("a")))
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestBuildToolsCancelledDuringTheTurnFails(t *testing.T) {
	ctx, cancel := context.WithCancel(newRun(t, "r"))
	defer cancel()
	// A predicate that does not look at its context, while the turn's
	// context ends under it.
	ts := toolset.NewFunction(echoTools("a", "b")...).Filtered(func(context.Context, toolset.Tool) (bool, error) {
		cancel()
		return true, nil
	})
	_, err := toolset.BuildTools(ctx, "a", ts)
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
}
