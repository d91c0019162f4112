package toolset_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFilteredPerTurn(t *testing.T) {
	users := toolset.NewFunction(
		echoTool("get_user"),
		toolset.NewTool("delete_user", "Delete a user.", func(context.Context, struct{}) (string, error) { return "deleted", nil },
			toolset.WithMetadata(map[string]string{"audience": "admin"})),
	).Filtered(adminsOnly)

	assert.Equal(t, []string{"get_user", "delete_user"}, names(t, withRole(t, "admin"), users))
	assert.Equal(t, []string{"get_user"}, names(t, withRole(t, "guest"), users))
	assert.Equal(t, []string{"get_user"}, names(t, context.Background(), users), "no run context: no role")

	// A tool hidden this turn cannot be called, even by a model that knows its name.
	guest := withRole(t, "guest")
	tools, err := toolset.BuildTools(guest, "a", users)
	require.NoError(t, err)
	_, err = tools.Execute(guest, toolset.ToolCall{Name: "delete_user", Args: nil})
	var ue *toolset.UnknownToolError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, []string{"get_user"}, ue.Available)

	adminCtx := withRole(t, "admin")
	admin, err := toolset.BuildTools(adminCtx, "a", users)
	require.NoError(t, err)
	got, err := admin.Execute(adminCtx, toolset.ToolCall{Name: "delete_user", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "deleted", got)
}

func TestFilteredFailsClosedAndLogs(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	broken := toolset.NewFunction(echoTools("a", "b")...).Filtered(func(_ context.Context, tool toolset.Tool) (bool, error) {
		if tool.Name == "b" {
			return true, errors.New("policy service unavailable")
		}
		return true, nil
	})
	assert.Equal(t, []string{"a"}, names(t, context.Background(), broken))
	log := buf.String()
	assert.Contains(t, log, "level=ERROR")
	assert.Contains(t, log, "tool=b")
	assert.Contains(t, log, "policy service unavailable")

	_, err := toolset.NewFiltered(toolset.NewFunction(), nil).GetTools(context.Background())
	require.EqualError(t, err, "toolset: Filtered: nil predicate")
}
