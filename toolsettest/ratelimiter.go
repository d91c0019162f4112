package toolsettest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
)

// TestRateLimiter checks that the limiters newLimiter makes keep the
// contract of [toolset.RateLimiter], in subtests: a window admits Burst
// calls back to back and then one per Interval/Requests; a call refused
// takes nothing and says how long until one would be admitted; a call
// admitted with a delay holds its place, the delay never above the wait
// the caller accepts (math.MaxInt64 included: any wait); a quiet window
// refills to Burst and no further; windows of different keys (empty,
// 64 KiB long, binary) are apart; concurrent calls on one window admit
// exactly Burst; a call whose context has ended is an error and takes
// nothing.
//
// newLimiter is called once per subtest, and must return a limiter of
// its own, with no windows: a fresh key prefix, say, for a limiter on a
// shared server. Delays are checked to within the suite's [TimeUnit].
func TestRateLimiter(t *testing.T, newLimiter func(t *testing.T) toolset.RateLimiter, opts ...BackendOption) {
	t.Helper()
	c := newBackendConfig(opts)
	s := &rateLimiterSuite{backendConfig: c, newLimiter: newLimiter}
	c.run(t, "Burst", s.burst)
	c.run(t, "RefusalTakesNothing", s.refusalTakesNothing)
	c.run(t, "DelayedCallHoldsItsPlace", s.delayed)
	c.run(t, "Refill", s.refill)
	c.run(t, "LongInterval", s.longInterval)
	c.run(t, "HostileKeys", s.hostileKeys)
	c.run(t, "Concurrent", s.concurrent)
	c.run(t, "ContextDone", s.contextDone)
}

type rateLimiterSuite struct {
	backendConfig
	newLimiter func(t *testing.T) toolset.RateLimiter
}

type reserved struct {
	delay time.Duration
	ok    bool
	err   error
}

// limit is the suite's usual window: one call per 2 units, 3 back to back.
func (s *rateLimiterSuite) limit() toolset.RateLimit {
	return toolset.RateLimit{Requests: 1, Interval: 2 * s.unit, Burst: 3}
}

func (s *rateLimiterSuite) reserve(t *testing.T, l toolset.RateLimiter, key string, limit toolset.RateLimit, maxWait time.Duration) reserved {
	t.Helper()
	r := within(t, fmt.Sprintf("Reserve(%q, max wait %v)", quote(key), maxWait), func(ctx context.Context) reserved {
		d, ok, err := l.Reserve(ctx, key, limit, maxWait)
		return reserved{d, ok, err}
	})
	if r.err != nil {
		t.Fatalf("Reserve(%q, max wait %v): %v", quote(key), maxWait, r.err)
	}
	if r.ok && r.delay > maxWait {
		t.Fatalf("Reserve(%q, max wait %v) admitted a call after %v, beyond the wait accepted", quote(key), maxWait, r.delay)
	}
	if r.delay < 0 {
		t.Fatalf("Reserve(%q) gave a negative delay, %v", quote(key), r.delay)
	}
	return r
}

// near reports whether got is want, or in a real clock at most a unit
// less (time passed since) and never more.
func (s *rateLimiterSuite) near(got, want time.Duration) bool {
	if s.bubble {
		return got == want
	}
	return got <= want+s.unit/10 && got > want-s.unit
}

// admitNow fails t unless a call on key is admitted at once.
func (s *rateLimiterSuite) admitNow(t *testing.T, l toolset.RateLimiter, key string, limit toolset.RateLimit, what string) {
	t.Helper()
	if r := s.reserve(t, l, key, limit, 0); !r.ok || r.delay != 0 {
		t.Fatalf("%s: Reserve(%q, no wait) = delay %v, ok %v; want the call admitted now", what, quote(key), r.delay, r.ok)
	}
}

// refuse fails t unless a call on key with no wait is refused with about
// want to wait, and returns that wait.
func (s *rateLimiterSuite) refuse(t *testing.T, l toolset.RateLimiter, key string, limit toolset.RateLimit, want time.Duration, what string) time.Duration {
	t.Helper()
	r := s.reserve(t, l, key, limit, 0)
	if r.ok {
		t.Fatalf("%s: Reserve(%q, no wait) admitted a call (delay %v); want it refused", what, quote(key), r.delay)
	}
	if !s.near(r.delay, want) {
		t.Fatalf("%s: Reserve(%q) refused a call with %v to wait; want %v", what, quote(key), r.delay, want)
	}
	return r.delay
}

func (s *rateLimiterSuite) burst(t *testing.T) {
	l := s.newLimiter(t)
	lim := s.limit()
	for i := range lim.Burst {
		s.admitNow(t, l, "w", lim, fmt.Sprintf("call %d of a burst of %d", i+1, lim.Burst))
	}
	s.refuse(t, l, "w", lim, lim.Interval, "the call after the burst")

	one := toolset.RateLimit{Requests: 5, Interval: 10 * s.unit, Burst: 1}
	s.admitNow(t, l, "one", one, "the first call")
	s.refuse(t, l, "one", one, 2*s.unit, "the call after a burst of 1")
}

