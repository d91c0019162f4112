package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gotoolset/toolset/internal/canonjson"
)

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
