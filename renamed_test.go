package toolset_test

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenamed(t *testing.T) {
	ctx := context.Background()
	base := toolset.NewFunction(echoTools("execute_query", "list_tables", "drop")...)
	assert.Equal(t, []string{"sql", "list_tables", "drop"}, names(t, ctx, base.Renamed(map[string]string{"execute_query": "sql", "missing": "x"})))

	t.Run("swap", func(t *testing.T) {
		swapped := base.Renamed(map[string]string{"execute_query": "list_tables", "list_tables": "execute_query"})
		assert.Equal(t, []string{"list_tables", "execute_query", "drop"}, names(t, ctx, swapped))
		tools, err := toolset.BuildTools(ctx, "a", swapped)
		require.NoError(t, err)
		got, err := tools.Execute(ctx, toolset.ToolCall{Name: "list_tables", Args: nil})
		require.NoError(t, err)
		assert.Equal(t, "execute_query", got, "the name follows the map, the code follows the tool")
	})

	t.Run("collision", func(t *testing.T) {
		_, err := base.Renamed(map[string]string{"execute_query": "drop"}).GetTools(ctx)
		require.EqualError(t, err, `toolset: Renamed has tool name conflicts:
  - "drop" contributed by: "execute_query" (renamed), "drop"
hint: rename the tools to different names`)
		_, err = base.Renamed(map[string]string{"execute_query": "x", "list_tables": "x"}).GetTools(ctx)
		require.EqualError(t, err, `toolset: Renamed has tool name conflicts:
  - "x" contributed by: "execute_query" (renamed), "list_tables" (renamed)
hint: rename the tools to different names`)
	})

	t.Run("collision with a hidden tool is fine", func(t *testing.T) {
		hideDrop := base.Filtered(func(_ context.Context, tool toolset.Tool) (bool, error) { return tool.Name != "drop", nil })
		assert.Equal(t, []string{"drop", "list_tables"}, names(t, ctx, hideDrop.Renamed(map[string]string{"execute_query": "drop"})))
	})
}

// TestRenameCollisionIsNameConflictError brings two tools onto one name,
// and a tool onto the name of another: the error is the *NameConflictError
// of every other conflict, however deep the Renamed sits, and names both
// tools by their old names.
func TestRenameCollisionIsNameConflictError(t *testing.T) {
	ctx := context.Background()
	base := toolset.NewFunction(echoTools("execute_query", "list_tables", "drop")...).WithLabel("db")
	cases := []struct {
		name  string
		names map[string]string
		want  toolset.NameConflict
	}{
		{"two onto one", map[string]string{"execute_query": "x", "list_tables": "x"},
			toolset.NameConflict{Name: "x", Contributors: []string{`"execute_query" (renamed)`, `"list_tables" (renamed)`}}},
		{"onto an existing name", map[string]string{"execute_query": "drop"},
			toolset.NameConflict{Name: "drop", Contributors: []string{`"execute_query" (renamed)`, `"drop"`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base.Renamed(c.names)
			for _, ts := range []toolset.Toolset{r, toolset.NewCombined(echoTool("other"), r), r.Prefixed("p")} {
				_, err := toolset.BuildTools(ctx, "a", ts)
				var nce *toolset.NameConflictError
				require.ErrorAs(t, err, &nce)
				assert.Equal(t, "db", nce.Toolset)
				assert.Equal(t, []toolset.NameConflict{c.want}, nce.Conflicts)
				assert.Contains(t, err.Error(), "hint: rename the tools to different names")
			}
		})
	}
}
