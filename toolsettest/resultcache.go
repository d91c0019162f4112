package toolsettest

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
)

// TestResultCache checks that the caches newCache makes keep the contract
// of [toolset.ResultCache], in subtests: a miss for a key never set; a
// hit, with the value last set, for one that was; expiry at the TTL (an
// entry whose age is its TTL has expired) and its renewal by each Set;
// values that are not kept after Set returns, nor shared with the caller
// of Get; keys (empty, 64 KiB long, binary, sharing a prefix) that each
// name their own entry; values the cache may refuse (binary, over a
// MiB), which it keeps exactly or not at all; a bound on the entries, if
// [MaxEntries] gives one; concurrent Sets and Gets, which never see a
// value set under another key or a torn one; and calls whose context has
// ended, which are errors and change nothing.
//
// newCache is called once per subtest, and must return a cache of its
// own, empty: a fresh key prefix, say, for a cache on a shared server.
func TestResultCache(t *testing.T, newCache func(t *testing.T) toolset.ResultCache, opts ...BackendOption) {
	t.Helper()
	c := newBackendConfig(opts)
	s := &resultCacheSuite{backendConfig: c, newCache: newCache}
	c.run(t, "Miss", s.miss)
	c.run(t, "SetGet", s.setGet)
	c.run(t, "TTL", s.ttl)
	c.run(t, "ValueNotKept", s.valueNotKept)
	c.run(t, "HostileKeys", s.hostileKeys)
	c.run(t, "HostileValues", s.hostileValues)
	c.run(t, "Bound", s.bound)
	c.run(t, "Concurrent", s.concurrent)
	c.run(t, "ContextDone", s.contextDone)
}

type resultCacheSuite struct {
	backendConfig
	newCache func(t *testing.T) toolset.ResultCache
}

type got struct {
	value []byte
	ok    bool
	err   error
}

func (s *resultCacheSuite) get(t *testing.T, c toolset.ResultCache, key string) got {
	t.Helper()
	g := within(t, fmt.Sprintf("Get(%q)", quote(key)), func(ctx context.Context) got {
		v, ok, err := c.Get(ctx, key)
		return got{v, ok, err}
	})
	if g.err != nil {
		t.Fatalf("Get(%q): %v", quote(key), g.err)
	}
	return g
}

func (s *resultCacheSuite) set(t *testing.T, c toolset.ResultCache, key string, value []byte, ttl time.Duration) {
	t.Helper()
	if err := within(t, fmt.Sprintf("Set(%q)", quote(key)), func(ctx context.Context) error {
		return c.Set(ctx, key, value, ttl)
	}); err != nil {
		t.Fatalf("Set(%q, %d bytes, ttl %v): %v", quote(key), len(value), ttl, err)
	}
}

// wantHit fails t unless key holds value.
func (s *resultCacheSuite) wantHit(t *testing.T, c toolset.ResultCache, key string, value []byte, what string) {
	t.Helper()
	g := s.get(t, c, key)
	switch {
	case !g.ok:
		t.Fatalf("%s: Get(%q) missed; want %q", what, quote(key), quote(string(value)))
	case !bytes.Equal(g.value, value):
		t.Fatalf("%s: Get(%q) = %q; want %q", what, quote(key), quote(string(g.value)), quote(string(value)))
	}
}

// wantMiss fails t unless key holds nothing.
func (s *resultCacheSuite) wantMiss(t *testing.T, c toolset.ResultCache, key, what string) {
	t.Helper()
	if g := s.get(t, c, key); g.ok {
		t.Fatalf("%s: Get(%q) = %q, a hit; want a miss", what, quote(key), quote(string(g.value)))
	}
}

func (s *resultCacheSuite) miss(t *testing.T) {
	c := s.newCache(t)
	s.wantMiss(t, c, "never-set", "a key never set")
}

func (s *resultCacheSuite) setGet(t *testing.T) {
	c := s.newCache(t)
	s.set(t, c, "k", []byte(`"first"`), 0)
	s.wantHit(t, c, "k", []byte(`"first"`), "after Set")
	s.wantHit(t, c, "k", []byte(`"first"`), "a second Get")
	s.set(t, c, "k", []byte(`{"second":[1,2,3]}`), 0)
	s.wantHit(t, c, "k", []byte(`{"second":[1,2,3]}`), "after a second Set")
	s.wantMiss(t, c, "K", "a key that differs in case")
	text := []byte(`"line\nquote\" tab\t unicode é 🔑 \u0000"`)
	s.set(t, c, "text", text, 0)
	s.wantHit(t, c, "text", text, "a JSON string with escapes")
}

func (s *resultCacheSuite) ttl(t *testing.T) {
	c := s.newCache(t)
	u := s.unit
	s.set(t, c, "expires", []byte(`1`), 4*u)
	s.set(t, c, "kept", []byte(`2`), 0)
	s.set(t, c, "renewed", []byte(`3`), 4*u)
	s.sleep(2 * u)
	s.wantHit(t, c, "expires", []byte(`1`), "half its TTL after Set")
	s.set(t, c, "renewed", []byte(`4`), 4*u)
	if s.bubble {
		// Exactly at its TTL, an entry has expired.
		s.sleep(2 * u)
	} else {
		s.sleep(2*u + u/2)
	}
	s.wantMiss(t, c, "expires", "an entry at its TTL")
	s.wantHit(t, c, "renewed", []byte(`4`), "an entry set again before its TTL")
	s.wantHit(t, c, "kept", []byte(`2`), "an entry with no TTL")
	s.set(t, c, "expires", []byte(`5`), 4*u)
	s.wantHit(t, c, "expires", []byte(`5`), "an expired entry set again")
	s.sleep(2*u + u/2)
	s.wantMiss(t, c, "renewed", "an entry past the TTL of its second Set")
	s.wantHit(t, c, "kept", []byte(`2`), "an entry with no TTL")
}

