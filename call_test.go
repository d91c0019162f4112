package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The steps of the call path run in the documented order; each test case
// stops the call at one step and checks that the later steps did not run.
func TestCallPathOrder(t *testing.T) {
	var steps []string
	var mu sync.Mutex
	mark := func(s string) { mu.Lock(); steps = append(steps, s); mu.Unlock() }
	var needApproval atomic.Bool
	tool := toolset.NewTool("op", "", func(_ context.Context, in lookupArgs) (int, error) {
		mark("handler")
		return in.ID, nil
	},
		toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) {
			mark("approval")
			return needApproval.Load(), nil
		}),
		toolset.WithRateLimit(toolset.RateLimit{Requests: 3, Interval: time.Hour, Reject: true}),
		toolset.WithCache(toolset.CachePolicy{}),
		toolset.WithMiddleware(func(next toolset.Handler) toolset.Handler {
			return func(ctx context.Context, c toolset.ToolCall) (any, error) { mark("middleware"); return next(ctx, c) }
		}),
		toolset.WithMaxFailures(5),
	)
	ctx := testRun(t, "r").Turn(bounded(t))
	tools := clones(t, ctx, tool)
	run := func(args string) error {
		steps = nil
		_, err := tools.Execute(ctx, toolset.ToolCall{ID: "x", Name: "p_op", Args: json.RawMessage(args)})
		return err
	}

	require.NoError(t, run(`{"id":1}`))
	assert.Equal(t, []string{"approval", "middleware", "handler"}, steps, "a miss runs every step")

	var ae *toolset.ArgumentError
	require.ErrorAs(t, run(`{"id":"one"}`), &ae)
	assert.Empty(t, steps, "invalid arguments stop before the approval")

	needApproval.Store(true)
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, run(`{"id":1}`), &need, "the approval comes before the cache")
	assert.Equal(t, []string{"approval"}, steps)
	needApproval.Store(false)

	for range 3 {
		require.NoError(t, run(`{"id":1}`))
		assert.Equal(t, []string{"approval"}, steps, "a hit stops after the cache: no middleware or handler")
	}

	// One token was spent (the miss): hits, refusals and invalid calls took none.
	require.NoError(t, run(`{"id":2}`))
	require.NoError(t, run(`{"id":3}`))
	var rle *toolset.RateLimitError
	require.ErrorAs(t, run(`{"id":4}`), &rle, "the rate limit comes after the cache")
	assert.Equal(t, []string{"approval"}, steps, "a refused call runs no middleware")
}

func TestConcurrentCallsThroughThreeNames(t *testing.T) {
	defer goleak.VerifyNone(t)
	var runs atomic.Int64
	tool := counted("lookup", &runs,
		toolset.WithCache(toolset.CachePolicy{MaxEntries: 8}),
		toolset.WithRateLimit(toolset.RateLimit{Requests: 1000000, Interval: time.Second}),
		toolset.WithTimeout(time.Minute, toolset.TimeoutTellModel),
		toolset.WithMaxFailures(1000))
	ctx := newRun(t, "r")
	tools := clones(t, ctx, tool)
	names := []string{"lookup", "p_lookup", "renamed"}
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 50 {
				id := (g + i) % 16
				got, err := tools.Execute(ctx, toolset.ToolCall{Name: names[(g+i)%3], Args: json.RawMessage(fmt.Sprintf(`{"id":%d}`, id))})
				if !assert.NoError(t, err) {
					return
				}
				assert.True(t, strings.HasPrefix(got.(string), fmt.Sprintf("record %d ", id)))
			}
		})
	}
	wg.Wait()
	stats := tool.CacheStats()
	assert.Equal(t, uint64(64*50), stats.Hits+stats.Misses)
	assert.Positive(t, stats.Hits)
}
