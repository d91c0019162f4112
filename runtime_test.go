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
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

type lookupArgs struct {
	ID   int    `json:"id"`
	Note string `json:"note,omitempty"`
}

// counted returns a tool whose handler counts its runs.
func counted(name string, runs *atomic.Int64, opts ...toolset.ToolOption) toolset.Tool {
	return toolset.NewTool(name, "Look a record up.", func(_ context.Context, in lookupArgs) (string, error) {
		n := runs.Add(1)
		if in.ID < 0 {
			return "", errors.New("negative id")
		}
		return fmt.Sprintf("record %d (run %d)", in.ID, n), nil
	}, opts...)
}

// clones builds a turn where the same tool is offered under three names:
// itself, a prefixed copy and a renamed copy.
func clones(t *testing.T, ctx context.Context, tool toolset.Tool) *toolset.ToolList {
	t.Helper()
	f := toolset.NewFunction(tool)
	tools, err := toolset.BuildTools(ctx, "a", f, f.Prefixed("p"), f.Renamed(map[string]string{tool.Name: "renamed"}))
	require.NoError(t, err)
	return tools
}

func newRun(id string) context.Context {
	return toolset.NewContext(context.Background(), &toolset.RunContext{RunID: id, Agent: "a"})
}

func call(t *testing.T, ctx context.Context, tools *toolset.ToolList, name, args string) (any, error) {
	t.Helper()
	return tools.Call(ctx, name, json.RawMessage(args))
}

func TestCacheSharedByCopies(t *testing.T) {
	var runs atomic.Int64
	tool := counted("lookup", &runs, toolset.WithCache(toolset.CachePolicy{}))
	ctx := newRun("r")
	tools := clones(t, ctx, tool)

	first, err := call(t, ctx, tools, "lookup", `{"id":1,"note":"x"}`)
	require.NoError(t, err)
	for _, name := range []string{"p_lookup", "renamed", "lookup"} {
		got, err := call(t, ctx, tools, name, ` { "note" : "x", "id" : 1 } `)
		require.NoError(t, err)
		assert.Equal(t, first, got, "%s reads the entry the original filled", name)
	}
	assert.Equal(t, int64(1), runs.Load())
	assert.Equal(t, toolset.CacheStats{Hits: 3, Misses: 1}, tool.CacheStats())

	_, err = call(t, ctx, tools, "p_lookup", `{"id":2}`)
	require.NoError(t, err)
	assert.Equal(t, int64(2), runs.Load(), "other arguments miss")

	// Errors are not cached.
	for range 2 {
		_, err = call(t, ctx, tools, "renamed", `{"id":-1}`)
		require.Error(t, err)
	}
	assert.Equal(t, int64(4), runs.Load())
}

func TestCacheCanonicalKeys(t *testing.T) {
	var runs atomic.Int64
	tool := toolset.NewRawTool("echo", "", &jsonschema.Schema{Type: "object"}, func(_ context.Context, args json.RawMessage) (any, error) {
		runs.Add(1)
		return string(args), nil
	}, toolset.WithCache(toolset.CachePolicy{}))
	same := []string{`{"b":1,"a":2}`, `{"a":2, "b":1}`, "{\n\"a\": 2.0,\t\"b\": 1e0}"}
	for _, args := range same {
		_, _ = tool.Call(context.Background(), json.RawMessage(args))
	}
	assert.Equal(t, toolset.CacheStats{Hits: 2, Misses: 1}, tool.CacheStats())
}

func TestCachePolicyBounds(t *testing.T) {
	t.Run("max entries evicts least recently used", func(t *testing.T) {
		var runs atomic.Int64
		tool := counted("l", &runs, toolset.WithCache(toolset.CachePolicy{MaxEntries: 2}))
		ctx := context.Background()
		for _, id := range []int{1, 2, 1, 3, 1, 2} {
			_, err := tool.Call(ctx, json.RawMessage(fmt.Sprintf(`{"id":%d}`, id)))
			require.NoError(t, err)
		}
		// 1 miss, 2 miss, 1 hit, 3 miss (evicts 2), 1 hit, 2 miss.
		assert.Equal(t, toolset.CacheStats{Hits: 2, Misses: 4}, tool.CacheStats())
	})
	t.Run("ttl", func(t *testing.T) {
		var runs atomic.Int64
		tool := counted("l", &runs, toolset.WithCache(toolset.CachePolicy{TTL: 30 * time.Millisecond}))
		ctx := context.Background()
		_, _ = tool.Call(ctx, json.RawMessage(`{"id":1}`))
		_, _ = tool.Call(ctx, json.RawMessage(`{"id":1}`))
		time.Sleep(60 * time.Millisecond)
		_, _ = tool.Call(ctx, json.RawMessage(`{"id":1}`))
		assert.Equal(t, toolset.CacheStats{Hits: 1, Misses: 2}, tool.CacheStats())
		assert.Equal(t, int64(2), runs.Load())
	})
	t.Run("max bytes", func(t *testing.T) {
		tool := toolset.NewTool("big", "", func(_ context.Context, in lookupArgs) (string, error) {
			return strings.Repeat("x", in.ID), nil
		}, toolset.WithCache(toolset.CachePolicy{MaxBytes: 100}))
		ctx := context.Background()
		for _, args := range []string{`{"id":60}`, `{"id":60}`, `{"id":50}`, `{"id":60}`, `{"id":500}`, `{"id":500}`} {
			_, err := tool.Call(ctx, json.RawMessage(args))
			require.NoError(t, err)
		}
		// 60 miss, 60 hit, 50 miss (60+50 > 100: evicts 60), 60 miss (evicts 50), 500 too big twice.
		assert.Equal(t, toolset.CacheStats{Hits: 1, Misses: 5}, tool.CacheStats())
	})
	t.Run("custom key and should-cache", func(t *testing.T) {
		var runs atomic.Int64
		tool := counted("l", &runs, toolset.WithCache(toolset.CachePolicy{
			Key: func(_ context.Context, args json.RawMessage) (string, error) {
				var in lookupArgs
				err := json.Unmarshal(args, &in)
				if in.ID == 13 {
					return "", errors.New("unlucky")
				}
				return fmt.Sprint(in.ID), err // the note does not matter
			},
			ShouldCache: func(res any) bool { return !strings.HasPrefix(res.(string), "record 7 ") },
		}))
		ctx := context.Background()
		for _, args := range []string{`{"id":1,"note":"a"}`, `{"id":1,"note":"b"}`, `{"id":7}`, `{"id":7}`} {
			_, err := tool.Call(ctx, json.RawMessage(args))
			require.NoError(t, err)
		}
		assert.Equal(t, int64(3), runs.Load())
		_, err := tool.Call(ctx, json.RawMessage(`{"id":13}`))
		require.ErrorContains(t, err, "cache key: unlucky")
		var ae *toolset.ArgumentError
		_, err = tool.Call(ctx, json.RawMessage(`{"id":"x"}`))
		require.ErrorAs(t, err, &ae, "the key function sees only valid arguments")
	})
}

