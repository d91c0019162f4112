package toolsettest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolsettest"
)

// lruCache stands for a third-party [toolset.ResultCache] backend: results
// in a map, each with its expiry, at most max of them, the oldest written
// first out.
type lruCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]lruEntry
	order   []string // keys, oldest write first
}

type lruEntry struct {
	value   []byte
	expires time.Time // zero: never
}

func newLRUCache(max int) *lruCache {
	return &lruCache{max: max, entries: make(map[string]lruEntry)}
}

func (c *lruCache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !e.expires.IsZero() && !time.Now().Before(e.expires) {
		return nil, false, nil
	}
	return bytes.Clone(e.value), true, nil
}

func (c *lruCache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(value) > 1<<20 {
		return nil // too large: kept nowhere
	}
	e := lruEntry{value: bytes.Clone(value)}
	if ttl > 0 {
		e.expires = time.Now().Add(ttl)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		c.order = append(c.order, key)
	}
	c.entries[key] = e
	for len(c.entries) > c.max {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	return nil
}

// The backend's own test: it runs the suite, in a bubble since the
// backend's clock is the process's.
func TestLRUCacheConformance(t *testing.T) {
	toolsettest.TestResultCache(t, func(*testing.T) toolset.ResultCache { return newLRUCache(100) },
		toolsettest.InBubble(), toolsettest.MaxEntries(100))
}

// A third-party result cache checked by the suite every cache runs, then
// shared by two tool values that stand for one tool in two processes.
func ExampleTestResultCache() {
	_ = func(t *testing.T) { // the backend's test, as TestLRUCacheConformance above
		toolsettest.TestResultCache(t, func(*testing.T) toolset.ResultCache { return newLRUCache(100) },
			toolsettest.InBubble(), toolsettest.MaxEntries(100))
	}

	cache := newLRUCache(100)
	runs := 0
	lookup := func() toolset.Tool {
		return toolset.NewTool("lookup", "Look a word up.", func(_ context.Context, in struct {
			Word string `json:"word"`
		}) (string, error) {
			runs++
			return "the meaning of " + in.Word, nil
		}, toolset.WithCache(toolset.CachePolicy{Shared: cache, TTL: time.Hour}))
	}
	for _, tool := range []toolset.Tool{lookup(), lookup()} {
		res, err := tool.Execute(context.Background(), toolset.ToolCall{Name: "lookup", Args: json.RawMessage(`{"word":"cache"}`)})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res)
	}
	fmt.Println("handler runs:", runs)
	// Output:
	// the meaning of cache
	// the meaning of cache
	// handler runs: 1
}
