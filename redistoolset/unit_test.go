package redistoolset_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/redistoolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunStoreSaveIsCompareAndSwap(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, trips := s.client()
	ctx := context.Background()
	store := redistoolset.NewRunStore(c, &redistoolset.RunStoreOptions{Prefix: "p:"})

	data, v, err := store.Load(ctx, "r")
	require.NoError(t, err)
	assert.Nil(t, data)
	assert.Zero(t, v)

	v1, err := store.Save(ctx, "r", []byte(`{"a":1}`), 0, 0)
	require.NoError(t, err)
	require.NotZero(t, v1)
	_, err = store.Save(ctx, "r", []byte(`{"a":2}`), 0, 0)
	var conflict *toolset.RunStateConflictError
	require.ErrorAs(t, err, &conflict, "a second first save loses")
	assert.Equal(t, v1, conflict.Actual)
	assert.ErrorIs(t, err, toolset.ErrRunStateConflict)

	before := trips.Load()
	v2, err := store.Save(ctx, "r", []byte(`{"a":3}`), v1, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1), trips.Load()-before, "a save is one round trip")
	assert.Greater(t, v2, v1)
	_, err = store.Save(ctx, "r", []byte(`{"a":4}`), v1, 0)
	require.ErrorAs(t, err, &conflict, "a stale version loses")
	data, v, err = store.Load(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, `{"a":3}`, string(data))
	assert.Equal(t, v2, v)

	require.ErrorAs(t, store.Delete(ctx, "r", v1), &conflict, "a stale version deletes nothing")
	require.NoError(t, store.Delete(ctx, "r", v2))
	require.NoError(t, store.Delete(ctx, "r", v2), "deleting no state is no error")
	v3, err := store.Save(ctx, "r", []byte(`{}`), 0, 0)
	require.NoError(t, err)
	assert.NotContains(t, []int64{v1, v2}, v3, "a version is never given twice")
	// The version is kept beside the data, not in it.
	fields, err := c.HGetAll(ctx, "p:run:r").Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"d": "{}", "v": strconv.FormatInt(v3, 10)}, fields)
}

func TestRunStoreStateExpires(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	ctx := context.Background()
	store := redistoolset.NewRunStore(c, &redistoolset.RunStoreOptions{})
	v, err := store.Save(ctx, "r", []byte(`{}`), 0, time.Hour)
	require.NoError(t, err)
	ttl, err := c.PTTL(ctx, redistoolset.DefaultPrefix+"run:r").Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Hour, ttl, float64(time.Minute))
	_, err = store.Save(ctx, "r", []byte(`{}`), v, 0)
	require.NoError(t, err)
	ttl, err = c.PTTL(ctx, redistoolset.DefaultPrefix+"run:r").Result()
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), ttl, "a save with no ttl keeps the state until deleted")

	_, err = store.Save(ctx, "short", []byte(`{}`), 0, 20*time.Millisecond)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		data, v, err := store.Load(ctx, "short")
		return err == nil && data == nil && v == 0
	}, 5*time.Second, 10*time.Millisecond)
}

func TestRateLimiterRefusalTakesNothing(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	ctx := context.Background()
	l := redistoolset.NewRateLimiter(c, &redistoolset.RateLimiterOptions{})
	limit := toolset.RateLimit{Requests: 2, Interval: time.Hour, Burst: 2}
	for range 2 {
		_, ok, err := l.Reserve(ctx, "k", limit, 0)
		require.NoError(t, err)
		require.True(t, ok)
	}
	for range 5 {
		delay, ok, err := l.Reserve(ctx, "k", limit, 0)
		require.NoError(t, err)
		require.False(t, ok)
		assert.InDelta(t, 30*time.Minute, delay, float64(time.Second), "refusals do not push the window back")
	}
	delay, ok, err := l.Reserve(ctx, "k", limit, time.Hour)
	require.NoError(t, err)
	require.True(t, ok, "a caller that waits long enough gets a place")
	assert.InDelta(t, 30*time.Minute, delay, float64(time.Second))
	delay, ok, err = l.Reserve(ctx, "k", limit, 0)
	require.NoError(t, err)
	require.False(t, ok)
	assert.InDelta(t, time.Hour, delay, float64(time.Second), "the waiting caller's place is taken")
	_, ok, err = l.Reserve(ctx, "other", limit, 0)
	require.NoError(t, err)
	assert.True(t, ok, "keys have their own windows")
}

