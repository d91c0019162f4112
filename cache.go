package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotoolset/toolset/internal/canonjson"
)

// CacheScope says how widely a tool's cached results are shared.
type CacheScope int

const (
	// CacheProcess shares results between all runs of the process.
	CacheProcess CacheScope = iota
	// CacheRun keeps results for one run only, in its [RunContext], until
	// the run ends. A call without a run is not cached.
	CacheRun
)

// CachePolicy configures a tool's result cache; see [WithCache].
type CachePolicy struct {
	// Scope is CacheProcess (the default) or CacheRun.
	Scope CacheScope
	// MaxEntries bounds the number of results kept per scope, least recently
	// used first out. Zero means 1024.
	MaxEntries int
	// TTL is how long a result stays fresh; zero means until evicted.
	TTL time.Duration
	// MaxBytes bounds the total size of the kept results, measured as the
	// length of their model text (see [ResultText]); zero means no bound.
	MaxBytes int
	// Key computes the cache key of a call's arguments. The default is the
	// canonical JSON of the arguments (object keys sorted, no insignificant
	// space, numbers normalised), so {"b":1,"a":2} and {"a":2, "b":1} share
	// an entry.
	Key func(ctx context.Context, args json.RawMessage) (string, error)
	// ShouldCache decides whether a successful result is kept; nil keeps
	// every one. Errors are never cached.
	ShouldCache func(result any) bool
	// Persist saves the entries of a run-scoped cache (Scope CacheRun)
	// with the state of a run that has a store (see [ResumeRun]), so
	// that they survive the run's moving to another process. Results are
	// saved as their JSON encoding (a result that has none stays in this
	// process only), and come back as that JSON, a json.RawMessage, or
	// as a string for a string result: the same model text, not the same
	// Go value. Keys must be valid UTF-8 to be saved.
	Persist bool
	// Shared keeps the results of a process-scope cache in a store that
	// several processes share (a Redis one, say) instead of this
	// process's memory. Results are stored as their JSON encoding (a
	// result that has none is not cached) and come back as Persist
	// says. The store has its own bounds: MaxEntries does not apply, and
	// MaxBytes, if set, bounds the model text of each result kept; TTL
	// is passed to the store. Identical calls
	// running at once in different processes each run the handler. A
	// store that fails is bypassed: calls run uncached, and one warning is
	// logged when the failures begin and one when they end. A run-scoped
	// cache cannot be shared.
	Shared ResultCache
	// Namespace names the tool's entries in Shared; empty means the
	// tool's name. Tools with the same Namespace share their entries.
	Namespace string
	// ShareNonIdempotent lets Shared serve a tool that declares calls
	// that are neither read-only nor idempotent ([Effects]); without it,
	// such a tool's calls bypass Shared and always run.
	ShareNonIdempotent bool
}

const defaultCacheEntries = 1024

// WithCache caches the tool's successful results. The cache belongs to the
// tool, not to its name: a prefixed or renamed copy reads and fills the same
// entries. Concurrent calls with the same key on a cold cache run the
// handler once and share its result; if the caller running it gives up
// (its context ends), a caller still waiting runs it instead. The
// arguments are validated before the cache is consulted, and a hit skips
// the rate limit, the middleware and the handler.
func WithCache(p CachePolicy) ToolOption {
	return func(t *Tool) {
		if p.MaxEntries <= 0 {
			p.MaxEntries = defaultCacheEntries
		}
		cfg := &cacheConfig{policy: p}
		if p.Shared != nil && p.Scope != CacheProcess && t.core.err == nil {
			t.core.err = errNoSharedRunCache
		}
		if p.Scope == CacheProcess {
			cfg.process = newResultCache(&cfg.policy)
		}
		t.core.cache = cfg
	}
}

// CacheStats counts a tool's cache lookups, across all its names and, for
// run-scoped caches, all runs.
type CacheStats struct {
	// Hits counts calls answered from the cache.
	Hits uint64
	// Misses counts calls that found no result, including those that
	// waited for an identical call already running.
	Misses uint64
}

// CacheStats returns the hit and miss counts of the tool's result cache.
func (t Tool) CacheStats() CacheStats {
	if t.core == nil || t.core.cache == nil {
		return CacheStats{}
	}
	c := t.core.cache
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load()}
}

type cacheConfig struct {
	policy       CachePolicy
	process      *resultCache
	hits, misses atomic.Uint64
	outage       sharedOutage // of policy.Shared
}

