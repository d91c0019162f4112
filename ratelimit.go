package toolset

import (
	"context"
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"
)

// RateLimit configures a tool's rate limit; see [WithRateLimit].
type RateLimit struct {
	// Requests calls are allowed per Interval, on average.
	Requests int
	// Interval is the window Requests is counted over.
	Interval time.Duration
	// Burst is how many calls may start back to back after a quiet period
	// (it does not bound how many run concurrently); zero means Requests.
	Burst int
	// Reject makes a call over the limit fail at once with a
	// [*RateLimitError] the model sees, saying when to retry. By default the
	// call waits for its turn, or until its context is done.
	Reject bool
	// Limiter keeps the window instead of the tool's own memory: give
	// every process the same shared limiter (a Redis one, say) for the
	// limit to hold across them all. A limiter that fails refuses the
	// call with a [*RateLimiterError], unless it is made to let calls
	// through when it fails. A call that waits for its turn and gives up
	// (its context ends) has used its place in the window.
	Limiter RateLimiter
	// Key names the window in Limiter; empty means the tool's name. Tools
	// with the same Key in one Limiter share their window.
	Key string
}

// WithRateLimit limits how often the tool runs. The window belongs to the
// tool, not to its name: calls through every renamed or prefixed copy count
// against the same limit. Calls answered from the tool's cache take no
// token. A limit with no requests or no interval is ignored.
func WithRateLimit(l RateLimit) ToolOption {
	return func(t *Tool) {
		if l.Requests <= 0 || l.Interval <= 0 {
			return
		}
		burst := l.Burst
		if burst <= 0 {
			burst = l.Requests
		}
		if l.Limiter != nil {
			l.Burst = burst
			if l.Key == "" {
				l.Key = t.core.name
			}
			t.core.limiter, t.core.rateShared = nil, &l
			return
		}
		t.core.rateShared = nil
		t.core.limiter = rate.NewLimiter(rate.Every(l.Interval/time.Duration(l.Requests)), burst)
		t.core.rateReject = l.Reject
	}
}

// RateLimitError reports a call refused by the tool's rate limit. The model
// sees it.
type RateLimitError struct {
	// Tool is the name the model called.
	Tool string
	// RetryAfter is how long until a call would be allowed.
	RetryAfter time.Duration
}

// Error implements error.
func (e *RateLimitError) Error() string { return "toolset: " + e.ModelText() }

// ModelText implements [ModelError].
func (e *RateLimitError) ModelText() string {
	return fmt.Sprintf("tool %q is rate limited; try again in %v", e.Tool, roundUp(e.RetryAfter))
}

// roundUp rounds d up to a whole second, or to a millisecond below a
// second, so the model is never told to retry too early.
func roundUp(d time.Duration) time.Duration {
	unit := time.Second
	if d < time.Second {
		unit = time.Millisecond
	}
	return (d + unit - 1).Truncate(unit)
}

// admit applies the rate limit: step 5 of the call path.
func (c *toolCore) admit(ctx context.Context, name string, clock *callClock) error {
	now := clock.now()
	if c.limiter.AllowN(now, 1) {
		return nil
	}
	if c.rateReject {
		r := c.limiter.ReserveN(now, 1)
		wait := time.Duration(math.MaxInt64)
		if r.OK() {
			wait = r.DelayFrom(now)
			r.CancelAt(now)
		}
		clock.ob.emit(CallEvent{Kind: EventRateLimitReject, Wait: wait})
		return &RateLimitError{Tool: name, RetryAfter: wait}
	}
	if err := c.limiter.Wait(ctx); err != nil {
		return fmt.Errorf("toolset: tool %q: waiting for its rate limit: %w", name, err)
	}
	if clock.ob != nil {
		clock.ob.emit(CallEvent{Kind: EventRateLimitWait, Wait: time.Since(now)})
	}
	return nil
}
