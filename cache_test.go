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
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestCacheSharedByCopies(t *testing.T) {
	var runs atomic.Int64
	tool := counted("lookup", &runs, toolset.WithCache(toolset.CachePolicy{}))
	ctx := newRun(t, "r")
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
		_, _ = tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(args)})
	}
	assert.Equal(t, toolset.CacheStats{Hits: 2, Misses: 1}, tool.CacheStats())
}

// Arguments already in canonical form are used as the key as they are;
// their variants still find the same entry, in either order of calls.
func TestCacheCanonicalArgumentsAreTheirOwnKey(t *testing.T) {
	tool := toolset.NewRawTool("echo", "", &jsonschema.Schema{Type: "object"}, func(_ context.Context, args json.RawMessage) (any, error) {
		return string(args), nil
	}, toolset.WithCache(toolset.CachePolicy{}))
	for _, args := range []string{`{"a":2,"b":"x"}`, `{"b":"x","a":2}`, `{"a":2,"b":"x"}`, `{ "a": 2.0, "b": "\u0078" }`} {
		_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(args)})
		require.NoError(t, err)
	}
	assert.Equal(t, toolset.CacheStats{Hits: 3, Misses: 1}, tool.CacheStats())
}

func TestCachePolicyBounds(t *testing.T) {
	t.Run("max entries evicts least recently used", func(t *testing.T) {
		var runs atomic.Int64
		tool := counted("l", &runs, toolset.WithCache(toolset.CachePolicy{MaxEntries: 2}))
		ctx := context.Background()
		for _, id := range []int{1, 2, 1, 3, 1, 2} {
			_, err := tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(fmt.Sprintf(`{"id":%d}`, id))})
			require.NoError(t, err)
		}
		// 1 miss, 2 miss, 1 hit, 3 miss (evicts 2), 1 hit, 2 miss.
		assert.Equal(t, toolset.CacheStats{Hits: 2, Misses: 4}, tool.CacheStats())
	})
	t.Run("ttl", inBubble(func(t *testing.T) {
		var runs atomic.Int64
		tool := counted("l", &runs, toolset.WithCache(toolset.CachePolicy{TTL: 30 * time.Millisecond}))
		ctx := context.Background()
		_, _ = tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
		_, _ = tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
		time.Sleep(60 * time.Millisecond)
		_, _ = tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
		assert.Equal(t, toolset.CacheStats{Hits: 1, Misses: 2}, tool.CacheStats())
		assert.Equal(t, int64(2), runs.Load())
	}))
	t.Run("max bytes", func(t *testing.T) {
		tool := toolset.NewTool("big", "", func(_ context.Context, in lookupArgs) (string, error) {
			return strings.Repeat("x", in.ID), nil
		}, toolset.WithCache(toolset.CachePolicy{MaxBytes: 100}))
		ctx := context.Background()
		for _, args := range []string{`{"id":60}`, `{"id":60}`, `{"id":50}`, `{"id":60}`, `{"id":500}`, `{"id":500}`} {
			_, err := tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(args)})
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
			_, err := tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(args)})
			require.NoError(t, err)
		}
		assert.Equal(t, int64(3), runs.Load())
		_, err := tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":13}`)})
		require.ErrorContains(t, err, "cache key: unlucky")
		var ae *toolset.ArgumentError
		_, err = tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":"x"}`)})
		require.ErrorAs(t, err, &ae, "the key function sees only valid arguments")
	})
}

func TestCacheRunScope(t *testing.T) {
	var runs atomic.Int64
	tool := counted("lookup", &runs, toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun}))
	r1, r2 := testRun(t, "r1"), testRun(t, "r2")
	for _, run := range []*toolset.RunContext{r1, r1, r2, r2} {
		ctx := run.Turn(context.Background())
		_, err := call(t, ctx, clones(t, ctx, tool), "renamed", `{"id":1}`)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(2), runs.Load(), "each run fills its own cache, kept across its turns")
	r1.End()
	again := newRun(t, "r1")
	_, err := call(t, again, clones(t, again, tool), "renamed", `{"id":1}`)
	require.NoError(t, err)
	assert.Equal(t, int64(3), runs.Load(), "a run's cache ends with it, even for a new run of its ID")
	none := clones(t, context.Background(), tool)
	_, _ = call(t, context.Background(), none, "p_lookup", `{"id":1}`)
	_, _ = call(t, context.Background(), none, "p_lookup", `{"id":1}`)
	assert.Equal(t, int64(5), runs.Load(), "no run, no run-scoped cache")
}

