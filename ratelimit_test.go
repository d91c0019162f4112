package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
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

func TestSharedRateLimiterWindowIsSharedBetweenToolsWithOneKey(t *testing.T) {
	ctx := bounded(t)
	lim := toolset.NewMemoryRateLimiter()
	limit := toolset.RateLimit{Requests: 3, Interval: time.Hour, Reject: true, Limiter: lim, Key: "billing"}
	var runs atomic.Int64
	// Two tool values stand for the same tool in two processes.
	a := clones(t, ctx, counted("lookup", &runs, toolset.WithRateLimit(limit)))
	b := clones(t, ctx, counted("lookup", &runs, toolset.WithRateLimit(limit)))
	admitted := 0
	for i := range 6 {
		tools := a
		if i%2 == 1 {
			tools = b
		}
		_, err := call(t, ctx, tools, "lookup", `{"id":1}`)
		if err == nil {
			admitted++
			continue
		}
		var rle *toolset.RateLimitError
		require.ErrorAs(t, err, &rle)
		assert.InDelta(t, 20*time.Minute, rle.RetryAfter, float64(time.Second))
	}
	assert.Equal(t, 3, admitted)
	assert.EqualValues(t, 3, runs.Load())
}

func TestSharedRateLimiterDefaultKeyIsToolName(t *testing.T) {
	ctx := bounded(t)
	lim := toolset.NewMemoryRateLimiter()
	limit := toolset.RateLimit{Requests: 1, Interval: time.Hour, Reject: true, Limiter: lim}
	var runs atomic.Int64
	one := clones(t, ctx, counted("one", &runs, toolset.WithRateLimit(limit)))
	two := clones(t, ctx, counted("two", &runs, toolset.WithRateLimit(limit)))
	_, err := call(t, ctx, one, "renamed", `{"id":1}`)
	require.NoError(t, err)
	_, err = call(t, ctx, two, "two", `{"id":1}`)
	require.NoError(t, err, "another tool has its own window")
	_, err = call(t, ctx, one, "p_one", `{"id":1}`)
	var rle *toolset.RateLimitError
	require.ErrorAs(t, err, &rle, "the window is the tool's, across its names")
}

func TestSharedRateLimiterWaitsForItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limit := toolset.RateLimit{Requests: 1, Interval: time.Minute, Limiter: toolset.NewMemoryRateLimiter()}
		var runs atomic.Int64
		tools := clones(t, context.Background(), counted("lookup", &runs, toolset.WithRateLimit(limit)))
		start := time.Now()
		for range 3 {
			_, err := call(t, context.Background(), tools, "lookup", `{"id":1}`)
			require.NoError(t, err)
		}
		assert.Equal(t, 2*time.Minute, time.Since(start))

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := call(t, ctx, tools, "lookup", `{"id":1}`)
		require.ErrorIs(t, err, context.DeadlineExceeded, "a turn after the deadline is not waited for")
		assert.Equal(t, 2*time.Minute, time.Since(start), "it fails at once")
		assert.EqualValues(t, 3, runs.Load())
	})
}

func TestUnreachableRateLimiterRefusesTheCallForTheModel(t *testing.T) {
	ctx := bounded(t)
	var runs atomic.Int64
	tools := clones(t, ctx, counted("lookup", &runs,
		toolset.WithRateLimit(toolset.RateLimit{Requests: 10, Interval: time.Minute, Limiter: failingLimiter{}})))
	_, err := call(t, ctx, tools, "lookup", `{"id":1}`)
	var le *toolset.RateLimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "lookup", le.Tool)
	require.ErrorIs(t, err, errLimiterDown, "the limiter's error is kept for the program")
	assert.Zero(t, le.RetryAfter)
	msg, visible := toolset.ErrorText(err)
	require.True(t, visible, "the model sees it")
	assert.Contains(t, msg, "try again later")
	assert.NotContains(t, msg, "127.0.0.1", "the store's error is not the model's business")
	assert.Zero(t, runs.Load(), "a call whose limit cannot be checked does not run")
}

