package redistoolset_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/redistoolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cache index of another type must not let entries in unindexed, where
// no bound ever removes them.
func TestCacheIndexOfAnotherTypeStoresNoEntry(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "p:cache:index", "not a sorted set", 0).Err())
	cache := redistoolset.NewResultCache(c, &redistoolset.ResultCacheOptions{Prefix: "p:", MaxEntries: 2})
	for i := range 5 {
		err := cache.Set(ctx, "k"+strconv.Itoa(i), []byte(`1`), 0)
		require.Error(t, err, "an index of another type is an error")
	}
	n, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "no entry was stored beside the foreign index")
	_, ok, err := cache.Get(ctx, "k0")
	require.NoError(t, err)
	assert.False(t, ok)
}

// A window of another type, or not a number, is an error: the call is
// refused, not admitted.
func TestRateLimiterWindowOfAnotherKindIsAnError(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	ctx := context.Background()
	l := redistoolset.NewRateLimiter(c, &redistoolset.RateLimiterOptions{Prefix: "p:"})
	require.NoError(t, c.HSet(ctx, "p:rate:h", "a", "b").Err())
	require.NoError(t, c.Set(ctx, "p:rate:s", "soon", 0).Err())
	lim := toolset.RateLimit{Requests: 10, Interval: time.Minute, Burst: 10}
	for _, k := range []string{"h", "s"} {
		_, ok, err := l.Reserve(ctx, k, lim, 0)
		assert.Error(t, err, k)
		assert.False(t, ok, k)
	}
}

// Many goroutines on many connections take exactly Burst calls of a
// fresh window.
func TestRateLimiterAdmitsExactlyBurstUnderConcurrency(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	ctx := context.Background()
	l := redistoolset.NewRateLimiter(c, &redistoolset.RateLimiterOptions{Prefix: "p:"})
	lim := toolset.RateLimit{Requests: 10, Interval: time.Hour, Burst: 10}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 10 {
				_, ok, err := l.Reserve(ctx, "k", lim, 0)
				if err == nil && ok {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 10, admitted.Load())
}

// Concurrent writers never leave more than MaxEntries entries.
func TestResultCacheBoundHoldsUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, _ := s.client()
	ctx := context.Background()
	cache := redistoolset.NewResultCache(c, &redistoolset.ResultCacheOptions{Prefix: "p:", MaxEntries: 7, MaxValueBytes: 8})
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			for i := range 30 {
				_ = cache.Set(ctx, strconv.Itoa(g)+"/"+strconv.Itoa(i), []byte(`"12345"`), 0)
				_ = cache.Set(ctx, "big"+strconv.Itoa(g), []byte(`"123456789"`), 0)
			}
		})
	}
	wg.Wait()
	n, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 8, n, "7 entries and the index")
	zn, err := c.ZCard(ctx, "p:cache:index").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 7, zn)
}

// A value larger than MaxValueBytes, written by another writer, is a
// miss, and is not read whole.
func TestResultCacheGetRefusesOversizedValue(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, trips := s.client()
	ctx := context.Background()
	cache := redistoolset.NewResultCache(c, &redistoolset.ResultCacheOptions{Prefix: "p:", MaxValueBytes: 16})
	sum := sha256.Sum256([]byte("k"))
	require.NoError(t, c.Set(ctx, "p:cache:"+hex.EncodeToString(sum[:]), `"`+strings.Repeat("x", 1<<20)+`"`, 0).Err())
	v, ok, err := cache.Get(ctx, "k")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Zero(t, len(v), "nothing of the value is returned")

	require.NoError(t, cache.Set(ctx, "k", []byte(`"0123456789abcd"`), 0))
	before := trips.Load()
	v, ok, err = cache.Get(ctx, "k")
	require.NoError(t, err)
	assert.True(t, ok, "a value of exactly MaxValueBytes is a hit")
	assert.Equal(t, `"0123456789abcd"`, string(v))
	assert.EqualValues(t, 1, trips.Load()-before, "a read is one round trip")
	_, ok, err = cache.Get(ctx, "absent")
	require.NoError(t, err)
	assert.False(t, ok)
}