func TestCacheRunScope(t *testing.T) {
	var runs atomic.Int64
	tool := counted("lookup", &runs, toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun}))
	r1, r2 := newRun("r1"), newRun("r2")
	for _, ctx := range []context.Context{r1, r1, r2, r2} {
		_, err := call(t, ctx, clones(t, ctx, tool), "renamed", `{"id":1}`)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(2), runs.Load(), "each run fills its own cache")
	none := clones(t, context.Background(), tool)
	_, _ = call(t, context.Background(), none, "p_lookup", `{"id":1}`)
	_, _ = call(t, context.Background(), none, "p_lookup", `{"id":1}`)
	assert.Equal(t, int64(4), runs.Load(), "no run, no run-scoped cache")
}

func TestCacheSingleflight(t *testing.T) {
	defer goleak.VerifyNone(t)
	var runs atomic.Int64
	tool := toolset.NewTool("slow", "", func(_ context.Context, in lookupArgs) (int, error) {
		runs.Add(1)
		time.Sleep(100 * time.Millisecond)
		return in.ID, nil
	}, toolset.WithCache(toolset.CachePolicy{}))
	tools := clones(t, context.Background(), tool)
	start := make(chan struct{})
	var wg sync.WaitGroup
	names := []string{"slow", "p_slow", "renamed"}
	for i := range 12 {
		wg.Go(func() {
			<-start
			got, err := tools.Call(context.Background(), names[i%3], json.RawMessage(`{"id":5}`))
			assert.NoError(t, err)
			assert.Equal(t, 5, got)
		})
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(1), runs.Load(), "concurrent identical calls on a cold key run the handler once")
}

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
	_, err := slow.Call(context.Background(), json.RawMessage(`{"id":1}`))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = slow.Call(ctx, json.RawMessage(`{"id":1}`))
	require.ErrorContains(t, err, "waiting for its rate limit")
	_, visible := toolset.ErrorText(err)
	assert.False(t, visible)
}

func TestTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	var sawDeadline atomic.Bool
	sleepy := func(opts ...toolset.ToolOption) toolset.Tool {
		return toolset.NewTool("sleepy", "", func(ctx context.Context, in lookupArgs) (string, error) {
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < time.Second {
				sawDeadline.Store(true)
			}
			select {
			case <-time.After(time.Duration(in.ID) * time.Millisecond):
				return "done", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}, opts...)
	}
	tools := clones(t, context.Background(), sleepy(toolset.WithTimeout(50*time.Millisecond, toolset.TimeoutTellModel)))
	start := time.Now()
	_, err := call(t, context.Background(), tools, "p_sleepy", `{"id":5000}`)
	var te *toolset.TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Less(t, time.Since(start), 2*time.Second, "the handler's context was cancelled at the deadline")
	assert.True(t, sawDeadline.Load())
	msg, visible := toolset.ErrorText(err)
	require.True(t, visible)
	assert.Equal(t, `tool "p_sleepy" timed out after 50ms; try again with a smaller request, or another approach`, msg)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	got, err := call(t, context.Background(), tools, "renamed", `{"id":1}`)
	require.NoError(t, err)
	assert.Equal(t, "done", got)

	abort := clones(t, context.Background(), sleepy(toolset.WithTimeout(30*time.Millisecond, toolset.TimeoutAbortRun)))
	_, err = call(t, context.Background(), abort, "renamed", `{"id":5000}`)
	var ae *toolset.AbortError
	require.ErrorAs(t, err, &ae)
	assert.EqualError(t, err, `toolset: tool "renamed" timed out after 30ms; the run stops`)
	_, visible = toolset.ErrorText(err)
	assert.False(t, visible)

	// A handler that answers the deadline with a message for the model
	// keeps it.
	polite := toolset.NewTool("polite", "", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", toolset.NewModelError("ask for fewer rows")
	}, toolset.WithTimeout(10*time.Millisecond, toolset.TimeoutAbortRun))
	_, err = polite.Call(context.Background(), nil)
	msg, visible = toolset.ErrorText(err)
	require.True(t, visible, "%v", err)
	assert.Contains(t, msg, "ask for fewer rows")

	// The caller's own cancellation is not the tool's timeout.
	started := make(chan struct{})
	patient := toolset.NewTool("patient", "", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}, toolset.WithTimeout(time.Minute, toolset.TimeoutTellModel))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err = patient.Call(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.As(err, &te))
}

func TestTimeoutContextBehavesLikeWithDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	var inner context.Context
	tool := toolset.NewTool("t", "", func(ctx context.Context, _ struct{}) (string, error) {
		// A child context and a context.AfterFunc hang off the handler's context.
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() { close(fired) })
		defer stop()
		inner = child
		<-child.Done()
		<-fired
		return "", child.Err()
	}, toolset.WithTimeout(30*time.Millisecond, toolset.TimeoutTellModel))
	_, err := tool.Call(context.Background(), nil)
	var te *toolset.TimeoutError
	require.ErrorAs(t, err, &te)
	require.ErrorIs(t, inner.Err(), context.DeadlineExceeded)

	quick := toolset.NewTool("q", "", func(ctx context.Context, _ struct{}) (string, error) {
		inner = ctx
		return "ok", ctx.Err()
	}, toolset.WithTimeout(time.Minute, toolset.TimeoutTellModel))
	_, err = quick.Call(context.Background(), nil)
	require.NoError(t, err)
	require.ErrorIs(t, inner.Err(), context.Canceled, "the context is cancelled once the call returns")
	<-inner.Done()
}

func TestRetries(t *testing.T) {
	var runs atomic.Int64
	flaky := toolset.NewTool("flaky", "Sometimes fails.", func(_ context.Context, in lookupArgs) (string, error) {
		runs.Add(1)
		if in.ID == 0 {
			return "", toolset.NewModelError("id must not be zero")
		}
		return "ok", nil
	}, toolset.WithMaxRetries(1))
	f := toolset.NewFunction(flaky, echoTool("steady"))
	entries := []toolset.Toolset{f.Prefixed("p"), f.Renamed(map[string]string{"flaky": "renamed", "steady": "steady2"})}
	rc := &toolset.RunContext{RunID: "r"}
	ctx := toolset.NewContext(context.Background(), rc)
	turn := func(step int, stable bool) (context.Context, *toolset.ToolList) {
		r := rc.WithStep(step)
		r.StableToolList = stable
		c := toolset.NewContext(ctx, r)
		tools, err := toolset.BuildTools(c, "a", entries...)
		require.NoError(t, err)
		return c, tools
	}

	c0, tools := turn(0, false)
	assert.Equal(t, []string{"p_flaky", "p_steady", "renamed", "steady2"}, tools.Names())
	for _, name := range []string{"p_flaky", "renamed"} { // two failures, one step
		_, err := call(t, c0, tools, name, `{"id":0}`)
		msg, visible := toolset.ErrorText(err)
		require.True(t, visible)
		assert.Equal(t, "id must not be zero", msg)
	}
	c1, tools := turn(1, false)
	assert.Equal(t, []string{"p_flaky", "p_steady", "renamed", "steady2"}, tools.Names(), "one failed step is within a budget of one retry")
	_, err := call(t, c1, tools, "renamed", `{"bad":true}`) // argument errors count too
	require.Error(t, err)

	_, tools = turn(2, false)
	assert.Equal(t, []string{"p_steady", "steady2"}, tools.Names(), "spent: left out under every name")

	c3, tools := turn(3, true)
	assert.Equal(t, []string{"p_flaky", "p_steady", "renamed", "steady2"}, tools.Names(), "a stable list keeps it")
	tool, _ := tools.Lookup("renamed")
	assert.Equal(t, "[UNAVAILABLE] Sometimes fails.", tool.Description)
	before := runs.Load()
	_, err = call(t, c3, tools, "p_flaky", `{"id":1}`)
	var ue *toolset.UnavailableToolError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, `tool "p_flaky" is not available: its retries are spent (a budget of 1 per run); do without it`, ue.ModelText())
	assert.Equal(t, before, runs.Load())

	// Another run has its own budget.
	other, err := toolset.BuildTools(newRun("r2"), "a", entries...)
	require.NoError(t, err)
	assert.Len(t, other.Names(), 4)
}