func (s *resultCacheSuite) valueNotKept(t *testing.T) {
	c := s.newCache(t)
	v := []byte(`"value"`)
	s.set(t, c, "k", v, 0)
	copy(v, `XXXXXXX`)
	s.wantHit(t, c, "k", []byte(`"value"`), "after the caller changed the slice it set")
	g := s.get(t, c, "k")
	for i := range g.value {
		g.value[i] = 'Y'
	}
	s.wantHit(t, c, "k", []byte(`"value"`), "after the caller changed the slice Get returned")
}

func (s *resultCacheSuite) hostileKeys(t *testing.T) {
	c := s.newCache(t)
	keys := hostileKeys()
	for i, k := range keys {
		s.set(t, c, k.key, []byte(strconv.Itoa(i)), 0)
	}
	for i, k := range keys {
		g := s.get(t, c, k.key)
		switch {
		case !g.ok && len(k.key) > 1<<10:
			t.Logf("the cache keeps nothing under key %s", k.name)
		case !g.ok:
			t.Fatalf("Get of key %s (%q) missed; want the value set", k.name, quote(k.key))
		case string(g.value) != strconv.Itoa(i):
			t.Fatalf("Get of key %s (%q) = %q; want %q: keys share an entry", k.name, quote(k.key), g.value, strconv.Itoa(i))
		}
	}
}

func (s *resultCacheSuite) hostileValues(t *testing.T) {
	c := s.newCache(t)
	for _, v := range []struct {
		name  string
		value []byte
	}{
		{"binary", binaryValue(4 << 10)},
		{"just over a MiB", bytes.Repeat([]byte("x"), 1<<20+1)},
		{"8 MiB", bytes.Repeat([]byte(`"a"`), 8<<20/3)},
	} {
		s.set(t, c, v.name, v.value, 0)
		if g := s.get(t, c, v.name); g.ok && !bytes.Equal(g.value, v.value) {
			t.Fatalf("a value %s (%d bytes) came back as %d other bytes; a cache keeps a value exactly or not at all", v.name, len(v.value), len(g.value))
		} else if !g.ok {
			t.Logf("the cache refuses a value %s", v.name)
		}
	}
	s.set(t, c, "small", []byte(`true`), 0)
	s.wantHit(t, c, "small", []byte(`true`), "a small value after large ones")
}

func (s *resultCacheSuite) bound(t *testing.T) {
	c := s.newCache(t)
	n := s.maxEntries
	writes := n + 10
	if n <= 0 {
		writes = 200
	}
	for i := range writes {
		key := "entry-" + strconv.Itoa(i)
		s.set(t, c, key, []byte(strconv.Itoa(i)), 0)
		s.wantHit(t, c, key, []byte(strconv.Itoa(i)), "an entry just set")
	}
	if n <= 0 {
		return
	}
	found := 0
	for i := range writes {
		if g := s.get(t, c, "entry-"+strconv.Itoa(i)); g.ok {
			found++
		}
	}
	if found > n {
		t.Fatalf("after %d writes, %d entries are found; the cache's bound is %d", writes, found, n)
	}
}

func (s *resultCacheSuite) concurrent(t *testing.T) {
	c := s.newCache(t)
	const workers, rounds, keys = 8, 40, 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			for i := range rounds {
				key := "k" + strconv.Itoa((w+i)%keys)
				val := []byte(fmt.Sprintf(`%q`, key+"/"+strings.Repeat(strconv.Itoa(w), 64+i)))
				if err := c.Set(ctx, key, val, 0); err != nil {
					errs <- fmt.Errorf("setting %q: %w", key, err)
					return
				}
				v, ok, err := c.Get(ctx, key)
				if err != nil {
					errs <- fmt.Errorf("getting %q: %w", key, err)
					return
				}
				if ok && !wellFormed(key, v) {
					errs <- fmt.Errorf("Get(%q) = %q, which no Set of that key wrote", key, quote(string(v)))
					return
				}
			}
		})
	}
	waitAll(t, &wg)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// wellFormed reports whether v is a value the concurrent check sets under
// key: key, a slash and one digit repeated.
func wellFormed(key string, v []byte) bool {
	s, err := strconv.Unquote(string(v))
	if err != nil {
		return false
	}
	rest, ok := strings.CutPrefix(s, key+"/")
	return ok && len(rest) >= 64 && strings.Count(rest, rest[:1]) == len(rest)
}

func (s *resultCacheSuite) contextDone(t *testing.T) {
	c := s.newCache(t)
	s.set(t, c, "k", []byte(`"before"`), 0)
	if err := withDone(t, "Get", func(ctx context.Context) error { _, _, err := c.Get(ctx, "k"); return err }); err == nil {
		t.Error("Get with a cancelled context succeeded; want the context's error")
	}
	if err := withDone(t, "Set", func(ctx context.Context) error { return c.Set(ctx, "k", []byte(`"after"`), 0) }); err == nil {
		t.Error("Set with a cancelled context succeeded; want the context's error")
	}
	if err := withDone(t, "Set", func(ctx context.Context) error { return c.Set(ctx, "new", []byte(`"after"`), 0) }); err == nil {
		t.Error("Set of a new key with a cancelled context succeeded; want the context's error")
	}
	s.wantHit(t, c, "k", []byte(`"before"`), "after a Set with a cancelled context")
	s.wantMiss(t, c, "new", "after a Set with a cancelled context")
}
