package toolset

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"testing"

	"github.com/gotoolset/toolset/internal/canonjson"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cache indexes entries by a 64-bit hash of their key. Two keys with
// the same hash must never share a result: the second one runs uncached.
func TestCacheHashCollisionRunsUncached(t *testing.T) {
	type args struct {
		ID int `json:"id"`
	}
	runs := 0
	tool := NewTool("lookup", "", func(_ context.Context, in args) (int, error) {
		runs++
		return in.ID, nil
	}, WithCache(CachePolicy{}))
	store := tool.core.cache.process

	// Plant an entry for another key under the hash of {"id":1}, as a
	// collision would.
	key, err := canonjson.Append(nil, json.RawMessage(`{"id": 1}`))
	require.NoError(t, err)
	h := maphash.Bytes(store.seed, key)
	planted := &cacheEntry{hash: h, key: []byte(`{"id":2}`), val: 2}
	store.items[h] = planted
	store.pushFront(planted)
	store.count++

	for range 2 {
		got, err := tool.Execute(context.Background(), ToolCall{Args: json.RawMessage(`{"id":1}`)})
		require.NoError(t, err)
		assert.Equal(t, 1, got, "a colliding key is not a hit")
	}
	assert.Equal(t, 2, runs, "a colliding key runs every time")
	assert.Same(t, planted, store.items[h], "the stored entry is left alone")
	assert.Equal(t, CacheStats{Misses: 2}, tool.CacheStats())
}
