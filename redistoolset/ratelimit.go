package redistoolset

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/redis/go-redis/v9"
)

// RateLimiterOptions configures a [RateLimiter].
type RateLimiterOptions struct {
	// Prefix starts every key; empty means [DefaultPrefix]. A window is
	// the key Prefix+"rate:"+key.
	Prefix string
	// FailOpen lets calls through while Redis cannot be reached, logging
	// a warning when the failures begin and one when they end. By default
	// a limiter fails closed: the call is refused, and the model told to
	// try again later (see [toolset.RateLimitError]).
	FailOpen bool
}

// RateLimiter is a [toolset.RateLimiter] in Redis, shared by every process
// that uses the same Redis and prefix. Make one with [NewRateLimiter].
//
// It is the generic cell rate algorithm (GCRA), a token bucket that keeps
// one number per window: the theoretical arrival time of the next call,
// in the server's microseconds. Each decision is one Lua script: it reads
// the server's clock (TIME), decides, and moves the arrival time only
// when it admits the call, so a refused call takes nothing. The key
// expires once the window is full again.
type RateLimiter struct {
	client   redis.UniversalClient
	prefix   string
	failOpen bool
	outage   outage
}

// NewRateLimiter returns a rate limiter on client; nil opts are the
// defaults.
func NewRateLimiter(client redis.UniversalClient, opts *RateLimiterOptions) *RateLimiter {
	if opts == nil {
		opts = new(RateLimiterOptions)
	}
	return &RateLimiter{client: client, prefix: prefixOr(opts.Prefix), failOpen: opts.FailOpen}
}

var _ toolset.RateLimiter = (*RateLimiter)(nil)

// gcraScript: KEYS[1] the window; ARGV the emission interval (the time
// one call costs) in microseconds, the burst, and the longest wait in
// microseconds the caller accepts. It returns {1, delay} for a call
// admitted to start after delay microseconds (at most 0: now), or
// {0, delay} for one refused that would be admitted after delay.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local maxwait = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
	tat = now
end
local newtat = tat + interval
local delay = newtat - burst * interval - now
if delay > maxwait then
	return {0, delay}
end
redis.call('SET', KEYS[1], string.format('%d', newtat), 'PX', math.ceil((newtat - now) / 1000) + 1)
if delay < 0 then
	delay = 0
end
return {1, delay}
`)

// maxWaitMicros is the wait given for "any": large, and exact in a Lua
// number.
const maxWaitMicros = 1 << 52

// Reserve implements [toolset.RateLimiter].
func (l *RateLimiter) Reserve(ctx context.Context, key string, limit toolset.RateLimit, maxWait time.Duration) (time.Duration, bool, error) {
	if limit.Requests <= 0 || limit.Interval <= 0 {
		return 0, false, fmt.Errorf("redistoolset: rate limit %q: %d requests per %v is no limit", bound(key), limit.Requests, limit.Interval)
	}
	interval := max((limit.Interval / time.Duration(limit.Requests)).Microseconds(), 1)
	burst := max(limit.Burst, 1)
	wait := int64(maxWaitMicros)
	if maxWait < time.Duration(maxWaitMicros)*time.Microsecond {
		wait = maxWait.Microseconds()
	}
	res, err := gcraScript.Run(ctx, l.client, []string{l.prefix + "rate:" + key}, interval, burst, wait).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("the script answered %d values, not 2", len(res))
	}
	if err != nil {
		err = fmt.Errorf("redistoolset: rate limit %q: %w", bound(key), err)
		if ctx.Err() != nil {
			return 0, false, err
		}
		l.outage.failed(ctx, "rate limiter", err)
		if l.failOpen {
			return 0, true, nil
		}
		return 0, false, err
	}
	l.outage.answered(ctx, "rate limiter")
	delay := time.Duration(res[1]) * time.Microsecond
	if res[1] > math.MaxInt64/int64(time.Microsecond) {
		delay = math.MaxInt64
	}
	return delay, res[0] == 1, nil
}
