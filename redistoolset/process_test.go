package redistoolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/redistoolset"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const prefix = "app1:"

// refundCall is the call the model makes in the approval tests.
var refundCall = toolset.ToolCall{ID: "call_1", Name: "refund", Args: json.RawMessage(`{"order":"A-7","amount":300}`)}

// refundTool needs approval for every call; its handler counts its runs
// in Redis, across processes.
func refundTool(c redis.UniversalClient) toolset.Tool {
	return toolset.NewTool("refund", "Refund an order.", func(ctx context.Context, in struct {
		Order  string `json:"order"`
		Amount int    `json:"amount"`
	}) (string, error) {
		if err := c.Incr(ctx, "executions").Err(); err != nil {
			return "", err
		}
		return fmt.Sprintf("refunded %d on %s", in.Amount, in.Order), nil
	}, toolset.WithApprovalRequired(toolset.Always))
}

// lookupTool is limited to 10 calls a minute by lim, and cached in cache;
// its handler counts its runs in Redis.
func lookupTool(c redis.UniversalClient, lim toolset.RateLimiter, cache toolset.ResultCache) toolset.Tool {
	var opts []toolset.ToolOption
	if lim != nil {
		opts = append(opts, toolset.WithRateLimit(toolset.RateLimit{Requests: 10, Interval: time.Minute, Reject: true, Limiter: lim}))
	}
	if cache != nil {
		opts = append(opts, toolset.WithCache(toolset.CachePolicy{Shared: cache, TTL: time.Minute}))
	}
	return toolset.NewTool("lookup", "Look a record up.", func(ctx context.Context, in struct {
		ID int `json:"id"`
	}) (string, error) {
		if err := c.Incr(ctx, "lookups").Err(); err != nil {
			return "", err
		}
		return fmt.Sprintf("record %d", in.ID), nil
	}, opts...)
}

// runChild plays role in a child process.
func runChild(role, addr, arg string) error {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	store := redistoolset.NewRunStore(c, &redistoolset.RunStoreOptions{Prefix: prefix})
	switch role {
	case "ratelimit":
		tools, err := toolset.BuildTools(ctx, "a", lookupTool(c, redistoolset.NewRateLimiter(c, &redistoolset.RateLimiterOptions{Prefix: prefix}), nil))
		if err != nil {
			return err
		}
		admitted := 0
		for range 10 {
			_, err := tools.Execute(ctx, toolset.ToolCall{Name: "lookup", Args: json.RawMessage(`{"id":1}`)})
			var rle *toolset.RateLimitError
			switch {
			case err == nil:
				admitted++
			case !errors.As(err, &rle):
				return err
			}
		}
		fmt.Println(admitted)
	case "cache":
		tools, err := toolset.BuildTools(ctx, "a", lookupTool(c, nil, redistoolset.NewResultCache(c, &redistoolset.ResultCacheOptions{Prefix: prefix})))
		if err != nil {
			return err
		}
		res, err := tools.Execute(ctx, toolset.ToolCall{Name: "lookup", Args: json.RawMessage(arg)})
		if err != nil {
			return err
		}
		fmt.Println(res)
	case "pause":
		run, err := toolset.ResumeRun(ctx, store, arg)
		if err != nil {
			return err
		}
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "support", refundTool(c))
		if err != nil {
			return err
		}
		var need *toolset.ApprovalRequiredError
		if _, err := tools.Execute(turn, refundCall); !errors.As(err, &need) {
			return fmt.Errorf("the call did not ask for approval: %v", err)
		}
		if err := run.Suspend(ctx); err != nil {
			return err
		}
		fmt.Println("paused", need.Call.ID)
	case "approve":
		run, err := toolset.ResumeRun(ctx, store, arg)
		if err != nil {
			return err
		}
		for _, p := range run.PendingApprovals() {
			fmt.Println("approving", p.CallID, p.Tool, string(p.Args))
			run.RecordApproval(p.Call())
		}
		if err := run.Suspend(ctx); err != nil {
			return err
		}
	case "resume":
		run, err := toolset.ResumeRun(ctx, store, arg)
		if err != nil {
			return err
		}
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "support", refundTool(c))
		if err != nil {
			return err
		}
		res, err := tools.Execute(turn, refundCall)
		if err != nil {
			return err
		}
		fmt.Println(res)
		run.End()
	case "claim":
		run, err := toolset.ResumeRun(ctx, store, arg)
		var conflict *toolset.RunStateConflictError
		switch {
		case err == nil:
			fmt.Println("won")
			_ = run // held until its lease runs out
		case errors.As(err, &conflict):
			fmt.Println("conflict:", err)
		default:
			return err
		}
	default:
		return fmt.Errorf("no role %q", role)
	}
	return nil
}

