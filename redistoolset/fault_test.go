package redistoolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/redistoolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

// captureLog sends the default logger's records to a buffer until t ends.
func captureLog(t *testing.T) *lockedBuffer {
	var b lockedBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&b, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &b
}

// TestRedisRestartedMidRun kills the server in the middle of a run and
// starts it again on the same port, with the calls of one process going
// on throughout. Not in parallel: it sets slog's default logger, and no
// other test's server may take its port while it is down.
func TestRedisRestartedMidRun(t *testing.T) {
	logs := captureLog(t)
	s := startServerWith(t, true)
	c, _ := s.client()
	ctx := context.Background()
	closed := redistoolset.NewRateLimiter(c, &redistoolset.RateLimiterOptions{})
	open := redistoolset.NewRateLimiter(c, &redistoolset.RateLimiterOptions{FailOpen: true})
	cache := redistoolset.NewResultCache(c, &redistoolset.ResultCacheOptions{})
	limit := func(l toolset.RateLimiter, key string) toolset.ToolOption {
		return toolset.WithRateLimit(toolset.RateLimit{Requests: 100, Interval: time.Minute, Reject: true, Limiter: l, Key: key})
	}
	runs := map[string]int{}
	tool := func(name string, opts ...toolset.ToolOption) toolset.Tool {
		return toolset.NewTool(name, "Look a record up.", func(_ context.Context, in struct {
			ID int `json:"id"`
		}) (string, error) {
			runs[name]++
			return "record", nil
		}, opts...)
	}
	closedTool := tool("closed", limit(closed, "closed"))
	openTool := tool("open", limit(open, "open"))
	cachedTool := tool("cached", toolset.WithCache(toolset.CachePolicy{Shared: cache}))
	store := redistoolset.NewRunStore(c, &redistoolset.RunStoreOptions{})

	run, err := toolset.ResumeRun(ctx, store, "run-f")
	require.NoError(t, err)
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", closedTool, openTool, cachedTool)
	require.NoError(t, err)
	exec := func(name string) (any, error) {
		return tools.Execute(turn, toolset.ToolCall{ID: "c-" + name, Name: name, Args: json.RawMessage(`{"id":1}`)})
	}
	for _, name := range []string{"closed", "open", "cached", "cached"} {
		_, err := exec(name)
		require.NoError(t, err, name)
	}
	assert.Equal(t, map[string]int{"closed": 1, "open": 1, "cached": 1}, runs)
	saved, version, err := store.Load(ctx, "run-f")
	require.NoError(t, err)
	require.NotZero(t, version)

	s.stop()

	_, err = exec("closed")
	var le *toolset.RateLimitError
	require.ErrorAs(t, err, &le, "the limiter fails closed")
	msg, visible := toolset.ErrorText(err)
	require.True(t, visible, "the model sees it")
	assert.Contains(t, msg, "try again later")
	_, err = exec("open")
	require.NoError(t, err, "a limiter made to fail open lets the call through")
	for range 3 {
		_, err = exec("cached")
		require.NoError(t, err, "the cache is bypassed")
	}
	assert.Equal(t, map[string]int{"closed": 1, "open": 2, "cached": 4}, runs)
	assert.Equal(t, 1, strings.Count(logs.String(), "shared result cache failing"), "one warning per outage:\n%s", logs)
	assert.Equal(t, 2, strings.Count(logs.String(), "rate limiter failing"), "one warning per outage and limiter:\n%s", logs)

	_, err = toolset.BuildTools(run.Turn(ctx), "a", closedTool, openTool, cachedTool)
	require.Error(t, err, "a run whose state cannot be saved stops")
	assert.Contains(t, err.Error(), "run-f")
	assert.Contains(t, err.Error(), "connect")
	t.Log(err)

	require.True(t, s.start(), "the server takes its port again")

	after, afterVersion, err := store.Load(ctx, "run-f")
	require.NoError(t, err)
	assert.Equal(t, version, afterVersion, "what was saved before the outage is kept")
	assert.Equal(t, saved, after)

	// Everything works again, in the same process and with the same
	// clients.
	turn = run.Turn(ctx)
	tools, err = toolset.BuildTools(turn, "a", closedTool, openTool, cachedTool)
	require.NoError(t, err, "the run goes on")
	for _, name := range []string{"closed", "open", "cached", "cached"} {
		_, err := exec(name)
		require.NoError(t, err, name)
	}
	assert.Equal(t, map[string]int{"closed": 2, "open": 3, "cached": 4}, runs, "the cache hits again")
	assert.Equal(t, 1, strings.Count(logs.String(), "shared result cache recovered"), logs)
	assert.Equal(t, 2, strings.Count(logs.String(), "rate limiter recovered"), logs)
	_, newVersion, err := store.Load(ctx, "run-f")
	require.NoError(t, err)
	assert.Greater(t, newVersion, version, "the run saves again")
}
