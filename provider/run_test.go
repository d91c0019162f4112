package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

type SleepArgs struct {
	Ms int `json:"ms"`
}

// turn builds a set with a tool that sleeps, one that fails and one that
// panics, counting the calls in flight.
func turn(t *testing.T, inFlight, peak *atomic.Int32) *toolset.ToolList {
	t.Helper()
	track := func() func() {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		return func() { inFlight.Add(-1) }
	}
	tools, err := toolset.BuildTools(t.Context(), "test",
		toolset.NewTool("sleep", "Sleep.", func(ctx context.Context, in SleepArgs) (int, error) {
			defer track()()
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
				return in.Ms, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}),
		toolset.NewTool("fail", "Fail.", func(ctx context.Context, _ struct{}) (string, error) {
			return "", errors.New("database is down")
		}),
		toolset.NewTool("retry", "Ask for a retry.", func(ctx context.Context, _ struct{}) (string, error) {
			return "", toolset.NewModelError("use a smaller page")
		}),
	)
	require.NoError(t, err)
	return tools
}

func call(id, name, args string) toolset.ToolCall {
	return toolset.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

func TestRunConcurrentInCallOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	var inFlight, peak atomic.Int32
	tools := turn(t, &inFlight, &peak)
	calls := []toolset.ToolCall{
		call("a", "sleep", `{"ms":60}`), // finishes last
		call("b", "sleep", `{"ms":1}`),
		call("c", "retry", `{}`),
		call("d", "nope", `{}`),
		call("e", "sleep", `{"ms":"x"}`),
	}
	start := time.Now()
	out, err := provider.Run(t.Context(), calls, 8, nil, tools.Execute)
	require.NoError(t, err)
	require.Len(t, out, 5)
	for i, o := range out {
		assert.Equal(t, calls[i], o.Call, "outcome %d is for call %d", i, i)
	}
	assert.Equal(t, 60, out[0].Result)
	assert.Equal(t, 1, out[1].Result)
	assert.Equal(t, provider.Outcome{Call: calls[2], IsError: true, Message: "use a smaller page"}, out[2])
	assert.True(t, out[3].IsError)
	assert.Contains(t, out[3].Message, `unknown tool "nope"`)
	assert.True(t, out[4].IsError)
	assert.Contains(t, out[4].Message, `"ms"`)
	assert.Equal(t, int32(2), peak.Load(), "both sleeps ran at once")
	assert.Less(t, time.Since(start), 600*time.Millisecond)
}

func TestRunBounded(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, limit := range []int{1, 2} {
		var inFlight, peak atomic.Int32
		tools := turn(t, &inFlight, &peak)
		calls := make([]toolset.ToolCall, 6)
		for i := range calls {
			calls[i] = call(string(rune('a'+i)), "sleep", `{"ms":10}`)
		}
		out, err := provider.Run(t.Context(), calls, limit, nil, tools.Execute)
		require.NoError(t, err)
		require.Len(t, out, 6)
		assert.Equal(t, int32(limit), peak.Load(), "at most %d calls at once", limit)
	}
}

func TestRunStopsOnRunError(t *testing.T) {
	defer goleak.VerifyNone(t)
	var inFlight, peak atomic.Int32
	tools := turn(t, &inFlight, &peak)
	calls := []toolset.ToolCall{
		call("a", "sleep", `{"ms":5000}`),
		call("b", "fail", `{}`),
	}
	start := time.Now()
	out, err := provider.Run(t.Context(), calls, 8, nil, tools.Execute)
	require.Nil(t, out)
	var ce *provider.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "b", ce.Call.ID, "the failing call is named, not the one it cancelled")
	var te *toolset.ToolError
	require.ErrorAs(t, err, &te)
	assert.EqualError(t, err, `tool call b of "fail": toolset: tool "fail": database is down`)
	assert.Less(t, time.Since(start), 2*time.Second, "the sleeping call was cancelled")
}

func TestRunSequentialStopsAtFirstRunError(t *testing.T) {
	var inFlight, peak atomic.Int32
	tools := turn(t, &inFlight, &peak)
	var ran []string
	var mu sync.Mutex
	exec := func(ctx context.Context, c toolset.ToolCall) (any, error) {
		mu.Lock()
		ran = append(ran, c.ID)
		mu.Unlock()
		return tools.Execute(ctx, c)
	}
	_, err := provider.Run(t.Context(), []toolset.ToolCall{call("a", "fail", `{}`), call("b", "sleep", `{"ms":1}`)}, 1, nil, exec)
	require.Error(t, err)
	assert.Equal(t, []string{"a"}, ran, "calls after a run-stopping error are not started")
}