// failingLimiter is a RateLimiter whose store is unreachable.
type failingLimiter struct{}

var errLimiterDown = errors.New("dial tcp 127.0.0.1:6379: connection refused")

func (failingLimiter) Reserve(context.Context, string, toolset.RateLimit, time.Duration) (time.Duration, bool, error) {
	return 0, false, errLimiterDown
}

// announce makes the tool name as a client of a remote server makes it at
// each announcement: a new value, given the same options.
func announce(name string, runs *atomic.Int64, opts ...toolset.ToolOption) toolset.Tool {
	return toolset.NewRawTool(name, "Announced.", nil, func(context.Context, json.RawMessage) (any, error) {
		runs.Add(1)
		return "ok", nil
	}, opts...)
}

// A tool made again with the same name and origin, with the same options,
// keeps the rate window of the one before: announcing a tool anew does not
// give it a fresh window. Whatever the order of the options; another name
// or another origin has its own window; a tool with no origin made anew
// starts afresh, as before.
func TestRateWindowFollowsTheOrigin(t *testing.T) {
	ctx := context.Background()
	limit := toolset.WithRateLimit(toolset.RateLimit{Requests: 1, Interval: time.Hour, Reject: true})
	for name, opts := range map[string][]toolset.ToolOption{
		"origin first": {toolset.WithOrigin("mcp:web"), limit},
		"limit first":  {toolset.WithRateLimit(toolset.RateLimit{Requests: 1, Interval: time.Hour, Reject: true}), toolset.WithOrigin("mcp:web")},
	} {
		var runs atomic.Int64
		_, err := announce("search", &runs, opts...).Execute(ctx, toolset.ToolCall{Name: "search"})
		require.NoError(t, err, name)
		_, err = announce("search", &runs, opts...).Execute(ctx, toolset.ToolCall{Name: "search"})
		var rl *toolset.RateLimitError
		require.ErrorAs(t, err, &rl, "%s: the next announcement has the window of the first", name)
		assert.Equal(t, int64(1), runs.Load(), name)
		_, err = announce("fetch", &runs, opts...).Execute(ctx, toolset.ToolCall{Name: "fetch"})
		require.NoError(t, err, "%s: another tool of the origin has its own window", name)
	}
	var runs atomic.Int64
	_, err := announce("search", &runs, toolset.WithOrigin("mcp:other"), limit).Execute(ctx, toolset.ToolCall{Name: "search"})
	require.NoError(t, err, "another origin is another tool")
	for range 2 {
		_, err := announce("search", &runs, limit).Execute(ctx, toolset.ToolCall{Name: "search"})
		require.NoError(t, err, "a tool with no origin made anew starts afresh")
	}
}

// An origin that announces ever new names: the windows in use stay
// binding, and a window that refilled limits as a fresh one.
func TestRateWindowsOfManyNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		limit := toolset.WithRateLimit(toolset.RateLimit{Requests: 1, Interval: time.Minute, Reject: true})
		var runs atomic.Int64
		_, err := announce("busy", &runs, toolset.WithOrigin("mcp:web"), limit).Execute(ctx, toolset.ToolCall{Name: "busy"})
		require.NoError(t, err)
		// 2,000 names a second apart, windows of a minute: the windows are
		// pruned many times over (from 64 on) while about 60 are in use.
		for i := range 2_000 {
			name := fmt.Sprintf("t%d", i)
			_, err := announce(name, &runs, toolset.WithOrigin("mcp:web"), limit).Execute(ctx, toolset.ToolCall{Name: name})
			require.NoError(t, err)
			time.Sleep(time.Second)
		}
		_, err = announce("busy", &runs, toolset.WithOrigin("mcp:web"), limit).Execute(ctx, toolset.ToolCall{Name: "busy"})
		require.NoError(t, err, "a window that refilled limits nothing a fresh one does not")
		_, err = announce("busy", &runs, toolset.WithOrigin("mcp:web"), limit).Execute(ctx, toolset.ToolCall{Name: "busy"})
		var rl *toolset.RateLimitError
		require.ErrorAs(t, err, &rl, "the window in use is kept")
	})
}
