package provider_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// A call ordered after a call waiting for approval is held back with it,
// whatever the concurrency: run one at a time, it must not run ahead of
// the call it waits for.
func TestRunPausingHoldsOrderedCalls(t *testing.T) {
	defer goleak.VerifyNone(t)
	handler := func(ctx context.Context, _ struct{}) (string, error) { return "", nil }
	list, err := toolset.BuildTools(t.Context(), "a", toolset.NewFunction(
		toolset.NewTool("read", "Reads.", handler),
		toolset.NewTool("write", "Writes the file.", handler, toolset.WithResource("file")),
	))
	require.NoError(t, err)
	calls := []toolset.ToolCall{call("w1", "write", `{}`), call("w2", "write", `{}`), call("r1", "read", `{}`)}
	for _, n := range []int{1, 2, 8} {
		var mu sync.Mutex
		var ran []string
		exec := func(ctx context.Context, c toolset.ToolCall) (any, error) {
			if c.ID == "w1" {
				return nil, &toolset.ApprovalRequiredError{Call: c}
			}
			mu.Lock()
			ran = append(ran, c.ID)
			mu.Unlock()
			return c.ID, nil
		}
		conv := func(o provider.Outcome) (any, error) { return o.Result, nil }
		o := provider.Apply([]func(*provider.Options){provider.WithMaxConcurrency(n)})
		results, didRun, err := provider.RunPausing(t.Context(), "test", list, calls, o, exec, conv)
		var need *toolset.ApprovalRequiredError
		require.True(t, errors.As(err, &need), "concurrency %d: %v", n, err)
		assert.Equal(t, "w1", need.Call.ID)
		assert.Equal(t, []string{"r1"}, ran, "concurrency %d: only the independent call ran", n)
		assert.Equal(t, []bool{false, false, true}, didRun, "concurrency %d", n)
		assert.Equal(t, []any{"r1"}, results, "concurrency %d", n)
	}
}