func TestCacheSingleflight(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testCacheSingleflight)
}

func testCacheSingleflight(t *testing.T) {
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
			got, err := tools.Execute(context.Background(), toolset.ToolCall{Name: names[i%3], Args: json.RawMessage(`{"id":5}`)})
			assert.NoError(t, err)
			assert.Equal(t, 5, got)
		})
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(1), runs.Load(), "concurrent identical calls on a cold key run the handler once")
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
		if Role.Get(ctx) == "admin" {
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
		ctx := withRole(t, role)
		tools, err := toolset.BuildTools(ctx, "a", readOnly)
		require.NoError(t, err)
		return ctx, tools
	}
	ctx, tools := turn("admin")
	got, err := tools.Execute(ctx, toolset.ToolCall{Name: "records", Args: json.RawMessage(`{"action":"delete"}`)})
	require.NoError(t, err)
	assert.Equal(t, "did delete", got)

	ctx, tools = turn("viewer")
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "records", Args: json.RawMessage(`{"action":"delete"}`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae, "the viewer's schema refuses delete, cached or not")
	assert.Equal(t, toolset.CacheStats{Misses: 1}, tool.CacheStats())
}

// A caller waiting for an identical call whose own caller gave up runs the
// call itself instead of taking the other caller's cancellation.
func TestCacheWaiterOutlivesAbandonedCall(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testCacheWaiterOutlivesAbandonedCall)
}

func testCacheWaiterOutlivesAbandonedCall(t *testing.T) {
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
		_, err := tool.Execute(leaderCtx, toolset.ToolCall{Args: json.RawMessage(`{"id":7}`)})
		leader <- err
	}()
	<-started
	waiter := make(chan any, 1)
	go func() {
		got, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"id":7}`)})
		assert.NoError(t, err, "the waiter's own context is live")
		waiter <- got
	}()
	synctest.Wait()
	require.Equal(t, uint64(2), tool.CacheStats().Misses, "the second call waits")
	cancel()
	require.ErrorIs(t, <-leader, context.Canceled)
	assert.Equal(t, 7, <-waiter)
	assert.Equal(t, int64(2), runs.Load())
	assert.Equal(t, toolset.CacheStats{Misses: 2}, tool.CacheStats(), "the waiter's second look counts once")
}

func TestCacheWaiterHonoursItsContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testCacheWaiterHonoursItsContext)
}

func testCacheWaiterHonoursItsContext(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	tool := toolset.NewTool("slow", "", func(_ context.Context, in lookupArgs) (int, error) {
		close(started)
		<-release
		return in.ID, nil
	}, toolset.WithCache(toolset.CachePolicy{}))
	leader := make(chan error, 1)
	go func() {
		_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
		leader <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
	require.ErrorIs(t, err, context.DeadlineExceeded, "a caller waiting for an identical call gives up with its own context")
	require.ErrorContains(t, err, "waiting for an identical call")
	close(release)
	require.NoError(t, <-leader)
	got, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
	require.NoError(t, err)
	assert.Equal(t, 1, got)
	assert.Equal(t, toolset.CacheStats{Hits: 1, Misses: 2}, tool.CacheStats())
}

// A cache miss whose result is not kept reuses its bookkeeping for the
// next miss; results must still go to the right calls.
func TestCacheMissesNotKeptStayApart(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testCacheMissesNotKeptStayApart)
}

func testCacheMissesNotKeptStayApart(t *testing.T) {
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
			got, err := tools.Execute(context.Background(), toolset.ToolCall{Name: names[i%3], Args: json.RawMessage(fmt.Sprintf(`{"id":%d}`, id))})
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
		_, err := tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
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
			if _, err := tool.Execute(context.Background(), toolset.ToolCall{Args: args}); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A call with no policy between validation and the handler validates
	// as it decodes, in one pass; any such policy (here an approval that
	// is never needed) makes the call validate first, then decode.
	twoPass := allocs(toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return false, nil }))
	assert.LessOrEqual(t, allocs(), twoPass)
	assert.Equal(t, twoPass, allocs(toolset.WithCache(toolset.CachePolicy{ShouldCache: func(any) bool { return false }})))
}
