package mcptoolset_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notifications/tools/list_changed drops the cache; tools whose definition
// did not change are kept as they were.
func TestListChangedInvalidatesCache(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var calls counter
		ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")))
		defer ts.Close()
		before, err := ts.GetTools(ctx)
		require.NoError(t, err)
		tools, err := toolset.BuildTools(ctx, "agent", ts)
		require.NoError(t, err)
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "add_tool", Args: json.RawMessage(`{"name":"late"}`)})
		require.NoError(t, err)

		var after []toolset.Tool
		require.Eventually(t, func() bool {
			after, err = ts.GetTools(ctx)
			require.NoError(t, err)
			return len(after) == len(before)+1
		}, 5*time.Second, 10*time.Millisecond, "the new tool shows up")
		late := byName(t, after, "late")
		res, err := late.Execute(ctx, toolset.ToolCall{Args: nil})
		require.NoError(t, err)
		assert.Equal(t, "late ran", content(t, res).Parts[0].Text)
		read0, read1 := byName(t, before, "read_file"), byName(t, after, "read_file")
		assert.True(t, read0.Same(read1), "an unchanged tool keeps its identity")
		assert.Equal(t, 2, calls.get("tools/list"))
	})
}
