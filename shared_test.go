package toolset_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mapCache is a ResultCache in a map that can be made to fail, standing
// for a store shared by processes.
type mapCache struct {
	mu      sync.Mutex
	entries map[string][]byte
	fail    bool
	gets    int
}

func (m *mapCache) Get(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.fail {
		return nil, false, errors.New("store unreachable")
	}
	v, ok := m.entries[key]
	return bytes.Clone(v), ok, nil
}

func (m *mapCache) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("store unreachable")
	}
	if m.entries == nil {
		m.entries = make(map[string][]byte)
	}
	m.entries[key] = bytes.Clone(value)
	return nil
}

func (m *mapCache) setFail(f bool) { m.mu.Lock(); m.fail = f; m.mu.Unlock() }

// failingLimiter is a RateLimiter whose store is unreachable.
type failingLimiter struct{}

func (failingLimiter) Reserve(context.Context, string, toolset.RateLimit, time.Duration) (time.Duration, bool, error) {
	return 0, false, errors.New("dial tcp 127.0.0.1:6379: connection refused")
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
	var le *toolset.RateLimiterError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "lookup", le.Tool)
	msg, visible := toolset.ErrorText(err)
	require.True(t, visible, "the model sees it")
	assert.Contains(t, msg, "try again later")
	assert.NotContains(t, msg, "127.0.0.1", "the store's error is not the model's business")
	assert.Zero(t, runs.Load(), "a call whose limit cannot be checked does not run")
}

func TestSharedCacheFilledByOneToolValueHitsInAnother(t *testing.T) {
	ctx := bounded(t)
	store := &mapCache{}
	var runs atomic.Int64
	policy := toolset.CachePolicy{Shared: store}
	a := clones(t, ctx, counted("lookup", &runs, toolset.WithCache(policy)))
	b := clones(t, ctx, counted("lookup", &runs, toolset.WithCache(policy)))
	first, err := call(t, ctx, a, "lookup", `{"id":7}`)
	require.NoError(t, err)
	second, err := call(t, ctx, b, "p_lookup", `{ "id": 7 }`)
	require.NoError(t, err)
	assert.Equal(t, first, second, "a string result comes back as that string")
	assert.EqualValues(t, 1, runs.Load())

	other := clones(t, ctx, counted("other", &runs, toolset.WithCache(policy)))
	_, err = call(t, ctx, other, "other", `{"id":7}`)
	require.NoError(t, err)
	assert.EqualValues(t, 2, runs.Load(), "another tool has its own entries")
}

func TestUnreachableSharedCacheIsBypassedWithOneWarningPerOutage(t *testing.T) {
	ctx := bounded(t)
	var buf bytes.Buffer
	var mu sync.Mutex
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	logged := func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }

	store := &mapCache{}
	var runs atomic.Int64
	tool := counted("lookup", &runs, toolset.WithCache(toolset.CachePolicy{Shared: store}))
	tools := clones(t, ctx, tool)
	store.setFail(true)
	for range 3 {
		_, err := call(t, ctx, tools, "lookup", `{"id":1}`)
		require.NoError(t, err, "the call runs uncached")
	}
	assert.EqualValues(t, 3, runs.Load())
	assert.Equal(t, 1, strings.Count(logged(), "shared result cache failing"), logged())

	store.setFail(false)
	for range 2 {
		_, err := call(t, ctx, tools, "lookup", `{"id":1}`)
		require.NoError(t, err)
	}
	assert.EqualValues(t, 4, runs.Load(), "the cache is used again once it answers")
	assert.Equal(t, 1, strings.Count(logged(), "cache recovered"), logged())

	store.setFail(true)
	_, err := call(t, ctx, tools, "lookup", `{"id":1}`)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(logged(), "shared result cache failing"), "a new outage warns again")
	assert.Equal(t, toolset.CacheStats{Hits: 1, Misses: 5}, tool.CacheStats())
}

func TestSharedRunScopedCacheIsRefused(t *testing.T) {
	var runs atomic.Int64
	tool := counted("lookup", &runs, toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun, Shared: &mapCache{}}))
	require.ErrorContains(t, tool.Err(), "run-scoped cache")
}
