package toolset_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

func TestProgressReachesTheCallersCallback(t *testing.T) {
	tool := toolset.NewRawTool("work", "Do some work.", nil, func(ctx context.Context, _ json.RawMessage) (any, error) {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "half", Fraction: 0.5})
		toolset.ReportProgress(ctx, toolset.Progress{Message: "odd", Fraction: math.NaN()})
		toolset.ReportProgress(ctx, toolset.Progress{Message: "over", Fraction: 7})
		return "done", nil
	})
	var got []toolset.Progress
	ctx := toolset.WithProgress(context.Background(), func(p toolset.Progress) { got = append(got, p) })
	assert.True(t, toolset.HasProgress(ctx))
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(tool))
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "work", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, []toolset.Progress{{"half", 0.5}, {"odd", -1}, {"over", -1}}, got)
}

func TestProgressWithoutCallbackIsANoOp(t *testing.T) {
	ctx := context.Background()
	assert.False(t, toolset.HasProgress(ctx))
	toolset.ReportProgress(ctx, toolset.Progress{Message: "nobody listens"})
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "x", Fraction: 0.1})
	}))
}

func TestPanickingProgressCallbackDoesNotFailTheCall(t *testing.T) {
	ctx := toolset.WithProgress(context.Background(), func(toolset.Progress) { panic("boom") })
	tool := toolset.NewRawTool("work", "Do some work.", nil, func(ctx context.Context, _ json.RawMessage) (any, error) {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "x"})
		return "done", nil
	})
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(tool))
	require.NoError(t, err)
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "work", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, "done", res)
	ctx = toolset.WithProgress(ctx, nil)
	assert.False(t, toolset.HasProgress(ctx), "nil removes the callback")
}