func TestEnabledAndPrepare(t *testing.T) {
	var prepares atomic.Int64
	report := toolset.NewTool("report", "Build a report.", func(context.Context, struct{}) (string, error) { return "r", nil },
		toolset.WithEnabled(func(ctx context.Context, _ toolset.Tool) (bool, error) {
			return toolset.FromContext(ctx).String("role") != "guest", nil
		}),
		toolset.WithPrepare(func(ctx context.Context, t toolset.Tool) (toolset.Tool, bool, error) {
			prepares.Add(1)
			switch toolset.FromContext(ctx).String("role") {
			case "intern":
				return t, false, nil
			case "broken":
				return t, true, errors.New("no quota")
			case "thief":
				t.Name = "stolen"
				return t, true, nil
			}
			t.Description += " Tenant: " + toolset.FromContext(ctx).String("tenant") + "."
			return t, true, nil
		}))
	f := toolset.NewFunction(report, echoTool("other"))
	entries := []toolset.Toolset{f.Prefixed("p"), beta{toolset.Wrapper{Wrapped: f.Renamed(map[string]string{"report": "renamed", "other": "other2"})}}, report}
	turn := func(role string) (*toolset.ToolList, error) {
		ctx := toolset.NewContext(context.Background(), &toolset.RunContext{Values: map[string]any{"role": role, "tenant": "acme"}})
		return toolset.BuildTools(ctx, "a", entries...)
	}
	tools, err := turn("admin")
	require.NoError(t, err)
	assert.Equal(t, []string{"p_report", "p_other", "renamed", "other2", "report"}, tools.Names())
	for _, name := range []string{"p_report", "report"} {
		tool, _ := tools.Lookup(name)
		assert.Equal(t, "Build a report. Tenant: acme.", tool.Description)
	}
	tool, _ := tools.Lookup("renamed")
	assert.Equal(t, "[beta] Build a report. Tenant: acme.", tool.Description, "prepared once, below the user's wrapper")
	assert.Equal(t, int64(3), prepares.Load())

	tools, err = turn("guest")
	require.NoError(t, err)
	assert.Equal(t, []string{"p_other", "other2"}, tools.Names())
	tools, err = turn("intern")
	require.NoError(t, err)
	assert.Equal(t, []string{"p_other", "other2"}, tools.Names())
	_, err = turn("broken")
	require.ErrorContains(t, err, `tool "report": prepare: no quota`)
	_, err = turn("thief")
	require.ErrorContains(t, err, "not rename or replace it")
}

func TestRequiredEnv(t *testing.T) {
	weather := toolset.NewTool("weather", "", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithRequiredEnv("TOOLSET_TEST_WEATHER_KEY", "TOOLSET_TEST_REGION"))
	maps := toolset.NewTool("maps", "", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithRequiredEnv("TOOLSET_TEST_MAPS_KEY"),
		toolset.WithMetadata(map[string]string{"audience": "admin"}))
	t.Setenv("TOOLSET_TEST_REGION", "eu")
	t.Setenv("TOOLSET_TEST_MAPS_KEY", "")
	entries := []toolset.Toolset{toolset.NewFunction(weather).Prefixed("w"), toolset.NewFunction(maps).Filtered(adminsOnly)}

	_, err := toolset.BuildTools(withRole("admin"), "a", entries...)
	var ee *toolset.EnvError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, []toolset.MissingEnv{{Tool: "w_weather", Var: "TOOLSET_TEST_WEATHER_KEY"}, {Tool: "maps", Var: "TOOLSET_TEST_MAPS_KEY"}}, ee.Missing)
	assert.Equal(t, "toolset: missing or empty environment variables:\n"+
		"  - TOOLSET_TEST_WEATHER_KEY (needed by tool \"w_weather\")\n"+
		"  - TOOLSET_TEST_MAPS_KEY (needed by tool \"maps\")", err.Error())

	t.Setenv("TOOLSET_TEST_WEATHER_KEY", "k")
	_, err = toolset.BuildTools(withRole("guest"), "a", entries...)
	require.NoError(t, err, "the hidden tool's variables do not matter this turn")
	err = toolset.Validate(withRole("guest"), entries...)
	require.ErrorAs(t, err, &ee, "Validate checks every tool")
	assert.Equal(t, []toolset.MissingEnv{{Tool: "maps", Var: "TOOLSET_TEST_MAPS_KEY"}}, ee.Missing)

	t.Setenv("TOOLSET_TEST_MAPS_KEY", "k")
	require.NoError(t, toolset.Validate(context.Background(), entries...))
	require.Error(t, toolset.Validate(context.Background(), entries[0], entries[0]), "Validate reports conflicts")
}

