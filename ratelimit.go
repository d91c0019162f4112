package toolset

import (
	"context"
	"fmt"
	"math"
	"sync"
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
	// call with a [*RateLimitError] with its Err set, unless it is made to let calls
	// through when it fails. A call that waits for its turn and gives up
	// (its context ends) has used its place in the window.
	Limiter RateLimiter
	// Key names the window in Limiter; empty means the tool's name. Tools
	// with the same Key in one Limiter share their window.
	Key string
}

// WithRateLimit limits how often the tool runs. The window belongs to the
// tool, not to its name: calls through every renamed or prefixed copy count
// against the same limit. A tool with an origin ([WithOrigin]) keeps the
// window of the tools of its name and origin made before it with the same
// option value, so that a tool made again (an MCP server's, announced
// anew) does not start afresh. Calls answered from the tool's cache take
// no token. A limit with no requests or no interval is ignored.
func WithRateLimit(l RateLimit) ToolOption {
	if l.Requests <= 0 || l.Interval <= 0 {
		return func(*Tool) {}
	}
	burst := l.Burst
	if burst <= 0 {
		burst = l.Requests
	}
	every := rate.Every(l.Interval / time.Duration(l.Requests))
	windows := &rateWindows{}
	return func(t *Tool) {
		if l.Limiter != nil {
			shared := l // each tool its own copy: Key defaults to its name
			shared.Burst = burst
			if shared.Key == "" {
				shared.Key = t.core.name
			}
			t.core.limiter, t.core.windows, t.core.rateShared = nil, nil, &shared
			return
		}
		t.core.rateShared = nil
		t.core.limiter = rate.NewLimiter(every, burst)
		t.core.windows = windows
		t.core.rateReject = l.Reject
	}
}

// rateWindows are the in-memory windows of one [WithRateLimit] option
// value, by the identity of the tools it limits (see [WithOrigin]).
type rateWindows struct {
	mu      sync.Mutex
	byID    map[string]*rate.Limiter
	pruneAt int // prune idle windows when there are this many
}

// minPruneWindows is the fewest windows a rateWindows prunes.
const minPruneWindows = 64

// limiter returns the window of identity id, which is fresh if it has
// none yet. A window whose bucket is full is dropped when the windows
// grow, since it limits nothing a fresh one does not: an origin that
// announces ever new tool names keeps only the windows in use.
func (w *rateWindows) limiter(id string, fresh *rate.Limiter) *rate.Limiter {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l, ok := w.byID[id]; ok {
		return l
	}
	if w.byID == nil {
		w.byID = make(map[string]*rate.Limiter)
	}
	if len(w.byID) >= max(w.pruneAt, minPruneWindows) {
		now := time.Now()
		for k, l := range w.byID {
			if l.TokensAt(now) >= float64(l.Burst()) {
				delete(w.byID, k)
			}
		}
		w.pruneAt = 2 * len(w.byID)
	}
	w.byID[id] = fresh
	return fresh
}

// RateLimitError reports a call refused by the tool's rate limit: its
// window was full (RetryAfter says for how long), or its [RateLimiter]
// failed (Err is set: its store unreachable, say), so that the limit could
// not be checked and the call did not run. The model sees it, and is told
// when to try again.
type RateLimitError struct {
	// Tool is the name the model called.
	Tool string
	// RetryAfter is how long until a call would be allowed; zero when Err
	// is set.
	RetryAfter time.Duration
	// Err is the limiter's error when the limit could not be checked, nil
	// when the window was full.
	Err error
}

// Error implements error.
func (e *RateLimitError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("toolset: tool %q: its rate limit could not be checked: %v", e.Tool, e.Err)
	}
	return "toolset: " + e.ModelText()
}

// ModelText implements [ModelError]. It does not include the limiter's
// error, which is no business of the model's.
func (e *RateLimitError) ModelText() string {
	if e.Err != nil {
		return fmt.Sprintf("tool %q is temporarily unavailable (its rate limit cannot be checked); try again later", e.Tool)
	}
	return fmt.Sprintf("tool %q is rate limited; try again in %v", e.Tool, roundUp(e.RetryAfter))
}

// Unwrap returns the limiter's error, if any.
func (e *RateLimitError) Unwrap() error { return e.Err }

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

