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