func TestApproval(t *testing.T) {
	var runs atomic.Int64
	transfer := toolset.NewTool("transfer", "", func(_ context.Context, in lookupArgs) (string, error) {
		runs.Add(1)
		return fmt.Sprintf("sent %d", in.ID), nil
	}, toolset.WithApprovalRequired(func(_ context.Context, _ toolset.Tool, args json.RawMessage) (bool, error) {
		var in lookupArgs
		return json.Unmarshal(args, &in) != nil || in.ID > 100, nil // large amounts need a human
	}))
	rc := &toolset.RunContext{RunID: "r"}
	ctx := toolset.NewContext(context.Background(), rc)
	tools := clones(t, ctx, transfer)

	got, err := tools.Execute(ctx, toolset.ToolCall{ID: "c0", Name: "p_transfer", Args: json.RawMessage(`{"id":5}`)})
	require.NoError(t, err)
	assert.Equal(t, "sent 5", got)

	big := toolset.ToolCall{ID: "c1", Name: "renamed", Args: json.RawMessage(`{"id":500}`)}
	_, err = tools.Execute(ctx, big)
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need)
	assert.Equal(t, big, need.Call)
	assert.Equal(t, int64(1), runs.Load())

	rc.Approve("c1")
	wipe := toolset.NewTool("wipe", "", func(_ context.Context, in lookupArgs) (string, error) {
		return "wiped", nil
	}, toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return true, nil }))
	withWipe, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(transfer), wipe)
	require.NoError(t, err)
	for _, other := range []toolset.ToolCall{
		{ID: "c1", Name: "transfer", Args: json.RawMessage(`{"id":999}`)},
		{ID: "c1", Name: "wipe", Args: json.RawMessage(`{"id":500}`)},
	} {
		_, err = withWipe.Execute(ctx, other)
		require.ErrorAs(t, err, &need, "an approval holds for the call it was asked for: %s", other.Args)
	}
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "transfer", Args: json.RawMessage(`{"id":500}`)})
	require.ErrorAs(t, err, &need, "the same tool under another name is another call")
	got, err = tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "renamed", Args: json.RawMessage(`{ "id": 500 }`)})
	require.NoError(t, err, "the same arguments in another form")
	assert.Equal(t, "sent 500", got)
	_, err = tools.Execute(ctx, big)
	require.ErrorAs(t, err, &need, "an approval is used up by its call")

	_, err = tools.Call(ctx, "transfer", json.RawMessage(`{"id":500}`))
	require.ErrorAs(t, err, &need)
	assert.ErrorContains(t, err, "run it with Tools.Execute and a ToolCall with an ID", "a call without an ID cannot be approved, and says so")
	msg, _ := toolset.ErrorText(err)
	assert.Equal(t, `the call of tool "transfer" needs a human's approval, which cannot be asked for here; do without it`, msg,
		"the model is not told to wait for an answer that cannot come")
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c9", Name: "transfer", Args: json.RawMessage(`{"id":501}`)})
	msg, _ = toolset.ErrorText(err)
	assert.Equal(t, `the call of tool "transfer" needs a human's approval, which has been requested; do not repeat it until told`, msg)

	rc.Deny("c2", "over the daily limit")
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c2", Name: "transfer", Args: json.RawMessage(`{"id":900}`)})
	msg, visible := toolset.ErrorText(err)
	require.True(t, visible)
	assert.Equal(t, `the call of tool "transfer" was denied by a human: over the daily limit`, msg)
	assert.Equal(t, int64(2), runs.Load())

	_, err = toolset.BuildTools(newRun("other"), "a", transfer)
	require.NoError(t, err)
	other, _ := toolset.BuildTools(newRun("other"), "a", transfer)
	_, err = other.Execute(newRun("other"), big)
	assert.Error(t, err, "approvals are per run")
}

func TestMiddleware(t *testing.T) {
	var mu sync.Mutex
	var log []string
	record := func(tag string) toolset.Middleware {
		return func(next toolset.Handler) toolset.Handler {
			return func(ctx context.Context, c toolset.ToolCall) (any, error) {
				mu.Lock()
				log = append(log, fmt.Sprintf("%s>%s#%s", tag, c.Name, c.ID))
				mu.Unlock()
				res, err := next(ctx, c)
				mu.Lock()
				log = append(log, tag+"<")
				mu.Unlock()
				return res, err
			}
		}
	}
	var runs atomic.Int64
	tool := counted("lookup", &runs, toolset.WithMiddleware(record("tool1"), record("tool2")), toolset.WithCache(toolset.CachePolicy{}))
	wrapped := toolset.Wrapper{Wrapped: toolset.Wrapper{Wrapped: toolset.NewFunction(tool), Middleware: []toolset.Middleware{record("inner")}},
		Middleware: []toolset.Middleware{record("outer1"), record("outer2")}}
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewPrefixed(wrapped, "w"), toolset.NewRenamed(toolset.NewFunction(tool), map[string]string{"lookup": "plain"}))
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "w_lookup", Args: json.RawMessage(`{"id":1}`)})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"outer1>w_lookup#c1", "outer2>w_lookup#c1", "inner>w_lookup#c1", "tool1>w_lookup#c1", "tool2>w_lookup#c1",
		"tool2<", "tool1<", "inner<", "outer2<", "outer1<",
	}, log, "outermost first, like net/http")

	log = nil
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c2", Name: "plain", Args: json.RawMessage(`{"id":2}`)})
	require.NoError(t, err)
	assert.Equal(t, []string{"tool1>plain#c2", "tool2>plain#c2", "tool2<", "tool1<"}, log, "a copy outside the wrapper runs only the tool's middleware")

	log = nil
	_, err = tools.Call(ctx, "plain", json.RawMessage(`{"id":1}`))
	require.NoError(t, err)
	assert.Empty(t, log, "a cache hit skips the middleware")
	assert.Equal(t, toolset.CacheStats{Hits: 1, Misses: 2}, tool.CacheStats(), "the wrapped copy shares the tool's cache")
	got, _ := tools.Lookup("w_lookup")
	assert.True(t, got.Same(tool))
}

// researcher is a sub-agent.
type researcher struct{}

func (researcher) Name() string        { return "researcher" }
func (researcher) Description() string { return "Researches a topic in depth." }
func (researcher) Run(_ context.Context, prompt string) (string, error) {
	return "findings on " + prompt, nil
}

func TestAgentTool(t *testing.T) {
	tool := toolset.NewAgentTool(researcher{}, toolset.WithTimeout(time.Second, toolset.TimeoutTellModel))
	assert.Equal(t, "researcher", tool.Name)
	assert.Equal(t, "Researches a topic in depth.", tool.Description)
	assert.JSONEq(t, `{"type":"object","properties":{"prompt":{"type":"string","description":"The task for the agent, with everything it needs to know"}},"required":["prompt"],"additionalProperties":false}`, schemaJSON(t, tool))

	wrapped := toolset.Wrapper{Wrapped: toolset.NewFunction(tool).Prefixed("team").Renamed(map[string]string{"team_researcher": "ask_research"}),
		Middleware: []toolset.Middleware{func(next toolset.Handler) toolset.Handler { return next }}}
	tools, err := toolset.BuildTools(context.Background(), "lead", wrapped)
	require.NoError(t, err)
	copy, ok := tools.Lookup("ask_research")
	require.True(t, ok)
	assert.Equal(t, researcher{}, copy.DelegateAgent(), "the agent behind the tool, through every layer")
	got, err := tools.Call(context.Background(), "ask_research", json.RawMessage(`{"prompt":"tides"}`))
	require.NoError(t, err)
	assert.Equal(t, "findings on tides", got)
	assert.Nil(t, echoTool("x").DelegateAgent())
	require.ErrorContains(t, toolset.NewAgentTool(nil).Err(), "nil Agent")
}

