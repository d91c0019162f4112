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

// suspendAfter resumes run id from store, calls the tools of each call in
// a turn of its own, and suspends the run.
func suspendAfter(t *testing.T, store toolset.RunStore, id string, tools []toolset.Toolset, calls ...string) {
	t.Helper()
	ctx := context.Background()
	run, err := toolset.ResumeRun(ctx, store, id)
	require.NoError(t, err)
	for i, args := range calls {
		turn := run.Turn(ctx)
		list, err := toolset.BuildTools(turn, "a", tools...)
		require.NoError(t, err)
		_, err = list.Execute(turn, toolset.ToolCall{ID: "c" + string(rune('0'+i)), Name: "lookup", Args: json.RawMessage(args)})
		require.NoError(t, err)
	}
	require.NoError(t, run.Suspend(ctx))
}

// savedCaches returns the "caches" section of run id's saved state.
func savedCaches(t *testing.T, store toolset.RunStore, id string) []struct {
	Tool    string            `json:"tool"`
	Entries []json.RawMessage `json:"entries"`
} {
	t.Helper()
	data, _, err := store.Load(context.Background(), id)
	require.NoError(t, err)
	var st struct {
		Caches []struct {
			Tool    string            `json:"tool"`
			Entries []json.RawMessage `json:"entries"`
		} `json:"caches"`
	}
	require.NoError(t, json.Unmarshal(data, &st))
	return st.Caches
}

// A run-scoped cache that persists moves with its run: the next process
// answers the same call from it, with the same model text (a string
// result comes back as a string), least recently used first out.
func TestPersistedRunCacheMovesWithItsRun(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	policy := toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun, Persist: true, MaxEntries: 2})
	var runs atomic.Int64
	suspendAfter(t, store, "rc", []toolset.Toolset{counted("lookup", &runs, policy)}, `{"id":1}`, `{"id":2}`, `{"id":1}`)
	require.Equal(t, int64(2), runs.Load())
	caches := savedCaches(t, store, "rc")
	require.Len(t, caches, 1)
	require.Len(t, caches[0].Entries, 2)
	assert.JSONEq(t, `{"key":"{\"id\":2}","value":"record 2 (run 2)"}`, string(caches[0].Entries[0]), "least recently used first")

	var later atomic.Int64 // a new process: a new tool
	run, err := toolset.ResumeRun(ctx, store, "rc")
	require.NoError(t, err)
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", counted("lookup", &later, policy))
	require.NoError(t, err)
	got, err := execute(t, turn, tools, "c9", "lookup", `{ "id": 1 }`)
	require.NoError(t, err)
	assert.Equal(t, "record 1 (run 1)", got, "the first process's result")
	assert.Zero(t, later.Load(), "answered from the restored cache")
	_, err = execute(t, turn, tools, "c10", "lookup", `{"id":3}`)
	require.NoError(t, err)
	_, err = execute(t, turn, tools, "c11", "lookup", `{"id":2}`)
	require.NoError(t, err)
	assert.Equal(t, int64(2), later.Load(), "the restored cache keeps its bound: id 2, least recently used, made room for id 3")
}

// Only run-scoped caches that opt in are saved, and only their live
// entries: an entry past its TTL is neither saved nor restored, and a
// tool that no longer persists its cache drops what was saved for it.
func TestRunCacheSavesWhatPersists(t *testing.T) {
	inBubble(func(t *testing.T) {
		ctx := context.Background()
		store := toolset.NewMemoryRunStore()
		var runs atomic.Int64
		plain := toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun})
		suspendAfter(t, store, "plain", []toolset.Toolset{counted("lookup", &runs, plain)}, `{"id":1}`)
		assert.Empty(t, savedCaches(t, store, "plain"), "a cache that does not persist is not saved")

		persist := toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun, Persist: true, TTL: time.Minute})
		suspendAfter(t, store, "ttl", []toolset.Toolset{counted("lookup", &runs, persist)}, `{"id":1}`)
		require.Len(t, savedCaches(t, store, "ttl"), 1)
		time.Sleep(2 * time.Minute)
		run, err := toolset.ResumeRun(ctx, store, "ttl")
		require.NoError(t, err)
		require.NoError(t, run.Suspend(ctx))
		assert.Empty(t, savedCaches(t, store, "ttl"), "an expired entry is dropped when the run is restored")

		persist = toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun, Persist: true})
		suspendAfter(t, store, "drop", []toolset.Toolset{counted("lookup", &runs, persist)}, `{"id":1}`)
		require.Len(t, savedCaches(t, store, "drop"), 1)
		before := runs.Load()
		suspendAfter(t, store, "drop", []toolset.Toolset{counted("lookup", &runs, plain)}, `{"id":1}`)
		assert.Equal(t, before+1, runs.Load(), "a tool that no longer persists is not answered from the saved entries")
		assert.Empty(t, savedCaches(t, store, "drop"), "and they are dropped")
	})(t)
}

// An entry whose key is not UTF-8 stays in the process: the saved state
// is JSON, and a key changed to fit it would answer another call.
func TestRunCacheKeyThatIsNotUTF8IsNotSaved(t *testing.T) {
	store := toolset.NewMemoryRunStore()
	var runs atomic.Int64
	policy := toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun, Persist: true,
		Key: func(_ context.Context, args json.RawMessage) (string, error) { return "\xff" + string(args), nil }})
	suspendAfter(t, store, "utf8", []toolset.Toolset{counted("lookup", &runs, policy)}, `{"id":1}`)
	assert.Empty(t, savedCaches(t, store, "utf8"))
}