func TestRunApprovals(t *testing.T) {
	defer goleak.VerifyNone(t)
	var sent []string
	var mu sync.Mutex
	run := toolset.NewRun("r")
	defer run.End()
	ctx := run.Turn(t.Context())
	payTool := toolset.NewTool("pay", "Pay.", func(_ context.Context, in SleepArgs) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, "paid")
		return in.Ms, nil
	}, toolset.WithApprovalRequired(func(_ context.Context, _ toolset.Tool, args json.RawMessage) (bool, error) {
		var in SleepArgs
		return json.Unmarshal(args, &in) == nil && in.Ms > 100, nil
	}))
	tools, err := toolset.BuildTools(ctx, "test", payTool)
	require.NoError(t, err)
	calls := []toolset.ToolCall{call("a", "pay", `{"ms":5}`), call("b", "pay", `{"ms":500}`), call("c", "pay", `{"ms":900}`)}

	_, err = provider.Run(ctx, calls, 8, nil, tools.Execute)
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need, "without an approver, a call waiting for approval stops the run")

	var asked []string
	approve := func(_ context.Context, c toolset.ToolCall) (bool, string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, c.ID)
		return c.ID == "b", "too much", nil
	}
	out, err := provider.Run(ctx, calls, 8, nil, provider.Approving(tools.Execute, approve))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"b", "c"}, asked, "only calls that need approval are put to the approver")
	assert.Equal(t, 5, out[0].Result)
	assert.Equal(t, 500, out[1].Result)
	assert.True(t, out[2].IsError)
	assert.Equal(t, `the call of tool "pay" was denied by a human: too much`, out[2].Message)

	failing := func(context.Context, toolset.ToolCall) (bool, string, error) {
		return false, "", errors.New("no one answered")
	}
	_, err = provider.Run(ctx, []toolset.ToolCall{call("d", "pay", `{"ms":700}`)}, 8, nil, provider.Approving(tools.Execute, failing))
	require.ErrorContains(t, err, "asking for approval: no one answered")

	// The approval a call waits for must be its own: a sub-agent's call
	// needing approval is not answered in the outer call's name.
	nested := func(ctx context.Context, c toolset.ToolCall) (any, error) {
		return nil, &toolset.ToolError{Tool: c.Name, Err: &toolset.ApprovalRequiredError{Call: call("inner", "pay", `{"ms":700}`)}}
	}
	asked = nil
	_, err = provider.Run(ctx, []toolset.ToolCall{call("outer", "delegate", `{}`)}, 8, nil, provider.Approving(nested, approve))
	require.ErrorAs(t, err, &need)
	assert.Empty(t, asked)

	// Without a run context nothing could record an answer: nobody is asked.
	noRun, err := toolset.BuildTools(t.Context(), "test", payTool)
	require.NoError(t, err)
	_, err = provider.Run(t.Context(), []toolset.ToolCall{call("e", "pay", `{"ms":700}`)}, 8, nil, provider.Approving(noRun.Execute, approve))
	require.ErrorContains(t, err, "approvals are recorded in the run")
	assert.Empty(t, asked)
}

func TestRunBadLimit(t *testing.T) {
	_, err := provider.Run(t.Context(), nil, 0, nil, nil)
	assert.EqualError(t, err, "concurrency limit must be at least 1, got 0")
}

func TestRunCancelledContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	var inFlight, peak atomic.Int32
	tools := turn(t, &inFlight, &peak)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := provider.Run(ctx, []toolset.ToolCall{call("a", "sleep", `{"ms":1}`), call("b", "sleep", `{"ms":1}`)}, 8, nil, tools.Execute)
	require.ErrorIs(t, err, context.Canceled)
}