// keyBuffers holds buffers for canonical keys, so a lookup allocates
// nothing.
var keyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// cached runs the call through the cache: steps 4 and 8 of the call path
// around the rest.
func (c *toolCore) cached(ctx context.Context, t Tool, call ToolCall, rc *RunContext, clock *callClock) (any, error) {
	cfg := c.cache
	if cfg.policy.Shared != nil {
		if !c.sharesResults() {
			return t.run(ctx, call, clock)
		}
		return c.cachedShared(ctx, t, call, clock)
	}
	store := cfg.process
	if cfg.policy.Scope == CacheRun {
		store = rc.runCache(t, call.Name)
		if store == nil {
			return t.run(ctx, call, clock)
		}
	}
	if cfg.policy.Key != nil {
		key, err := cfg.policy.key(ctx, call)
		if _, ok := err.(*PanicError); ok {
			return nil, err // made by key, which names the tool
		}
		if err != nil {
			return nil, fmt.Errorf("toolset: tool %q: cache key: %w", call.Name, err)
		}
		return c.through(ctx, t, call, store, nil, key, clock)
	}
	if canonjson.IsCanonical(call.Args) {
		// The usual case: the arguments are their own canonical key
		// (lookup copies what it keeps).
		return c.through(ctx, t, call, store, call.Args, "", clock)
	}
	bp := keyBuffers.Get().(*[]byte)
	buf, err := canonjson.Append((*bp)[:0], call.Args)
	*bp = buf
	if err != nil {
		keyBuffers.Put(bp)
		return t.run(ctx, call, clock) // not reached: the arguments are valid JSON
	}
	res, err := c.through(ctx, t, call, store, buf, "", clock)
	keyBuffers.Put(bp)
	return res, err
}

// through runs the call through store under the key given as bytes (kb)
// or, when kb is nil, as a string (ks).
func (c *toolCore) through(ctx context.Context, t Tool, call ToolCall, store *resultCache, kb []byte, ks string, clock *callClock) (any, error) {
	cfg := c.cache
	for counted := false; ; counted = true {
		l := store.lookup(kb, ks, clock)
		if l.hit {
			if !counted {
				cfg.hits.Add(1)
				clock.ob.emit(CallEvent{Kind: EventCacheHit})
			}
			return l.val, nil
		}
		if !counted {
			cfg.misses.Add(1)
			clock.ob.emit(CallEvent{Kind: EventCacheMiss})
		}
		switch {
		case l.wait != nil:
			// An identical call is running: share its result.
			select {
			case <-l.wait:
			case <-ctx.Done():
				return nil, fmt.Errorf("toolset: tool %q: waiting for an identical call: %w", call.Name, ctx.Err())
			}
			if l.flight.abandoned && ctx.Err() == nil {
				continue // its caller gave up; this one has not
			}
			return l.flight.val, l.flight.err
		case l.flight == nil:
			// The key's hash collides with another key's: run uncached.
			return t.run(ctx, call, clock)
		}
		return c.fly(ctx, t, call, store, l.flight, clock)
	}
}

// fly runs the call for a pending entry and lands its result. A handler
// that calls runtime.Goexit returns nothing: the entry lands as failed
// with ErrGoexit, for the callers waiting for it, and is not kept.
func (c *toolCore) fly(ctx context.Context, t Tool, call ToolCall, store *resultCache, e *cacheEntry, clock *callClock) (res any, err error) {
	returned := false
	defer func() {
		if !returned {
			res, err = nil, newPanicError("handler", call.Name, "", ErrGoexit)
		}
		keep, size := false, 0
		if err == nil {
			if keep, size, err = c.keepable(call.Name, res); err != nil {
				res = nil
			}
		}
		store.land(e, res, err, keep, size, err != nil && ctx.Err() != nil, clock)
	}()
	res, err = t.run(ctx, call, clock)
	returned = true
	return res, err
}

// key runs the policy's Key function. A panic becomes a *PanicError.
func (p *CachePolicy) key(ctx context.Context, call ToolCall) (key string, err error) {
	defer func() {
		if v := recover(); v != nil {
			key, err = "", newPanicError("cache key", call.Name, "", v)
		}
	}()
	return p.Key(ctx, call.Args)
}

// keepable decides whether a successful result is stored, and measures it
// when the cache has a byte budget. A panic in the policy's ShouldCache, or
// in the result's own JSON encoding, fails the call like a panicking
// handler.
func (c *toolCore) keepable(name string, res any) (keep bool, size int, err error) {
	callback := "cache ShouldCache"
	defer func() {
		if p := recover(); p != nil {
			keep, size, err = false, 0, newPanicError(callback, name, "", p)
		}
	}()
	p := &c.cache.policy
	if p.ShouldCache != nil && !p.ShouldCache(res) {
		return false, 0, nil
	}
	callback = "result encoding"
	if p.MaxBytes > 0 {
		text, terr := ResultText(res)
		if pe, ok := terr.(*PanicError); ok {
			pe.Tool = name
			return false, 0, pe
		}
		if terr != nil || len(text) > p.MaxBytes {
			return false, 0, nil
		}
		size = len(text)
	}
	return true, size, nil
}