// RateLimiter keeps rate-limit windows outside a tool, so that several
// tools, or several processes, count against one limit: set it as
// [RateLimit.Limiter]. Without one, a tool keeps its window in its own
// memory, as [NewMemoryRateLimiter]'s do. A RateLimiter shared by several
// processes (Redis, say) decides each call in one step of its store, so
// that two processes cannot both take the last call of a window.
// A RateLimiter must be safe for concurrent use.
//
// What a tool relies on, beyond Reserve's own contract:
//
//   - maxWait is 0 for a limit that rejects (see [RateLimit.Reject]), the
//     time left before the context's deadline for one that waits, and
//     math.MaxInt64 (any wait) when the context has no deadline.
//   - A call taken with a delay holds its place: the calls after it come
//     after it, even if its caller gives up waiting.
//   - A window holds at most Burst calls, however long it was quiet.
//   - A key is any string: the tool's name or the [RateLimit.Key] the
//     application chose. Windows of different keys are apart.
//   - Reserve called with a context that is already done returns an
//     error and takes nothing.
//
// [github.com/gotoolset/toolset/toolsettest.TestRateLimiter] checks a
// limiter against all of this.
type RateLimiter interface {
	// Reserve takes one call from the window named key, which allows
	// limit.Requests calls per limit.Interval on average and limit.Burst
	// back to back (Burst is never zero here), if that call may start
	// within maxWait: it returns ok true and how long the caller must wait
	// before starting it (zero: now; never more than maxWait). Otherwise
	// it takes nothing and returns ok false and how long until a call
	// would be allowed. An error means the window could not be
	// consulted; the call is then refused with a [*RateLimitError] with its Err set.
	Reserve(ctx context.Context, key string, limit RateLimit, maxWait time.Duration) (delay time.Duration, ok bool, err error)
}

// admitShared applies a rate limit kept by a RateLimiter: step 5 of the
// call path.
func (c *toolCore) admitShared(ctx context.Context, name string, clock *callClock) error {
	l := c.rateShared
	maxWait := time.Duration(0)
	if !l.Reject {
		maxWait = math.MaxInt64
		if d, ok := ctx.Deadline(); ok {
			maxWait = max(d.Sub(clock.now()), 0)
		}
	}
	delay, ok, err := l.Limiter.Reserve(ctx, l.Key, *l, maxWait)
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("toolset: tool %q: waiting for its rate limit: %w", name, ctx.Err())
	case err != nil:
		return &RateLimitError{Tool: name, Err: err}
	case !ok && l.Reject:
		return &RateLimitError{Tool: name, RetryAfter: delay}
	case !ok:
		return fmt.Errorf("toolset: tool %q: its rate limit allows a call only after the context's deadline: %w", name, context.DeadlineExceeded)
	case delay <= 0:
		return nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("toolset: tool %q: waiting for its rate limit: %w", name, ctx.Err())
	}
}

// MemoryRateLimiter is a [RateLimiter] in the memory of one process, with
// a token bucket per key: the windows a tool keeps by itself, made
// shareable between tools by name. Make one with [NewMemoryRateLimiter].
type MemoryRateLimiter struct {
	mu      sync.Mutex
	windows map[string]*memoryWindow
}

type memoryWindow struct {
	limit rate.Limit
	burst int
	lim   *rate.Limiter
}

// NewMemoryRateLimiter returns a limiter with no windows yet.
func NewMemoryRateLimiter() *MemoryRateLimiter {
	return &MemoryRateLimiter{windows: make(map[string]*memoryWindow)}
}

// Reserve implements [RateLimiter]. A key used with one limit and then
// with another keeps its window, which refills at the new rate up to the
// new burst from then on: calls that alternate between two limits under
// one key are limited by both, never given a fresh window each.
func (m *MemoryRateLimiter) Reserve(ctx context.Context, key string, limit RateLimit, maxWait time.Duration) (time.Duration, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	if limit.Requests <= 0 || limit.Interval <= 0 {
		return 0, false, fmt.Errorf("toolset: rate limit %q: %d requests per %v is no limit", boundName(key), limit.Requests, limit.Interval)
	}
	every := rate.Every(limit.Interval / time.Duration(limit.Requests))
	burst := max(limit.Burst, 1)
	now := time.Now()
	m.mu.Lock()
	w := m.windows[key]
	switch {
	case w == nil:
		w = &memoryWindow{limit: every, burst: burst, lim: rate.NewLimiter(every, burst)}
		m.windows[key] = w
	case w.limit != every || w.burst != burst:
		w.lim.SetLimitAt(now, every)
		w.lim.SetBurstAt(now, burst)
		w.limit, w.burst = every, burst
	}
	m.mu.Unlock()
	r := w.lim.ReserveN(now, 1)
	if !r.OK() {
		return time.Duration(math.MaxInt64), false, nil
	}
	delay := r.DelayFrom(now)
	if delay > maxWait {
		r.CancelAt(now)
		return delay, false, nil
	}
	return delay, true, nil
}
