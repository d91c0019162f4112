package toolset_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRateLimitReject(t *testing.T) {
	var runs atomic.Int64
	tool := counted("lookup", &runs, toolset.WithRateLimit(toolset.RateLimit{Requests: 2, Interval: time.Hour, Reject: true}))
	tools := clones(t, context.Background(), tool)
	_, err := call(t, context.Background(), tools, "lookup", `{"id":1}`)
	require.NoError(t, err)
	_, err = call(t, context.Background(), tools, "p_lookup", `{"id":1}`)
	require.NoError(t, err)
	_, err = call(t, context.Background(), tools, "renamed", `{"id":1}`)
	var rle *toolset.RateLimitError
	require.ErrorAs(t, err, &rle, "the window is the tool's, across its names")
	assert.Equal(t, "renamed", rle.Tool)
	assert.InDelta(t, 30*time.Minute, rle.RetryAfter, float64(time.Second))
	msg, visible := toolset.ErrorText(err)
	require.True(t, visible)
	assert.Equal(t, `tool "renamed" is rate limited; try again in 30m0s`, msg)
	assert.Equal(t, int64(2), runs.Load())
}

func TestRateLimitWait(t *testing.T) {
	synctest.Test(t, testRateLimitWait)
}

func testRateLimitWait(t *testing.T) {
	var runs atomic.Int64
	tool := counted("lookup", &runs, toolset.WithRateLimit(toolset.RateLimit{Requests: 1, Interval: 80 * time.Millisecond, Burst: 1}))
	tools := clones(t, context.Background(), tool)
	start := time.Now()
	for _, name := range []string{"lookup", "p_lookup", "renamed"} {
		_, err := call(t, context.Background(), tools, name, `{"id":1}`)
		require.NoError(t, err)
	}
	assert.GreaterOrEqual(t, time.Since(start), 140*time.Millisecond, "the later calls waited their turn")

	slow := counted("slow", &runs, toolset.WithRateLimit(toolset.RateLimit{Requests: 1, Interval: time.Hour}))
	_, err := slow.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = slow.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
	require.ErrorContains(t, err, "waiting for its rate limit")
	_, visible := toolset.ErrorText(err)
	assert.False(t, visible)
}
