package toolset_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An entry whose age equals its TTL has expired: that is what a TTL is. A
// nanosecond before, it is served. Both scopes keep one boundary.
func TestCacheEntryExpiresExactlyAtItsTTL(t *testing.T) {
	const ttl = time.Minute
	for _, scope := range []toolset.CacheScope{toolset.CacheProcess, toolset.CacheRun} {
		t.Run(map[toolset.CacheScope]string{toolset.CacheProcess: "process", toolset.CacheRun: "run"}[scope], inBubble(func(t *testing.T) {
			var runs atomic.Int64
			tool := counted("lookup", &runs, toolset.WithCache(toolset.CachePolicy{Scope: scope, TTL: ttl}))
			run := testRun(t, "ttl")
			ctx := run.Turn(context.Background())
			call := func() string {
				t.Helper()
				res, err := tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"id":1}`)})
				require.NoError(t, err)
				return res.(string)
			}
			first := call()
			time.Sleep(ttl - time.Nanosecond)
			assert.Equal(t, first, call(), "a nanosecond before its TTL, the entry is served")
			time.Sleep(time.Nanosecond)
			assert.NotEqual(t, first, call(), "at its TTL, the entry has expired: the handler runs again")
			assert.EqualValues(t, 2, runs.Load())
			assert.Equal(t, toolset.CacheStats{Hits: 1, Misses: 2}, tool.CacheStats())
		}))
	}
}

// A run-scoped entry saved with its run keeps the boundary across a
// resume: restored a nanosecond before its TTL it is served, at its TTL
// it is not.
func TestPersistedCacheEntryExpiresExactlyAtItsTTL(t *testing.T) {
	synctestRun(t, func(t *testing.T) {
		const ttl = time.Minute
		store := toolset.NewMemoryRunStore()
		var runs atomic.Int64
		tool := counted("lookup", &runs, toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun, TTL: ttl, Persist: true}))
		resumedCall := func() string {
			t.Helper()
			run, err := toolset.ResumeRun(context.Background(), store, "persisted")
			require.NoError(t, err)
			ctx := run.Turn(context.Background())
			tools, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(tool))
			require.NoError(t, err)
			res, err := tools.Execute(ctx, toolset.ToolCall{Name: "lookup", Args: json.RawMessage(`{"id":1}`)})
			require.NoError(t, err)
			require.NoError(t, run.Suspend(context.Background()))
			return res.(string)
		}
		first := resumedCall()
		time.Sleep(ttl - time.Nanosecond)
		assert.Equal(t, first, resumedCall(), "a nanosecond before its TTL, the restored entry is served")
		time.Sleep(time.Nanosecond)
		assert.NotEqual(t, first, resumedCall(), "at its TTL, the restored entry has expired")
		assert.EqualValues(t, 2, runs.Load())
	})
}
