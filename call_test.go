package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
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

func TestCallValidation(t *testing.T) {
	tool := weatherTool()
	cases := []struct {
		name string
		args string
		want []toolset.ArgumentProblem
	}{
		{"missing required", `{"days": 3}`, []toolset.ArgumentProblem{
			{Field: "city", Message: "required field is missing; expected string (City name, e.g. Paris)"}}},
		{"wrong type", `{"city": 42, "days": 3}`, []toolset.ArgumentProblem{
			{Field: "city", Message: "expected string, got number"}}},
		{"unknown field", `{"city": "Paris", "days": 3, "country": "FR"}`, []toolset.ArgumentProblem{
			{Field: "country", Message: `unknown field; allowed fields: "city", "days", "units", "stops"`}}},
		{"enum", `{"city": "Paris", "days": 3, "units": "kelvin"}`, []toolset.ArgumentProblem{
			{Field: "units", Message: `must be one of "metric", "imperial"; got "kelvin"`}}},
		{"below minimum", `{"city": "Paris", "days": 0}`, []toolset.ArgumentProblem{
			{Field: "days", Message: "must be at least 1; got 0"}}},
		{"above maximum", `{"city": "Paris", "days": 15}`, []toolset.ArgumentProblem{
			{Field: "days", Message: "must be at most 14; got 15"}}},
		{"not an integer", `{"city": "Paris", "days": 1.5}`, []toolset.ArgumentProblem{
			{Field: "days", Message: "expected integer, got number"}}},
		{"nested", `{"city": "Paris", "days": 2, "stops": [{"name": "a"}, {"nam": "b"}]}`, []toolset.ArgumentProblem{
			{Field: "stops[1].nam", Message: `unknown field; allowed fields: "name"`},
			{Field: "stops[1].name", Message: "required field is missing; expected string (Stop name)"}}},
		{"not an object", `["Paris"]`, []toolset.ArgumentProblem{
			{Message: "expected object, got array"}}},
		{"every problem at once", `{"days": 0, "units": "kelvin", "x": 1}`, []toolset.ArgumentProblem{
			{Field: "city", Message: "required field is missing; expected string (City name, e.g. Paris)"},
			{Field: "days", Message: "must be at least 1; got 0"},
			{Field: "units", Message: `must be one of "metric", "imperial"; got "kelvin"`},
			{Field: "x", Message: `unknown field; allowed fields: "city", "days", "units", "stops"`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(c.args)})
			var ae *toolset.ArgumentError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "get_weather", ae.Tool)
			assert.Equal(t, c.want, ae.Problems)
			msg, visible := toolset.ErrorText(err)
			require.True(t, visible, "argument errors are for the model")
			for _, p := range c.want {
				assert.Contains(t, msg, p.Message)
			}
			assert.Contains(t, msg, "call the tool again")
		})
	}
}

func TestCallMalformedJSON(t *testing.T) {
	_, err := weatherTool().Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"city": "Par`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae)
	require.Len(t, ae.Problems, 1)
	assert.Contains(t, ae.Problems[0].Message, "not valid JSON")
	assert.Contains(t, ae.Problems[0].Message, "at byte")

	_, err = weatherTool().Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"city":"a","days":1} {}`)})
	require.ErrorAs(t, err, &ae)
	assert.Contains(t, ae.Problems[0].Message, "not valid JSON")
}

func TestCallSuccess(t *testing.T) {
	got, err := weatherTool().Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"city":"Paris","days":3,"units":"metric"}`)})
	require.NoError(t, err)
	assert.Equal(t, forecast{City: "Paris", Temp: 21.5}, got)
}

func TestCallPanickingHandler(t *testing.T) {
	tool := toolset.NewTool("boom", "", func(context.Context, struct{}) (int, error) { panic("kaboom") })
	tools, err := toolset.BuildTools(context.Background(), "a", toolset.NewRenamed(tool, map[string]string{"boom": "explode"}))
	require.NoError(t, err)
	_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "explode", Args: nil})
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "explode", pe.Tool)
	assert.Equal(t, "kaboom", pe.Value)
	assert.Contains(t, string(pe.Stack), "call_test.go")
	assert.EqualError(t, err, `toolset: tool "explode" panicked: kaboom`)
	_, visible := toolset.ErrorText(err)
	assert.False(t, visible, "a panic stops the run")
}

func TestCallHandlerErrors(t *testing.T) {
	fail := errors.New("database is down")
	tool := toolset.NewTool("lookup", "", func(_ context.Context, in struct {
		Retry bool `json:"retry"`
	}) (int, error) {
		if in.Retry {
			return 0, toolset.ModelErrorf("no user %q; try the email address", "ada")
		}
		return 0, fail
	})
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"retry": false}`)})
	require.ErrorIs(t, err, fail)
	var te *toolset.ToolError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "lookup", te.Tool)
	_, visible := toolset.ErrorText(err)
	assert.False(t, visible, "a plain handler error stops the run")

	_, err = tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"retry": true}`)})
	msg, visible := toolset.ErrorText(err)
	require.True(t, visible)
	assert.Equal(t, `no user "ada"; try the email address`, msg)
}

func TestCallCancelledContext(t *testing.T) {
	ran := false
	tool := toolset.NewTool("slow", "", func(context.Context, struct{}) (int, error) { ran = true; return 1, nil })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tool.Execute(ctx, toolset.ToolCall{Args: nil})
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), `tool "slow" not called`)
	assert.False(t, ran)
}
