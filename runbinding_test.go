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
	admin := withRole("admin")
	adminTools, err := toolset.BuildTools(admin, "a", users)
	require.NoError(t, err)

	viewer := withRole("viewer")
	_, err = adminTools.Call(viewer, "delete_user", nil)
	requireMismatch(t, err, toolset.RunMismatchError{Tool: "delete_user", BuiltFor: "run-admin", CalledIn: "run-viewer"})
	assert.Contains(t, err.Error(), `tool "delete_user"`)
	assert.Contains(t, err.Error(), `run "run-admin"`)
	assert.Contains(t, err.Error(), `run "run-viewer"`)

	// Another run with the same ID is another run still.
	_, err = adminTools.Call(withRole("admin"), "delete_user", nil)
	requireMismatch(t, err, toolset.RunMismatchError{Tool: "delete_user", BuiltFor: "run-admin", CalledIn: "run-admin"})
	assert.Zero(t, deleted)

	got, err := adminTools.Call(admin, "delete_user", nil)
	require.NoError(t, err)
	assert.Equal(t, "deleted", got)
}

func TestToolsBuiltUnderARunRefuseCallsWithoutOne(t *testing.T) {
	deleted := 0
	users := usersToolset(&deleted)
	adminTools, err := toolset.BuildTools(withRole("admin"), "a", users)
	require.NoError(t, err)
	_, err = adminTools.Call(context.Background(), "delete_user", nil)
	requireMismatch(t, err, toolset.RunMismatchError{Tool: "delete_user", BuiltFor: "run-admin", CalledWithoutRun: true})
	assert.Contains(t, err.Error(), "no run")

	plain, err := toolset.BuildTools(context.Background(), "a", users)
	require.NoError(t, err)
	_, err = plain.Call(withRole("admin"), "get_user", nil)
	requireMismatch(t, err, toolset.RunMismatchError{Tool: "get_user", BuiltWithoutRun: true, CalledIn: "run-admin"})
	got, err := plain.Call(context.Background(), "get_user", nil)
	require.NoError(t, err)
	assert.Equal(t, "get_user", got)
	assert.Zero(t, deleted)
}

func TestToolsOfOneStepServeEveryStepOfTheRun(t *testing.T) {
	rc := &toolset.RunContext{RunID: "r", Values: map[string]any{"role": "admin"}}
	step3 := toolset.NewContext(context.Background(), rc.WithStep(3))
	tools, err := toolset.BuildTools(step3, "a", usersToolset(new(int)))
	require.NoError(t, err)
	_, err = tools.Call(step3, "delete_user", nil)
	require.NoError(t, err)
	step4 := toolset.NewContext(context.Background(), rc.WithStep(4))
	_, err = tools.Call(step4, "delete_user", nil)
	require.NoError(t, err, "a later step of the same run")
}

func TestRunMismatchBoundsTheName(t *testing.T) {
	tools, err := toolset.BuildTools(withRole("admin"), "a", echoTool("x"))
	require.NoError(t, err)
	_, err = tools.Call(withRole("viewer"), strings.Repeat("n", 1<<20), nil)
	var me *toolset.RunMismatchError
	require.ErrorAs(t, err, &me)
	assert.Less(t, len(err.Error()), 500)
}

func TestBuildToolsUnderCancelledContextFails(t *testing.T) {
	ctx, cancel := context.WithCancel(newRun("r"))
	cancel()
	// Functions only: no goroutine would notice the cancellation.
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTools("a", "b")...), echoTool("c"))
	require.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, tools)

	ctx, cancel = context.WithDeadline(newRun("r"), time.Now().Add(-time.Second))
	defer cancel()
	_, err = toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTool("a")))
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestBuildToolsCancelledDuringTheTurnFails(t *testing.T) {
	ctx, cancel := context.WithCancel(newRun("r"))
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
