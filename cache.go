package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotoolset/toolset/internal/canonjson"
	"golang.org/x/sync/singleflight"
)

// CacheScope says how widely a tool's cached results are shared.
type CacheScope int

const (
	// CacheProcess shares results between all runs of the process.
	CacheProcess CacheScope = iota
	// CacheRun keeps results for one run only, in its [RunContext]. A call
	// without a run context is not cached.
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
}

const defaultCacheEntries = 1024

// WithCache caches the tool's successful results. The cache belongs to the
// tool, not to its name: a prefixed or renamed copy reads and fills the same
// entries. Concurrent calls with the same key on a cold cache run the
// handler once and share its result. A cache hit skips validation, the
// middleware and the handler.
func WithCache(p CachePolicy) ToolOption {
	return func(t *Tool) {
		if p.MaxEntries <= 0 {
			p.MaxEntries = defaultCacheEntries
		}
		cfg := &cacheConfig{policy: p}
		if p.Scope == CacheProcess {
			cfg.process = newResultCache(&cfg.policy)
		}
		t.core.cache = cfg
	}
}

// CacheStats counts a tool's cache lookups, across all its names and, for
// run-scoped caches, all runs.
type CacheStats struct {
	Hits, Misses uint64
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
}

// keyBuffers holds buffers for canonical keys, so a lookup allocates
// nothing.
var keyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// cached runs the call through the cache: steps 4 and 8 of the call path
// around the rest.
func (c *toolCore) cached(ctx context.Context, t Tool, call ToolCall, rc *RunContext, clock *callClock) (any, error) {
	cfg := c.cache
	store := cfg.process
	if cfg.policy.Scope == CacheRun {
		store = rc.runCache(c)
		if store == nil {
			return t.run(ctx, call, clock)
		}
	}
	var key string
	if cfg.policy.Key != nil {
		k, err := cfg.policy.Key(ctx, call.Args)
		if err != nil {
			return nil, fmt.Errorf("toolset: tool %q: cache key: %w", call.Name, err)
		}
		key = k
		if v, ok := store.get(key, clock); ok {
			cfg.hits.Add(1)
			return v, nil
		}
	} else {
		bp := keyBuffers.Get().(*[]byte)
		buf, err := canonjson.Append((*bp)[:0], call.Args)
		if err != nil {
			// Not JSON: validation will say so to the model.
			keyBuffers.Put(bp)
			return t.run(ctx, call, clock)
		}
		v, ok := store.getBytes(buf, clock)
		if ok {
			*bp = buf
			keyBuffers.Put(bp)
			cfg.hits.Add(1)
			return v, nil
		}
		key = string(buf)
		*bp = buf
		keyBuffers.Put(bp)
	}
	cfg.misses.Add(1)
	v, err, _ := store.flight.Do(key, func() (any, error) {
		res, err := t.run(ctx, call, clock)
		if err == nil && (cfg.policy.ShouldCache == nil || cfg.policy.ShouldCache(res)) {
			store.put(key, res, clock)
		}
		return res, err
	})
	return v, err
}

// resultCache is a bounded LRU of results with optional expiry and byte
// budget. Entries form an intrusive doubly linked list, most recent first.
type resultCache struct {
	policy *CachePolicy
	flight singleflight.Group

	mu         sync.Mutex
	items      map[string]*cacheEntry
	head, tail *cacheEntry
	bytes      int
}

type cacheEntry struct {
	key        string
	val        any
	size       int
	expires    time.Time
	prev, next *cacheEntry
}

func newResultCache(p *CachePolicy) *resultCache {
	return &resultCache{policy: p, items: make(map[string]*cacheEntry)}
}

func (rc *resultCache) get(key string, clock *callClock) (any, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e, ok := rc.items[key]
	return rc.hit(e, ok, clock)
}

// getBytes is get for a key in a buffer; the lookup allocates nothing.
func (rc *resultCache) getBytes(key []byte, clock *callClock) (any, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e, ok := rc.items[string(key)]
	return rc.hit(e, ok, clock)
}

// hit finishes a lookup under the lock: it drops an expired entry and
// marks a live one as most recently used.
func (rc *resultCache) hit(e *cacheEntry, ok bool, clock *callClock) (any, bool) {
	if !ok {
		return nil, false
	}
	if !e.expires.IsZero() && !clock.now().Before(e.expires) {
		rc.remove(e)
		return nil, false
	}
	rc.unlink(e)
	rc.pushFront(e)
	return e.val, true
}

func (rc *resultCache) put(key string, val any, clock *callClock) {
	size := 0
	if rc.policy.MaxBytes > 0 {
		text, err := ResultText(val)
		if err != nil {
			return
		}
		size = len(text)
		if size > rc.policy.MaxBytes {
			return
		}
	}
	e := &cacheEntry{key: key, val: val, size: size}
	if rc.policy.TTL > 0 {
		e.expires = clock.now().Add(rc.policy.TTL)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if old, ok := rc.items[key]; ok {
		rc.remove(old)
	}
	rc.items[key] = e
	rc.pushFront(e)
	rc.bytes += size
	for rc.tail != nil && (len(rc.items) > rc.policy.MaxEntries || rc.policy.MaxBytes > 0 && rc.bytes > rc.policy.MaxBytes) {
		rc.remove(rc.tail)
	}
}

func (rc *resultCache) remove(e *cacheEntry) {
	rc.unlink(e)
	delete(rc.items, e.key)
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

// runCache returns the run's cache for c, creating it on first use, or nil
// without a run.
func (rc *RunContext) runCache(c *toolCore) *resultCache {
	if rc == nil {
		return nil
	}
	s := rc.run
	s.mu.Lock()
	defer s.mu.Unlock()
	if store, ok := s.caches[c]; ok {
		return store
	}
	if s.caches == nil {
		s.caches = make(map[*toolCore]*resultCache)
	}
	store := newResultCache(&c.cache.policy)
	s.caches[c] = store
	return store
}
