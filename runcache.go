package toolset

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"time"
	"unicode/utf8"
)

// runCache returns the run's cache for t, called as name, creating it on
// first use, or nil without a run or once it has ended.
func (rc *RunContext) runCache(t Tool, name string) *resultCache {
	c := t.core
	s := rc.state()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.durable != nil && c.cache.policy.Persist {
		s.identify(t, name)
		s.markDirty()
	}
	p := &s.parts.caches
	if store, ok := p.stores[c]; ok {
		return store
	}
	if s.ended.Load() {
		return nil
	}
	return p.store(c)
}

// cachePart is the run's part of the result cache: the run-scoped caches
// ([CacheRun]) of its tools. Its section of the saved state lists the
// caches of the tools that opt in ([CachePolicy].Persist), sorted by name
// and schema hash, one per name and schema (see mergeCaches), each with
// its live entries, least recently used first; "expires" is absent for
// an entry without a TTL:
//
//	"caches": [{"tool": "get_weather", "schema": "sha256:...",
//	            "entries": [{"key": "{\"city\":\"Oslo\"}", "value": {"temp":7},
//	                         "expires": "2026-01-02T16:00:00Z"}]}]
type cachePart struct {
	stores map[*toolCore]*resultCache
}

type savedCache struct {
	Tool    string       `json:"tool"`
	Schema  string       `json:"schema"`
	Entries []savedEntry `json:"entries"`
}

type savedEntry struct {
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	Expires *time.Time      `json:"expires,omitempty"`
}

// store returns the run's cache for c, creating it.
func (p *cachePart) store(c *toolCore) *resultCache {
	if store, ok := p.stores[c]; ok {
		return store
	}
	if p.stores == nil {
		p.stores = make(map[*toolCore]*resultCache)
	}
	store := newResultCache(&c.cache.policy)
	p.stores[c] = store
	return store
}

func (*cachePart) key() string { return "caches" }

// save returns the caches to save, whose live entries are encoded with the
// section (see cacheSection).
func (p *cachePart) save(sv saving) any {
	sec := &cacheSection{now: sv.now}
	for c, store := range p.stores {
		if id, ok := sv.name(c); ok && c.cache.policy.Persist {
			sec.live = append(sec.live, namedCache{id, store})
		}
	}
	for id, v := range sv.restored(p) {
		sec.saved = append(sec.saved, savedCache{Tool: id.name, Schema: id.schema, Entries: v.([]savedEntry)})
	}
	if len(sec.live) == 0 && len(sec.saved) == 0 {
		return nil
	}
	return sec
}

// cacheSection is the "caches" section of a state being saved: the
// entries restored and not yet bound, and the live caches, whose entries
// it encodes when it is encoded, outside the run's lock.
type cacheSection struct {
	now   time.Time
	saved []savedCache
	live  []namedCache
}

// namedCache is a run-scoped cache to save, and the name of its tool.
type namedCache struct {
	id    toolID
	store *resultCache
}

// MarshalJSON implements [json.Marshaler]: null when no cache has a live
// entry to save.
func (sec *cacheSection) MarshalJSON() ([]byte, error) {
	out := sec.saved
	for _, c := range sec.live {
		if es := c.store.saved(sec.now); len(es) > 0 {
			out = append(out, savedCache{Tool: c.id.name, Schema: c.id.schema, Entries: es})
		}
	}
	return json.Marshal(mergeCaches(out))
}

// mergeCaches sorts caches by name and schema and makes one of the
// caches of each: two tools of one name and schema (a tool made anew each
// turn, say) each kept a cache in the run, and the saved state names a
// tool by its name and schema alone. The merged cache has the entries of
// each, those of the cache with fewer entries first (the order does not
// depend on the map the caches came from), a key given twice keeping its
// later entry.
func mergeCaches(cs []savedCache) []savedCache {
	slices.SortStableFunc(cs, func(a, b savedCache) int {
		return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Schema, b.Schema),
			cmp.Compare(len(a.Entries), len(b.Entries)), compareEntries(a.Entries, b.Entries))
	})
	out := cs[:0]
	for _, c := range cs {
		last := len(out) - 1
		if last < 0 || out[last].Tool != c.Tool || out[last].Schema != c.Schema {
			out = append(out, c)
			continue
		}
		out[last].Entries = lastOfEachKey(append(slices.Clip(out[last].Entries), c.Entries...))
	}
	return out
}