func TestSegments(t *testing.T) {
	img := toolset.Part{MIMEType: "image/png", Data: []byte{1, 2}}
	audio := toolset.Part{MIMEType: "audio/wav", Data: []byte{1, 2, 3}}
	isImage := func(p toolset.Part) bool { return p.MIMEType == "image/png" }
	tests := []struct {
		name   string
		result any
		want   []provider.Segment
	}{
		{"string", "hi", []provider.Segment{{Text: "hi"}}},
		{"value", map[string]int{"n": 1}, []provider.Segment{{Text: `{"n":1}`}}},
		{"text and image in order", &toolset.Content{Parts: []toolset.Part{{Text: "before"}, img, {Text: "after"}}},
			[]provider.Segment{{Text: "before"}, {Media: &img}, {Text: "after"}}},
		{"unsupported media described", &toolset.Content{Parts: []toolset.Part{{Text: "a"}, audio}},
			[]provider.Segment{{Text: "a\n[audio/wav, 3 bytes]"}}},
		{"structured when no text", &toolset.Content{Parts: []toolset.Part{img}, Structured: map[string]int{"w": 2}},
			[]provider.Segment{{Media: &img}, {Text: `{"w":2}`}}},
		{"empty content", &toolset.Content{}, []provider.Segment{{Text: ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := provider.Segments(tt.result, isImage)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := provider.Segments(make(chan int), isImage)
	assert.ErrorContains(t, err, "encoding the result")
}

func TestRunHandlerGoexitStopsTheRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	// A handler that calls runtime.Goexit (t.FailNow in a test double, say)
	// used to end the goroutine running it, leaving the call's outcome
	// empty: the model was told the call returned null.
	tools, err := toolset.BuildTools(t.Context(), "test",
		toolset.NewTool("quit", "Quit.", func(context.Context, struct{}) (string, error) {
			runtime.Goexit()
			return "", nil
		}),
		toolset.NewTool("ok", "OK.", func(context.Context, struct{}) (string, error) { return "ok", nil }),
	)
	require.NoError(t, err)
	for _, calls := range [][]toolset.ToolCall{
		{call("q", "quit", `{}`)},
		{call("a", "ok", `{}`), call("q", "quit", `{}`), call("b", "ok", `{}`)},
	} {
		for _, limit := range []int{1, 8} {
			out, err := provider.Run(t.Context(), calls, limit, nil, tools.Execute)
			assert.Nil(t, out)
			var ce *provider.CallError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "q", ce.Call.ID)
			var pe *toolset.PanicError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "quit", pe.Tool)
			assert.ErrorIs(t, err, toolset.ErrGoexit)
		}
	}
}

func TestRunPanickingApproverStopsTheRun(t *testing.T) {
	run := toolset.NewRun("")
	defer run.End()
	ctx := run.Turn(t.Context())
	tools, err := toolset.BuildTools(ctx, "test", toolset.NewTool("pay", "Pay.", func(context.Context, struct{}) (string, error) { return "paid", nil },
		toolset.WithApprovalRequired(toolset.Always)))
	require.NoError(t, err)
	approve := func(context.Context, toolset.ToolCall) (bool, string, error) { panic("approver exploded") }
	calls := []toolset.ToolCall{call("a", "pay", `{}`), call("b", "pay", `{}`)}
	_, err = provider.Run(ctx, calls, 8, nil, provider.Approving(tools.Execute, approve))
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "approver", pe.Callback)
	assert.Equal(t, "approver exploded", pe.Value)
}

type explodingJSON struct{}

func (explodingJSON) MarshalJSON() ([]byte, error) { panic("MarshalJSON exploded") }

func TestSegmentsOfResultWhoseEncodingPanicsFail(t *testing.T) {
	img := toolset.Part{MIMEType: "image/png", Data: []byte{1}}
	for _, result := range []any{
		explodingJSON{},
		&toolset.Content{Structured: explodingJSON{}},
		&toolset.Content{Parts: []toolset.Part{img}, Structured: explodingJSON{}},
	} {
		var err error
		require.NotPanics(t, func() { _, err = provider.Segments(result, func(toolset.Part) bool { return true }) })
		var pe *toolset.PanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "result encoding", pe.Callback)
	}
}

// hostileError is an error whose Is method panics.
type hostileError struct{}

func (hostileError) Error() string { return "hostile" }
func (hostileError) Is(error) bool { panic("Is exploded") }

func TestRunSurvivesAPanicValueWhoseMethodsPanic(t *testing.T) {
	defer goleak.VerifyNone(t)
	tools, err := toolset.BuildTools(t.Context(), "test",
		toolset.NewTool("boom", "Panic.", func(context.Context, struct{}) (string, error) { panic(hostileError{}) }),
		toolset.NewTool("ok", "Succeed.", func(context.Context, struct{}) (string, error) { return "ok", nil }),
	)
	require.NoError(t, err)
	calls := []toolset.ToolCall{call("a", "ok", `{}`), call("b", "boom", `{}`)}
	require.NotPanics(t, func() { _, err = provider.Run(t.Context(), calls, 8, nil, tools.Execute) })
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, hostileError{}, pe.Value)
	assert.Equal(t, "b", err.(*provider.CallError).Call.ID)
}

// TestRunManyCallsBoundsItsGoroutines: a response with thousands of calls
// does not park a goroutine per call; all of them still run, in order.
func TestRunManyCallsBoundsItsGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n, limit = 5000, 4
	release := make(chan struct{})
	var ran atomic.Int32
	exec := func(ctx context.Context, c toolset.ToolCall) (any, error) {
		<-release
		ran.Add(1)
		return c.ID, nil
	}
	calls := make([]toolset.ToolCall, n)
	for i := range calls {
		calls[i] = call(string(rune('a'+i%26))+string(rune('0'+i%10)), "x", `{}`)
	}
	before := runtime.NumGoroutine()
	type result struct {
		out []provider.Outcome
		err error
	}
	got := make(chan result, 1)
	go func() {
		out, err := provider.Run(t.Context(), calls, limit, nil, exec)
		got <- result{out, err}
	}()
	// Let the run start every goroutine it is going to start while the
	// first calls are held.
	var peak int
	for range 50 {
		peak = max(peak, runtime.NumGoroutine()-before)
		time.Sleep(time.Millisecond)
	}
	close(release)
	r := <-got
	require.NoError(t, r.err)
	require.Len(t, r.out, n)
	assert.Equal(t, int32(n), ran.Load())
	for i, o := range r.out {
		require.Equal(t, calls[i].ID, o.Call.ID, "outcome %d in call order", i)
	}
	assert.LessOrEqual(t, peak, limit+300, "goroutines parked for %d calls", n)
}
