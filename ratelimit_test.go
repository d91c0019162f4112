package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	ctx := bounded(t)
	tools := clones(t, ctx, tool)
	_, err := call(t, ctx, tools, "lookup", `{"id":1}`)
	require.NoError(t, err)
	_, err = call(t, ctx, tools, "p_lookup", `{"id":1}`)
	require.NoError(t, err)
	_, err = call(t, ctx, tools, "renamed", `{"id":1}`)
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

// A rejecting limit refuses a call over it at once, even when its turn
// would come long before the context's deadline (or with no deadline):
// it never waits. In a bubble, a limit that waited instead would pass the
// minute at once and let the call through, and the test fail.
func TestRateLimitRejectNeverWaits(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), inBubble(func(t *testing.T) {
			limit := toolset.RateLimit{Requests: 1, Interval: time.Minute, Burst: 1, Reject: true}
			if shared {
				limit.Limiter = toolset.NewMemoryRateLimiter()
			}
			var runs atomic.Int64
			tool := counted("lookup", &runs, toolset.WithRateLimit(limit))
			for _, deadline := range []bool{false, true} {
				ctx := context.Background()
				if deadline {
					// A deadline long after the call's turn.
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Hour)
					defer cancel()
				}
				start := time.Now()
				_, err := tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
				require.NoError(t, err)
				_, err = tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
				var rle *toolset.RateLimitError
				require.ErrorAs(t, err, &rle, "a call over a rejecting limit fails (deadline %v)", deadline)
				assert.Equal(t, time.Minute, rle.RetryAfter)
				assert.Zero(t, time.Since(start), "it fails at once: the call did not wait for its turn")
				time.Sleep(time.Minute)
			}
			assert.EqualValues(t, 2, runs.Load())
		}))
	}
}