func deferredCatalog() *toolset.Function {
	mk := func(name, desc string) toolset.Tool {
		return toolset.NewTool(name, desc, func(context.Context, struct{}) (string, error) { return name, nil }, toolset.WithDeferred())
	}
	return toolset.NewFunction(
		mk("create_invoice", "Create an invoice for a customer."),
		mk("refund_payment", "Refund a card payment to a customer."),
		mk("weather_forecast", "Weather forecast for a city."),
		mk("list_invoices", "List the invoices of a customer, newest first."),
		echoTool("always_there"),
	)
}

func TestToolSearch(t *testing.T) {
	catalog := deferredCatalog().Prefixed("billing")
	search := toolset.NewToolSearch(catalog)
	assert.Equal(t, "tool_search", search.Name)
	turn := func(ctx context.Context) *toolset.ToolList {
		tools, err := toolset.BuildTools(ctx, "a", catalog, search, toolset.NewToolSearch(catalog))
		require.NoError(t, err, "two search tools of one name are standalone tools: no conflict")
		return tools
	}
	r1, r2 := newRun("r1"), newRun("r2")
	tools := turn(r1)
	assert.Equal(t, []string{"billing_always_there", "tool_search"}, tools.Names())
	_, err := call(t, r1, tools, "billing_refund_payment", `{}`)
	require.Error(t, err, "a hidden deferred tool cannot be called")

	res, err := call(t, r1, tools, "tool_search", `{"query":"invoice","top_k":1}`)
	require.NoError(t, err)
	found := res.(toolset.ToolSearchResult)
	require.Len(t, found.Tools, 1)
	assert.Equal(t, "billing_create_invoice", found.Tools[0].Name, "name matches rank first")

	tools = turn(r1)
	assert.Equal(t, []string{"billing_create_invoice", "billing_always_there", "tool_search"}, tools.Names(), "revealed from the next turn")
	got, err := call(t, r1, tools, "billing_create_invoice", `{}`)
	require.NoError(t, err)
	assert.Equal(t, "create_invoice", got)

	other := turn(r2)
	assert.Equal(t, []string{"billing_always_there", "tool_search"}, other.Names(), "another run does not see the reveal")
	_, err = call(t, r2, other, "billing_create_invoice", `{}`)
	require.Error(t, err)

	res, err = call(t, r2, other, "tool_search", `{"query":"refund the customer's card payments","top_k":99}`)
	require.NoError(t, err)
	found = res.(toolset.ToolSearchResult)
	require.NotEmpty(t, found.Tools)
	assert.Equal(t, "billing_refund_payment", found.Tools[0].Name)
	assert.LessOrEqual(t, len(found.Tools), 3, "only tools sharing a word match")

	res, err = call(t, r2, other, "tool_search", `{"query":"  "}`)
	require.NoError(t, err)
	assert.Empty(t, res.(toolset.ToolSearchResult).Tools, "an empty query matches nothing")

	_, err = call(t, context.Background(), turn(context.Background()), "tool_search", `{"query":"invoice"}`)
	require.ErrorContains(t, err, "needs a RunContext")

	// The deferred tool is also refused when called directly without a reveal.
	_, err = deferredCatalog().GetTools(context.Background())
	require.NoError(t, err)
}

func TestToolSearchTopKClamp(t *testing.T) {
	var many []toolset.Tool
	for i := range 60 {
		many = append(many, toolset.NewTool(fmt.Sprintf("report_%d", i), "A report.", func(context.Context, struct{}) (int, error) { return i, nil }, toolset.WithDeferred()))
	}
	catalog := toolset.NewFunction(many...)
	ctx := newRun("r")
	tools, err := toolset.BuildTools(ctx, "a", catalog, toolset.NewToolSearch(catalog, toolset.WithSearchName("find_tools"), toolset.WithSearchTopK(3)))
	require.NoError(t, err)
	for args, want := range map[string]int{`{"query":"report"}`: 3, `{"query":"report","top_k":0}`: 3, `{"query":"report","top_k":-4}`: 1, `{"query":"report","top_k":500}`: 50} {
		res, err := call(t, ctx, tools, "find_tools", args)
		require.NoError(t, err)
		assert.Len(t, res.(toolset.ToolSearchResult).Tools, want, args)
	}
}

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
		toolset.WithMaxRetries(5),
	)
	ctx := newRun("r")
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