func TestResultCacheBoundsItsEntries(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	ctx := context.Background()
	cache := redistoolset.NewResultCache(c, &redistoolset.ResultCacheOptions{Prefix: "p:", MaxEntries: 3, MaxValueBytes: 10})
	for i := range 5 {
		require.NoError(t, cache.Set(ctx, "k"+strconv.Itoa(i), []byte(`"v`+strconv.Itoa(i)+`"`), 0))
	}
	for i := range 5 {
		v, ok, err := cache.Get(ctx, "k"+strconv.Itoa(i))
		require.NoError(t, err)
		if i < 2 {
			assert.False(t, ok, "the oldest entries are out")
			continue
		}
		assert.True(t, ok)
		assert.Equal(t, `"v`+strconv.Itoa(i)+`"`, string(v))
	}
	n, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 4, n, "3 entries and the index")

	require.NoError(t, cache.Set(ctx, "big", []byte(`"0123456789"`), 0))
	_, ok, err := cache.Get(ctx, "big")
	require.NoError(t, err)
	assert.False(t, ok, "a value over MaxValueBytes is not kept")

	require.NoError(t, cache.Set(ctx, "short", []byte(`1`), 20*time.Millisecond))
	require.Eventually(t, func() bool {
		_, ok, err := cache.Get(ctx, "short")
		return err == nil && !ok
	}, 5*time.Second, 10*time.Millisecond, "entries expire")
}

// Not in parallel: no other test's server may take the stopped one's port.
func TestUnreachableRedisIsAnError(t *testing.T) {
	s := startServer(t)
	c, _ := s.client()
	s.stop()
	ctx := context.Background()
	_, _, err := redistoolset.NewRunStore(c, &redistoolset.RunStoreOptions{}).Load(ctx, "r")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `loading run "r"`)
	_, ok, err := redistoolset.NewRateLimiter(c, &redistoolset.RateLimiterOptions{}).Reserve(ctx, "k", toolset.RateLimit{Requests: 1, Interval: time.Second, Burst: 1}, 0)
	require.Error(t, err)
	assert.False(t, ok)
	_, ok, err = redistoolset.NewRateLimiter(c, &redistoolset.RateLimiterOptions{FailOpen: true}).Reserve(ctx, "k", toolset.RateLimit{Requests: 1, Interval: time.Second, Burst: 1}, 0)
	require.NoError(t, err)
	assert.True(t, ok, "fail open")
	_, _, err = redistoolset.NewResultCache(c, &redistoolset.ResultCacheOptions{}).Get(ctx, "k")
	require.Error(t, err)
	assert.False(t, errors.Is(err, context.Canceled))
}

func TestRunStoreRefusesHugeRunID(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, trips := s.client()
	store := redistoolset.NewRunStore(c, &redistoolset.RunStoreOptions{})
	id := strings.Repeat("x", redistoolset.MaxRunIDBytes+1)
	ctx := context.Background()
	_, _, err := store.Load(ctx, id)
	require.ErrorContains(t, err, "over the 1024")
	_, err = store.Save(ctx, id, []byte(`{}`), 0, 0)
	require.ErrorContains(t, err, "over the 1024")
	require.ErrorContains(t, store.Delete(ctx, id, 0), "over the 1024")
	assert.Less(t, len(err.Error()), 200, "the ID is not quoted whole")
	assert.Zero(t, trips.Load(), "nothing reaches Redis")
}