// compareEntries orders two lists of cache entries of one length by their
// keys.
func compareEntries(a, b []savedEntry) int {
	return slices.CompareFunc(a, b, func(x, y savedEntry) int { return cmp.Compare(x.Key, y.Key) })
}

// lastOfEachKey drops each entry of es whose key a later entry has.
func lastOfEachKey(es []savedEntry) []savedEntry {
	later := make(map[string]struct{}, len(es))
	out := make([]savedEntry, 0, len(es))
	for i := len(es) - 1; i >= 0; i-- {
		if _, dup := later[es[i].Key]; !dup {
			later[es[i].Key] = struct{}{}
			out = append(out, es[i])
		}
	}
	slices.Reverse(out)
	return out
}

func (*cachePart) section() any { return new([]savedCache) }

func (p *cachePart) restore(v any, r *restoring) error {
	saved := *v.(*[]savedCache)
	seen := make(map[toolID]struct{}, len(saved))
	for i, c := range saved {
		id := toolID{name: c.Tool, schema: c.Schema}
		if _, dup := seen[id]; dup {
			return fmt.Errorf("caches[%d]: tool %q has a second cache", i, boundName(c.Tool))
		}
		seen[id] = struct{}{}
		var live []savedEntry
		for _, e := range c.Entries {
			if e.Expires == nil || r.now.Before(*e.Expires) {
				live = append(live, e)
			}
		}
		if len(live) == 0 {
			continue
		}
		r.wait(p, id, live)
	}
	return nil
}

// bind gives c the saved entries es if c keeps a run-scoped cache that
// persists; a tool that no longer does drops them.
func (p *cachePart) bind(c *toolCore, es any) bool {
	if c.cache == nil || c.cache.policy.Scope != CacheRun || !c.cache.policy.Persist {
		return false
	}
	p.store(c).restore(es.([]savedEntry))
	return true
}

// saved returns the live entries of the cache, least recently used first.
func (rc *resultCache) saved(now time.Time) []savedEntry {
	type entry struct {
		key     string
		val     any
		expires time.Time
	}
	var live []entry
	rc.mu.Lock()
	for e := rc.tail; e != nil; e = e.prev {
		if !e.expires.IsZero() && !now.Before(e.expires) || !utf8.Valid(e.key) {
			continue
		}
		live = append(live, entry{string(e.key), e.val, e.expires})
	}
	rc.mu.Unlock()
	var out []savedEntry
	for _, e := range live {
		v, err := encodeCached(e.val)
		if err != nil {
			continue // not JSON: the entry stays in this process only
		}
		se := savedEntry{Key: e.key, Value: v}
		if !e.expires.IsZero() {
			t := e.expires.UTC()
			se.Expires = &t
		}
		out = append(out, se)
	}
	return out
}

// encodeCached returns the JSON of a cached result. A panic of its
// encoding is an error.
func encodeCached(v any) (b json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("encoding panicked: %v", p)
		}
	}()
	return json.Marshal(v)
}

// restore adds saved entries, least recently used first, to the cache. A
// result saved as a JSON string comes back as a string, any other as its
// JSON (a json.RawMessage), so that its model text is unchanged.
func (rc *resultCache) restore(es []savedEntry) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, se := range es {
		var val any = json.RawMessage(slices.Clone(se.Value))
		var str string
		if len(se.Value) > 0 && se.Value[0] == '"' && json.Unmarshal(se.Value, &str) == nil {
			val = str
		}
		size := 0
		if rc.policy.MaxBytes > 0 {
			text, err := ResultText(val)
			if err != nil || len(text) > rc.policy.MaxBytes {
				continue
			}
			size = len(text)
		}
		h := maphash.String(rc.seed, se.Key)
		if old, ok := rc.items[h]; ok {
			if old.pending {
				continue
			}
			rc.remove(old)
		}
		e := &cacheEntry{hash: h, key: []byte(se.Key), val: val, size: size}
		if se.Expires != nil {
			e.expires = *se.Expires
		}
		rc.items[h] = e
		rc.pushFront(e)
		rc.count++
		rc.bytes += size
		for rc.tail != nil && (rc.count > rc.policy.MaxEntries || rc.policy.MaxBytes > 0 && rc.bytes > rc.policy.MaxBytes) {
			rc.remove(rc.tail)
		}
	}
}