// A cached result is only returned for arguments valid for the tool as
// this turn offers it: a schema narrowed per turn is not bypassed by a
// result cached in a turn that allowed more.
func TestCacheRespectsThisTurnsSchema(t *testing.T) {
	type actionArgs struct {
		Action string `json:"action" jsonschema:"enum=read,enum=delete"`
	}
	tool := toolset.NewTool("records", "", func(_ context.Context, in actionArgs) (string, error) {
		return "did " + in.Action, nil
	}, toolset.WithCache(toolset.CachePolicy{}))
	readOnly := toolset.NewFunction(tool).Prepared(func(ctx context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
		if toolset.FromContext(ctx).Value("role") == "admin" {
			return tools, nil
		}
		out := make([]toolset.Tool, len(tools))
		for i, t := range tools {
			p := *t.Parameters
			action := *p.Properties.Value("action")
			action.Enum = []any{"read"}
			p.Properties = jsonschema.NewProperties()
			p.Properties.Set("action", &action)
			t.Parameters = &p
			out[i] = t
		}
		return out, nil
	})
	turn := func(role string) (context.Context, *toolset.ToolList) {
		ctx := toolset.NewContext(context.Background(), &toolset.RunContext{RunID: role, Values: map[string]any{"role": role}})
		tools, err := toolset.BuildTools(ctx, "a", readOnly)
		require.NoError(t, err)
		return ctx, tools
	}
	ctx, tools := turn("admin")
	got, err := tools.Call(ctx, "records", json.RawMessage(`{"action":"delete"}`))
	require.NoError(t, err)
	assert.Equal(t, "did delete", got)

	ctx, tools = turn("viewer")
	_, err = tools.Call(ctx, "records", json.RawMessage(`{"action":"delete"}`))
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae, "the viewer's schema refuses delete, cached or not")
	assert.Equal(t, toolset.CacheStats{Misses: 1}, tool.CacheStats())
}

// A caller waiting for an identical call whose own caller gave up runs the
// call itself instead of taking the other caller's cancellation.
func TestCacheWaiterOutlivesAbandonedCall(t *testing.T) {
	defer goleak.VerifyNone(t)
	var runs atomic.Int64
	started := make(chan struct{}, 2)
	tool := toolset.NewTool("slow", "", func(ctx context.Context, in lookupArgs) (int, error) {
		if runs.Add(1) == 1 {
			started <- struct{}{}
			<-ctx.Done()
			return 0, ctx.Err()
		}
		return in.ID, nil
	}, toolset.WithCache(toolset.CachePolicy{}))
	leaderCtx, cancel := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() {
		_, err := tool.Call(leaderCtx, json.RawMessage(`{"id":7}`))
		leader <- err
	}()
	<-started
	waiter := make(chan any, 1)
	go func() {
		got, err := tool.Call(context.Background(), json.RawMessage(`{"id":7}`))
		assert.NoError(t, err, "the waiter's own context is live")
		waiter <- got
	}()
	require.Eventually(t, func() bool { return tool.CacheStats().Misses == 2 }, 5*time.Second, time.Millisecond, "the second call waits")
	cancel()
	require.ErrorIs(t, <-leader, context.Canceled)
	assert.Equal(t, 7, <-waiter)
	assert.Equal(t, int64(2), runs.Load())
	assert.Equal(t, toolset.CacheStats{Misses: 2}, tool.CacheStats(), "the waiter's second look counts once")
}

// A decision recorded for a call applies to that call only, even when the
// model (or a server) gives two calls one ID.
func TestApprovalBindsToTheCall(t *testing.T) {
	var paid []string
	var mu sync.Mutex
	pay := toolset.NewTool("pay", "", func(_ context.Context, in struct {
		To string `json:"to"`
	}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		paid = append(paid, in.To)
		return "paid " + in.To, nil
	}, toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return true, nil }))
	rc := &toolset.RunContext{RunID: "r"}
	ctx := toolset.NewContext(context.Background(), rc)
	tools := clones(t, ctx, pay)
	mallory := toolset.ToolCall{ID: "call_0", Name: "pay", Args: json.RawMessage(`{"to":"mallory"}`)}
	bob := toolset.ToolCall{ID: "call_0", Name: "pay", Args: json.RawMessage(`{"to":"bob"}`)}
	var need *toolset.ApprovalRequiredError
	for _, c := range []toolset.ToolCall{mallory, bob} {
		_, err := tools.Execute(ctx, c)
		require.ErrorAs(t, err, &need)
	}
	rc.RecordDenial(mallory, "unknown payee")
	rc.RecordApproval(bob)
	_, err := tools.Execute(ctx, mallory)
	var denied *toolset.ApprovalDeniedError
	require.ErrorAs(t, err, &denied)
	got, err := tools.Execute(ctx, bob)
	require.NoError(t, err)
	assert.Equal(t, "paid bob", got)
	assert.Equal(t, []string{"bob"}, paid)

	// By ID alone, a decision applies to the call asked about under it.
	alice := toolset.ToolCall{ID: "call_1", Name: "pay", Args: json.RawMessage(`{"to":"alice"}`)}
	_, err = tools.Execute(ctx, alice)
	require.ErrorAs(t, err, &need)
	rc.Approve("call_1")
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "call_1", Name: "pay", Args: json.RawMessage(`{"to":"mallory"}`)})
	require.ErrorAs(t, err, &need, "another call reusing the ID is not approved")
	_, err = tools.Execute(ctx, alice)
	require.NoError(t, err)
	assert.Equal(t, []string{"bob", "alice"}, paid)

	// Without a run context, nothing could record a decision: the call
	// stops the run and says why.
	_, err = pay.Call(context.Background(), json.RawMessage(`{"to":"bob"}`))
	require.ErrorContains(t, err, "approvals are recorded in the run context")
	_, visible := toolset.ErrorText(err)
	assert.False(t, visible)
}

