package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotoolset/toolset/internal/canonjson"
	"golang.org/x/time/rate"
)

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
	// consulted; the call is then refused with a [*RateLimiterError].
	Reserve(ctx context.Context, key string, limit RateLimit, maxWait time.Duration) (delay time.Duration, ok bool, err error)
}

// RateLimiterError reports a call refused because its tool's
// [RateLimiter] failed (its store unreachable, say): the limit could not
// be checked, so the call did not run. The model sees it, and is told to
// try again later.
type RateLimiterError struct {
	// Tool is the name the model called.
	Tool string
	// Err is the limiter's error.
	Err error
}

// Error implements error.
func (e *RateLimiterError) Error() string {
	return fmt.Sprintf("toolset: tool %q: its rate limit could not be checked: %v", e.Tool, e.Err)
}

// ModelText implements [ModelError]. It does not include the limiter's
// error, which is no business of the model's.
func (e *RateLimiterError) ModelText() string {
	return fmt.Sprintf("tool %q is temporarily unavailable (its rate limit cannot be checked); try again later", e.Tool)
}

// Unwrap returns the limiter's error.
func (e *RateLimiterError) Unwrap() error { return e.Err }

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
		return &RateLimiterError{Tool: name, Err: err}
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

// ResultCache keeps the results of a process-scope tool cache outside the
// process, so that every process with the same store shares them: set it
// as [CachePolicy.Shared]. Values are the JSON encodings of results. A
// ResultCache must be safe for concurrent use.
//
// What a tool relies on, beyond each method's own contract:
//
//   - A key is the tool's namespace, a NUL and the call's canonical
//     arguments (or its [CachePolicy.Key]): any bytes, as long as the
//     arguments. Two keys never share an entry; a store that hashes keys
//     uses a hash no one can make collide (SHA-256, say).
//   - Get gives back exactly the bytes last set under the key, or a miss:
//     a miss is always safe, another value never is.
//   - An entry whose age equals its TTL has expired.
//   - A failing store is bypassed: an error from Get or Set makes the call
//     run uncached. Get and Set called with a context that is already
//     done return an error and change nothing.
//
// [github.com/gotoolset/toolset/toolsettest.TestResultCache] checks a
// cache against all of this.
type ResultCache interface {
	// Get returns the value stored under key, and whether there is one
	// that has not expired. The value returned is the caller's: the tool
	// returns it as the call's result.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	// Set stores value under key; a ttl above zero makes it expire that
	// long after, and zero leaves it to the store's own bounds. A store
	// may refuse a value (too large, say) by keeping nothing and returning
	// nil. It must not keep value after Set returns.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// sharedOutage tracks whether a shared cache is failing, so that an outage
// is logged once, when it begins, and once more when it ends.
type sharedOutage struct {
	down atomic.Bool
}

func (o *sharedOutage) failed(ctx context.Context, tool, op string, err error) {
	if o.down.CompareAndSwap(false, true) {
		logWarn(ctx, "toolset: shared result cache failing; calls run uncached until it recovers",
			slog.String("tool", boundName(tool)), slog.String("op", op), slog.Any("error", err))
	}
}

func (o *sharedOutage) answered(ctx context.Context, tool string) {
	if o.down.Load() && o.down.CompareAndSwap(true, false) {
		logWarn(ctx, "toolset: shared result cache recovered", slog.String("tool", boundName(tool)))
	}
}

// sharedKey is the key of a call in the policy's shared cache.
func (p *CachePolicy) sharedKey(c *toolCore, key []byte) string {
	ns := p.Namespace
	if ns == "" {
		ns = c.name
	}
	return ns + "\x00" + string(key)
}

// throughShared runs the call through the policy's shared cache under key.
// A failing cache is bypassed: the call runs and its result is not kept.
func (c *toolCore) throughShared(ctx context.Context, t Tool, call ToolCall, key []byte, clock *callClock) (any, error) {
	cfg := c.cache
	p := &cfg.policy
	k := p.sharedKey(c, key)
	data, ok, err := p.Shared.Get(ctx, k)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("toolset: tool %q: reading its cache: %w", call.Name, ctx.Err())
		}
		cfg.misses.Add(1)
		cfg.outage.failed(ctx, call.Name, "get", err)
		return t.run(ctx, call, clock)
	}
	cfg.outage.answered(ctx, call.Name)
	if ok {
		if val, ok := decodeShared(data); ok {
			cfg.hits.Add(1)
			return val, nil
		}
	}
	cfg.misses.Add(1)
	res, err := t.run(ctx, call, clock)
	if err != nil {
		return res, err
	}
	keep, _, kerr := c.keepable(call.Name, res)
	if kerr != nil {
		return nil, kerr
	}
	if !keep {
		return res, nil
	}
	enc, eerr := encodeCached(res)
	if eerr != nil {
		return res, nil // a result with no JSON stays uncached
	}
	if serr := p.Shared.Set(ctx, k, enc, p.TTL); serr != nil && ctx.Err() == nil {
		cfg.outage.failed(ctx, call.Name, "set", serr)
	}
	return res, nil
}

// decodeShared turns a stored value back into a result: a JSON string
// into a string, any other JSON into a json.RawMessage, so that its model
// text is the original's. A value that is not JSON is a miss.
func decodeShared(data []byte) (any, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	if len(data) > 0 && data[0] == '"' {
		var s string
		if json.Unmarshal(data, &s) == nil {
			return s, true
		}
	}
	return json.RawMessage(data), true
}

// logWarn logs msg at warning level with [slog.Default]; a panicking log
// handler loses the record, not the caller.
func logWarn(ctx context.Context, msg string, attrs ...any) {
	defer func() { _ = recover() }()
	slog.Default().WarnContext(ctx, msg, attrs...)
}

// errNoSharedRunCache is why a run-scoped cache cannot be shared.
var errNoSharedRunCache = errors.New("a run-scoped cache (Scope CacheRun) cannot have a Shared store")

// cachedShared is cached for a policy with a Shared store.
func (c *toolCore) cachedShared(ctx context.Context, t Tool, call ToolCall, clock *callClock) (any, error) {
	p := &c.cache.policy
	if p.Key != nil {
		key, err := p.key(ctx, call)
		if _, ok := err.(*PanicError); ok {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("toolset: tool %q: cache key: %w", call.Name, err)
		}
		return c.throughShared(ctx, t, call, []byte(key), clock)
	}
	key, err := canonjson.Append(nil, call.Args)
	if err != nil {
		return t.run(ctx, call, clock) // not reached: the arguments are valid JSON
	}
	return c.throughShared(ctx, t, call, key, clock)
}
