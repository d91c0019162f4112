package toolset_test

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CallOrder says what each call of a turn waits for: every earlier call
// for a sequential tool, and everything after it for it; the latest call
// that shares a resource; nothing for the rest.
func TestCallOrder(t *testing.T) {
	noop := func(context.Context, struct{}) (string, error) { return "", nil }
	list, err := toolset.BuildTools(context.Background(), "a", toolset.NewFunction(
		toolset.NewTool("read", "Reads.", noop),
		toolset.NewTool("write_a", "Writes a.", noop, toolset.WithResource("a")),
		toolset.NewTool("write_ab", "Writes a and b.", noop, toolset.WithResource("a", "b", "a", "")),
		toolset.NewTool("write_b", "Writes b.", noop, toolset.WithResource("b")),
		toolset.NewTool("deploy", "Deploys.", noop, toolset.WithSequential()),
	))
	require.NoError(t, err)
	calls := func(names ...string) []toolset.ToolCall {
		out := make([]toolset.ToolCall, len(names))
		for i, n := range names {
			out[i] = toolset.ToolCall{Name: n}
		}
		return out
	}
	assert.Nil(t, list.CallOrder(calls("read", "read", "write_a", "write_b", "unknown")), "independent calls wait for nothing")
	assert.Equal(t, [][]int{nil, nil, {0}, {1, 2}, nil, {3}},
		list.CallOrder(calls("write_a", "write_b", "write_a", "write_ab", "read", "write_b")))
	assert.Equal(t, [][]int{nil, nil, {0, 1}, {2}, {2}, {2, 3, 4}, {5}},
		list.CallOrder(calls("read", "write_a", "deploy", "read", "unknown", "deploy", "write_a")))
	assert.Nil(t, list.CallOrder(nil))
}
