// Package redistoolset keeps the state that the replicas of a service
// share in Redis: the saved state of runs ([RunStore], for
// [toolset.ResumeRun]), rate-limit windows ([RateLimiter], for
// [toolset.RateLimit.Limiter]) and cached results ([ResultCache], for
// [toolset.CachePolicy.Shared]).
//
// Each decision is one atomic step of the server, a Lua script run with
// EVALSHA, so that one call costs one round trip (two the first time a
// script is run on a server, which then learns it): a save is a
// compare-and-swap, a rate-limit decision takes its place in the window
// or leaves it, a cache write and its eviction happen together. Times
// are the server's (TIME), so the replicas' clocks need not agree.
//
// Every key starts with a prefix (by default "toolset:"), so several
// applications can share one Redis. On Redis Cluster, put a hash tag in
// the prefix ("{myapp}:") so that a cache's entries and its index are in
// one slot.
//
// When Redis cannot be reached, the [RunStore] returns the error (the run
// stops with it, and what was saved stays saved), the [RateLimiter]
// refuses calls (the model is told to try again later) unless made to let
// them through, and the core bypasses the [ResultCache]. The client
// reconnects by itself: once Redis is back, everything works again.
package redistoolset

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// DefaultPrefix starts every key when an Options' Prefix is empty.
const DefaultPrefix = "toolset:"

func prefixOr(p string) string {
	if p == "" {
		return DefaultPrefix
	}
	return p
}

// outage tracks whether Redis is failing for one of this package's
// values, so that an outage is logged when it begins and when it ends,
// not at every call.
type outage struct {
	down atomic.Bool
}

func (o *outage) failed(ctx context.Context, what string, err error) {
	if o.down.CompareAndSwap(false, true) {
		logWarn(ctx, "redistoolset: "+what+" failing", slog.Any("error", err))
	}
}

func (o *outage) answered(ctx context.Context, what string) {
	if o.down.Load() && o.down.CompareAndSwap(true, false) {
		logWarn(ctx, "redistoolset: "+what+" recovered")
	}
}

func logWarn(ctx context.Context, msg string, attrs ...any) {
	defer func() { _ = recover() }()
	slog.Default().WarnContext(ctx, msg, attrs...)
}
