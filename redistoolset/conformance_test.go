package redistoolset_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/redistoolset"
	"github.com/gotoolset/toolset/toolsettest"
)

// The Redis backends are held to the contracts of the toolset's
// interfaces by the suites every backend runs, against a real
// redis-server. Each check gets a prefix of its own on one server; the
// server keeps the clock, so the suites wait in real time.

// prefixes makes a key prefix per check.
func prefixes() func(t *testing.T) string {
	var n atomic.Int64
	return func(*testing.T) string { return fmt.Sprintf("conformance%d:", n.Add(1)) }
}

func TestRunStoreConformance(t *testing.T) {
	t.Parallel()
	c, _ := startServer(t).client()
	prefix := prefixes()
	toolsettest.TestRunStore(t, func(t *testing.T) toolset.RunStore {
		return redistoolset.NewRunStore(c, &redistoolset.RunStoreOptions{Prefix: prefix(t)})
	})
}

func TestRateLimiterConformance(t *testing.T) {
	t.Parallel()
	c, _ := startServer(t).client()
	prefix := prefixes()
	toolsettest.TestRateLimiter(t, func(t *testing.T) toolset.RateLimiter {
		return redistoolset.NewRateLimiter(c, &redistoolset.RateLimiterOptions{Prefix: prefix(t)})
	})
}

func TestResultCacheConformance(t *testing.T) {
	t.Parallel()
	c, _ := startServer(t).client()
	prefix := prefixes()
	const bound = 50
	toolsettest.TestResultCache(t, func(t *testing.T) toolset.ResultCache {
		return redistoolset.NewResultCache(c, &redistoolset.ResultCacheOptions{Prefix: prefix(t), MaxEntries: bound})
	}, toolsettest.MaxEntries(bound))
}