func TestConcurrentCallsThroughThreeNames(t *testing.T) {
	defer goleak.VerifyNone(t)
	var runs atomic.Int64
	tool := counted("lookup", &runs,
		toolset.WithCache(toolset.CachePolicy{MaxEntries: 8}),
		toolset.WithRateLimit(toolset.RateLimit{Requests: 1000000, Interval: time.Second}),
		toolset.WithTimeout(time.Minute, toolset.TimeoutTellModel),
		toolset.WithMaxRetries(1000))
	ctx := newRun("r")
	tools := clones(t, ctx, tool)
	names := []string{"lookup", "p_lookup", "renamed"}
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 50 {
				id := (g + i) % 16
				got, err := tools.Call(ctx, names[(g+i)%3], json.RawMessage(fmt.Sprintf(`{"id":%d}`, id)))
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

func TestDeferredToolConflictsOnlyOnceRevealed(t *testing.T) {
	lazy := toolset.NewFunction(toolset.NewTool("lookup", "Look up in the archive.", func(context.Context, struct{}) (string, error) {
		return "archive", nil
	}, toolset.WithDeferred()))
	search := toolset.NewToolSearch(lazy)
	ctx := newRun("r")
	tools, err := toolset.BuildTools(ctx, "a", lazy, echoTool("lookup"), search)
	require.NoError(t, err, "a hidden deferred tool takes no name")
	_, err = call(t, ctx, tools, "tool_search", `{"query":"archive"}`)
	require.NoError(t, err)
	_, err = toolset.BuildTools(ctx, "a", lazy, echoTool("lookup"), search)
	var nce *toolset.NameConflictError
	require.ErrorAs(t, err, &nce)
	assert.Equal(t, []string{"Function#0", "tools[1] (standalone)"}, nce.Conflicts[0].Contributors)
}

func TestCacheWaiterHonoursItsContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	started := make(chan struct{})
	tool := toolset.NewTool("slow", "", func(_ context.Context, in lookupArgs) (int, error) {
		close(started)
		<-release
		return in.ID, nil
	}, toolset.WithCache(toolset.CachePolicy{}))
	leader := make(chan error, 1)
	go func() {
		_, err := tool.Call(context.Background(), json.RawMessage(`{"id":1}`))
		leader <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := tool.Call(ctx, json.RawMessage(`{"id":1}`))
	require.ErrorIs(t, err, context.DeadlineExceeded, "a caller waiting for an identical call gives up with its own context")
	require.ErrorContains(t, err, "waiting for an identical call")
	close(release)
	require.NoError(t, <-leader)
	got, err := tool.Call(context.Background(), json.RawMessage(`{"id":1}`))
	require.NoError(t, err)
	assert.Equal(t, 1, got)
	assert.Equal(t, toolset.CacheStats{Hits: 1, Misses: 2}, tool.CacheStats())
}

// A cache miss whose result is not kept reuses its bookkeeping for the
// next miss; results must still go to the right calls.
func TestCacheMissesNotKeptStayApart(t *testing.T) {
	defer goleak.VerifyNone(t)
	var runs atomic.Int64
	tool := toolset.NewTool("lookup", "", func(_ context.Context, in lookupArgs) (int, error) {
		runs.Add(1)
		time.Sleep(time.Millisecond)
		return in.ID, nil
	}, toolset.WithCache(toolset.CachePolicy{ShouldCache: func(res any) bool { return res.(int)%2 == 0 }}))
	tools := clones(t, context.Background(), tool)
	names := []string{"lookup", "p_lookup", "renamed"}
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			id := i % 6
			got, err := tools.Call(context.Background(), names[i%3], json.RawMessage(fmt.Sprintf(`{"id":%d}`, id)))
			assert.NoError(t, err)
			assert.Equal(t, id, got)
		})
	}
	wg.Wait()
	before := runs.Load()
	for id := range 6 {
		got, err := call(t, context.Background(), tools, "lookup", fmt.Sprintf(`{"id":%d}`, id))
		require.NoError(t, err)
		assert.Equal(t, id, got)
	}
	assert.Equal(t, before+3, runs.Load(), "even results are kept, odd ones run again")
}

// A panic in the cache policy fails the call like a panicking handler,
// and leaves no pending entry behind for identical calls to wait on.
func TestCacheShouldCachePanics(t *testing.T) {
	tool := toolset.NewTool("lookup", "", func(_ context.Context, in lookupArgs) (int, error) { return in.ID, nil },
		toolset.WithCache(toolset.CachePolicy{ShouldCache: func(any) bool { panic("policy bug") }}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 2 {
		_, err := tool.Call(ctx, json.RawMessage(`{"id":1}`))
		var pe *toolset.PanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "policy bug", pe.Value)
	}
}

// A cache miss whose result is not kept allocates nothing beyond the call
// itself.
func TestCacheMissAllocatesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	allocs := func(opts ...toolset.ToolOption) float64 {
		tool := toolset.NewTool("lookup", "", func(_ context.Context, in lookupArgs) (int, error) { return in.ID, nil }, opts...)
		args := json.RawMessage(`{"id":3,"note":"n"}`)
		return testing.AllocsPerRun(100, func() {
			if _, err := tool.Call(context.Background(), args); err != nil {
				t.Fatal(err)
			}
		})
	}
	plain := allocs()
	assert.Equal(t, plain, allocs(toolset.WithCache(toolset.CachePolicy{ShouldCache: func(any) bool { return false }})))
}