// runAll runs children in role at once, one per arg, and returns what each
// printed.
func runAll(t *testing.T, s *server, role string, args ...string) []string {
	t.Helper()
	outs := make([]string, len(args))
	errs := make([]error, len(args))
	var wg sync.WaitGroup
	for i, arg := range args {
		cmd := spawn(t, s, role, arg)
		wg.Go(func() {
			out, err := cmd.Output()
			if ee, ok := err.(interface{ ExitCode() int }); ok && err != nil {
				err = fmt.Errorf("%v (exit %d)", err, ee.ExitCode())
			}
			outs[i], errs[i] = strings.TrimSpace(string(out)), err
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "child %d of %s", i, role)
	}
	return outs
}

func TestThreeProcessesShareOneRateLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	outs := runAll(t, s, "ratelimit", "", "", "")
	total := 0
	for _, o := range outs {
		var n int
		_, err := fmt.Sscan(o, &n)
		require.NoError(t, err, o)
		total += n
	}
	assert.Equal(t, 10, total, "admitted per process: %v", outs)
	n, err := c.Get(context.Background(), "lookups").Int()
	require.NoError(t, err)
	assert.Equal(t, 10, n, "the handler ran once per admitted call")
}

func TestCacheFilledByOneProcessHitsInAnother(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	first := runOne(t, s, "cache", `{"id":7}`)
	second := runOne(t, s, "cache", `{ "id": 7 }`)
	assert.Equal(t, "record 7\n", first)
	assert.Equal(t, first, second)
	n, err := c.Get(context.Background(), "lookups").Int()
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the second process was answered from the cache")
	keys, err := c.Keys(context.Background(), prefix+"cache:*").Result()
	require.NoError(t, err)
	assert.Len(t, keys, 2, "one entry and the index, under the prefix: %v", keys)
}

func TestRunPausedInOneProcessIsApprovedInAnotherAndResumedInAThird(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	assert.Equal(t, "paused call_1\n", runOne(t, s, "pause", "run-1"))
	assert.Equal(t, "approving call_1 refund {\"amount\":300,\"order\":\"A-7\"}\n", runOne(t, s, "approve", "run-1"))
	assert.Equal(t, "refunded 300 on A-7\n", runOne(t, s, "resume", "run-1"))
	n, err := c.Get(context.Background(), "executions").Int()
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the approved call ran exactly once")
	exists, err := c.Exists(context.Background(), prefix+"run:run-1").Result()
	require.NoError(t, err)
	assert.Zero(t, exists, "the ended run's state is deleted")
}

func TestTwoProcessesResumingOneRunOneWins(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	runOne(t, s, "pause", "run-2")
	outs := runAll(t, s, "claim", "run-2", "run-2")
	won, lost := 0, 0
	for _, o := range outs {
		switch {
		case o == "won":
			won++
		case strings.HasPrefix(o, "conflict:"):
			lost++
			assert.Contains(t, o, `run "run-2"`)
		}
	}
	assert.Equal(t, [2]int{1, 1}, [2]int{won, lost}, "%q", outs)
}
