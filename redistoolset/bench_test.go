package redistoolset_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/redistoolset"
)

func benchTool(opts ...toolset.ToolOption) *toolset.ToolList {
	tools, err := toolset.BuildTools(context.Background(), "bench", toolset.NewTool("lookup", "Look a record up.",
		func(_ context.Context, in struct {
			ID int `json:"id"`
		}) (string, error) {
			return "record " + strconv.Itoa(in.ID), nil
		}, opts...))
	if err != nil {
		panic(err)
	}
	return tools
}

// nextID gives each miss arguments no earlier call had, across the runs
// of a benchmark on one server.
var nextID atomic.Int64

// benchLoop calls the tool once per iteration, with new arguments each
// time if fresh, and reports the round trips to Redis per call.
func benchLoop(b *testing.B, tools *toolset.ToolList, trips *atomic.Int64, fresh bool) {
	ctx := context.Background()
	args := json.RawMessage(`{"id":1}`)
	start := trips.Load()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if fresh {
			args = json.RawMessage(`{"id":` + strconv.FormatInt(nextID.Add(1)+1, 10) + `}`)
		}
		n++
		if _, err := tools.Execute(ctx, toolset.ToolCall{Name: "lookup", Args: args}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(trips.Load()-start)/float64(n), "round-trips/call")
}

// BenchmarkRateLimitedCall calls a tool under a rate limit never reached,
// kept in this process and in Redis on loopback.
func BenchmarkRateLimitedCall(b *testing.B) {
	s := startServer(b)
	c, trips := s.client()
	limit := toolset.RateLimit{Requests: 1 << 30, Interval: time.Second}
	b.Run("memory", func(b *testing.B) {
		benchLoop(b, benchTool(toolset.WithRateLimit(limit)), trips, false)
	})
	b.Run("redis", func(b *testing.B) {
		l := limit
		l.Limiter = redistoolset.NewRateLimiter(c, &redistoolset.RateLimiterOptions{})
		benchLoop(b, benchTool(toolset.WithRateLimit(l)), trips, false)
	})
}

// BenchmarkCachedCall calls a cached tool, its cache in this process and
// in Redis on loopback, with the arguments of an earlier call (hit) and
// with new ones (miss).
func BenchmarkCachedCall(b *testing.B) {
	s := startServer(b)
	c, trips := s.client()
	shared := toolset.CachePolicy{Shared: redistoolset.NewResultCache(c, &redistoolset.ResultCacheOptions{MaxEntries: 1 << 20}), TTL: time.Minute}
	for _, bc := range []struct {
		name   string
		policy toolset.CachePolicy
		fresh  bool
	}{
		{"memory-hit", toolset.CachePolicy{}, false},
		{"redis-hit", shared, false},
		{"memory-miss", toolset.CachePolicy{}, true},
		{"redis-miss", shared, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tools := benchTool(toolset.WithCache(bc.policy))
			if _, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "lookup", Args: json.RawMessage(`{"id":1}`)}); err != nil {
				b.Fatal(err)
			}
			benchLoop(b, tools, trips, bc.fresh)
		})
	}
}