func (s *rateLimiterSuite) refusalTakesNothing(t *testing.T) {
	l := s.newLimiter(t)
	lim := s.limit()
	for range lim.Burst {
		s.admitNow(t, l, "w", lim, "the burst")
	}
	first := s.refuse(t, l, "w", lim, lim.Interval, "the first call refused")
	for i := range 5 {
		again := s.refuse(t, l, "w", lim, lim.Interval, fmt.Sprintf("refusal %d", i+2))
		if again > first {
			t.Fatalf("refusal %d said to wait %v, more than the first's %v: a refused call took a place", i+2, again, first)
		}
	}
	s.sleep(lim.Interval + s.unit/2)
	s.admitNow(t, l, "w", lim, "a call one interval after the refusals")
}

func (s *rateLimiterSuite) delayed(t *testing.T) {
	l := s.newLimiter(t)
	lim := s.limit()
	cost := lim.Interval / time.Duration(lim.Requests)
	for range lim.Burst {
		s.admitNow(t, l, "w", lim, "the burst")
	}
	r := s.reserve(t, l, "w", lim, cost+s.unit/2)
	if !r.ok || !s.near(r.delay, cost) {
		t.Fatalf("Reserve with a wait of %v = delay %v, ok %v; want the call admitted after %v", cost+s.unit/2, r.delay, r.ok, cost)
	}
	s.refuse(t, l, "w", lim, 2*cost, "the call after one admitted with a delay")
	r = s.reserve(t, l, "w", lim, math.MaxInt64)
	if !r.ok || !s.near(r.delay, 2*cost) {
		t.Fatalf("Reserve with any wait (math.MaxInt64) = delay %v, ok %v; want the call admitted after %v", r.delay, r.ok, 2*cost)
	}
	s.refuse(t, l, "w", lim, 3*cost, "the call after two admitted with a delay")
}

func (s *rateLimiterSuite) refill(t *testing.T) {
	l := s.newLimiter(t)
	lim := s.limit()
	cost := lim.Interval / time.Duration(lim.Requests)
	for range lim.Burst {
		s.admitNow(t, l, "w", lim, "the burst")
	}
	s.sleep(cost + s.unit/2)
	s.admitNow(t, l, "w", lim, "the call one cost after the burst")
	s.refuse(t, l, "w", lim, cost-s.unit/2, "the second call one cost after the burst")

	// A window quiet for longer than it takes to fill holds Burst calls,
	// no more.
	s.sleep(time.Duration(lim.Burst+2) * cost)
	for i := range lim.Burst {
		s.admitNow(t, l, "w", lim, fmt.Sprintf("call %d after a quiet period", i+1))
	}
	s.refuse(t, l, "w", lim, cost, "the call past Burst after a quiet period")
}

func (s *rateLimiterSuite) longInterval(t *testing.T) {
	l := s.newLimiter(t)
	day := toolset.RateLimit{Requests: 2, Interval: 48 * time.Hour, Burst: 1}
	s.admitNow(t, l, "day", day, "the first call of a day's window")
	s.refuse(t, l, "day", day, 24*time.Hour, "the second call of a day's window")
}

func (s *rateLimiterSuite) hostileKeys(t *testing.T) {
	l := s.newLimiter(t)
	lim := toolset.RateLimit{Requests: 1, Interval: time.Hour, Burst: 1}
	refused := map[string]bool{}
	for _, k := range hostileKeys() {
		r := within(t, "Reserve", func(ctx context.Context) reserved {
			d, ok, err := l.Reserve(ctx, k.key, lim, 0)
			return reserved{d, ok, err}
		})
		switch {
		case r.err != nil:
			t.Logf("the limiter refuses key %s: %v", k.name, r.err)
			refused[k.key] = true
		case !r.ok:
			t.Fatalf("the first call on key %s (%q) was refused (wait %v): windows of different keys are shared", k.name, quote(k.key), r.delay)
		}
	}
	for _, k := range hostileKeys() {
		if !refused[k.key] {
			s.refuse(t, l, k.key, lim, time.Hour, "the second call on key "+k.name)
		}
	}
}

func (s *rateLimiterSuite) concurrent(t *testing.T) {
	l := s.newLimiter(t)
	lim := toolset.RateLimit{Requests: 1, Interval: time.Hour, Burst: 5}
	const workers, calls = 8, 4
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for range workers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			for range calls {
				_, ok, err := l.Reserve(ctx, "shared", lim, 0)
				if err != nil {
					errs <- err
					return
				}
				if ok {
					admitted.Add(1)
				}
			}
		})
	}
	waitAll(t, &wg)
	close(errs)
	for err := range errs {
		t.Errorf("Reserve: %v", err)
	}
	if n := admitted.Load(); n != int64(lim.Burst) {
		t.Fatalf("%d concurrent calls on a window of burst %d admitted %d", workers*calls, lim.Burst, n)
	}
}

func (s *rateLimiterSuite) contextDone(t *testing.T) {
	l := s.newLimiter(t)
	lim := s.limit()
	for range lim.Burst + 1 {
		if err := withDone(t, "Reserve", func(ctx context.Context) error {
			_, _, err := l.Reserve(ctx, "w", lim, math.MaxInt64)
			return err
		}); err == nil {
			t.Fatal("Reserve with a cancelled context succeeded; want the context's error")
		}
	}
	for range lim.Burst {
		s.admitNow(t, l, "w", lim, "after calls with a cancelled context")
	}
}