// resultCache is a bounded LRU of results with optional expiry and byte
// budget. Entries form an intrusive doubly linked list, most recent first,
// and are indexed by a 64-bit hash of their key; each entry keeps its key
// to tell a hash collision from a hit (a colliding call runs uncached).
//
// It also keeps concurrent identical calls on a cold key to one run of the
// handler, as golang.org/x/sync/singleflight would: the first caller puts a
// pending entry in the map under the lock it already holds for the lookup,
// and later callers wait for it to land. This costs one map write per miss
// where a separate singleflight group costs a lock, a map and two
// allocations, more than validating the arguments. A pending entry that is
// not stored and that nobody waited for is kept as a spare for the next
// miss, so a miss whose result is not kept allocates nothing.
type resultCache struct {
	policy *CachePolicy
	seed   maphash.Seed

	mu         sync.Mutex
	items      map[uint64]*cacheEntry // stored entries and pending calls
	head, tail *cacheEntry
	count      int // stored entries
	bytes      int
	spare      *cacheEntry // a reset entry for the next miss
}

type cacheEntry struct {
	hash       uint64
	key        []byte
	val        any
	size       int
	expires    time.Time
	prev, next *cacheEntry

	// A pending entry is a call still running; it is not in the list.
	pending   bool
	done      chan struct{} // made when a second caller waits
	err       error         // the call's error, for callers that waited
	abandoned bool          // the call failed because its caller's context ended
}

// lookup is the outcome of a cache lookup: a hit, a call to wait for, a
// call this caller must run (flight) and land, or, on a hash collision,
// none of these: the caller runs the call without the cache.
type lookup struct {
	hit    bool
	val    any
	wait   <-chan struct{}
	flight *cacheEntry
}

// maxSpareKey is the largest key buffer a spare entry keeps.
const maxSpareKey = 4 << 10

func newResultCache(p *CachePolicy) *resultCache {
	return &resultCache{policy: p, seed: maphash.MakeSeed(), items: make(map[uint64]*cacheEntry)}
}

// lookup finds the key given as bytes (kb) or, when kb is nil, as a string
// (ks). Neither is kept: a lookup allocates nothing.
func (rc *resultCache) lookup(kb []byte, ks string, clock *callClock) lookup {
	var h uint64
	if kb != nil {
		h = maphash.Bytes(rc.seed, kb)
	} else {
		h = maphash.String(rc.seed, ks)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e, ok := rc.items[h]
	if ok && (kb != nil && string(e.key) != string(kb) || kb == nil && string(e.key) != ks) {
		return lookup{} // a different key with the same hash
	}
	if ok && e.pending {
		if e.done == nil {
			e.done = make(chan struct{})
		}
		return lookup{wait: e.done, flight: e}
	}
	if ok && !e.expires.IsZero() && !clock.now().Before(e.expires) {
		rc.remove(e)
		ok = false
	}
	if ok {
		rc.unlink(e)
		rc.pushFront(e)
		return lookup{hit: true, val: e.val}
	}
	e = rc.spare
	if e != nil {
		rc.spare = nil
	} else {
		e = &cacheEntry{}
	}
	if kb != nil {
		e.key = append(e.key[:0], kb...)
	} else {
		e.key = append(e.key[:0], ks...)
	}
	e.hash, e.pending = h, true
	rc.items[h] = e
	return lookup{flight: e}
}

// land ends the call of a pending entry: it stores the result if keep,
// drops the entry otherwise, and wakes the callers waiting for it, which
// run the call again themselves if it was abandoned.
func (rc *resultCache) land(e *cacheEntry, val any, err error, keep bool, size int, abandoned bool, clock *callClock) {
	rc.mu.Lock()
	done := e.done
	if keep {
		e.pending, e.val, e.err = false, val, err
		e.size = size
		if rc.policy.TTL > 0 {
			e.expires = clock.now().Add(rc.policy.TTL)
		}
		rc.pushFront(e)
		rc.count++
		rc.bytes += size
		for rc.tail != nil && (rc.count > rc.policy.MaxEntries || rc.policy.MaxBytes > 0 && rc.bytes > rc.policy.MaxBytes) {
			rc.remove(rc.tail)
		}
	} else {
		delete(rc.items, e.hash)
		if done == nil {
			// Nobody holds the entry: keep it for the next miss.
			key := e.key[:0]
			if cap(key) > maxSpareKey {
				key = nil
			}
			*e = cacheEntry{key: key}
			rc.spare = e
		} else {
			e.pending, e.val, e.err, e.abandoned = false, val, err, abandoned
		}
	}
	rc.mu.Unlock()
	if done != nil {
		close(done)
	}
}

// remove drops a stored entry.
func (rc *resultCache) remove(e *cacheEntry) {
	rc.unlink(e)
	if rc.items[e.hash] == e {
		delete(rc.items, e.hash)
	}
	rc.count--
	rc.bytes -= e.size
}

func (rc *resultCache) unlink(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		rc.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		rc.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (rc *resultCache) pushFront(e *cacheEntry) {
	e.next = rc.head
	if rc.head != nil {
		rc.head.prev = e
	}
	rc.head = e
	if rc.tail == nil {
		rc.tail = e
	}
}
