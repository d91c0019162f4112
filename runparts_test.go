package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run that keeps no bookkeeping saves only its own fields: no part
// writes a section it has nothing for.
func TestRunWithoutBookkeepingSavesItsFieldsOnly(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	run, err := toolset.ResumeRun(ctx, store, "bare")
	require.NoError(t, err)
	require.NoError(t, run.Suspend(ctx))
	data, _, err := store.Load(ctx, "bare")
	require.NoError(t, err)
	assert.Equal(t, `{"version":1,"id":"bare","step":-1}`, string(data))
}

// A saved state's sections are read as encoding/json reads an object into
// a struct, as earlier versions of this library read them: a key matches
// exactly or else whatever its case, and the last of a key given twice
// wins.
func TestSavedSectionsAreReadAsBefore(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	_, err := store.Save(ctx, "r", []byte(`{"version":1,"id":"r","step":0,"marks":["a"],"Marks":["x"],"other":["y"],"marks":["b"],"PENDING":[{"call_id":"c","tool":"pay","args":{},"schema":"s","asked_at":"2026-01-02T15:00:00Z"}]}`), 0, 0)
	require.NoError(t, err)
	run, err := toolset.ResumeRun(ctx, store, "r")
	require.NoError(t, err)
	defer run.End()
	assert.True(t, run.Marked("b"))
	assert.False(t, run.Marked("a"), "the later marks win")
	assert.False(t, run.Marked("x"), "the exact key wins")
	assert.False(t, run.Marked("y"))
	require.Len(t, run.PendingApprovals(), 1)
	assert.Equal(t, "c", run.PendingApprovals()[0].CallID)
}

// A section of the wrong JSON type is refused with a short error that
// names it.
func TestSavedSectionOfTheWrongTypeIsNamed(t *testing.T) {
	ctx := context.Background()
	for _, key := range []string{"approvals", "pending", "reveals", "failures", "caches", "marks"} {
		store := toolset.NewMemoryRunStore()
		_, err := store.Save(ctx, "r", []byte(`{"version":1,"id":"r","step":0,"`+key+`":{"a":1},"step":`+strings.Repeat("9", 1<<16)+`}`), 0, 0)
		require.NoError(t, err)
		run, err := toolset.ResumeRun(ctx, store, "r")
		require.Error(t, err, key)
		assert.Nil(t, run)
		assert.Contains(t, err.Error(), `toolset: run "r": saved state (version 1 in the store): `+key+": JSON object where", key)
		assert.Less(t, len(err.Error()), 200, key)
		var ce *toolset.RunStateConflictError
		assert.False(t, errors.As(err, &ce), key)
	}
}

// Entries restored for a tool this process does not offer (yet) wait for
// it: they are saved again as they were, every kind of them, and given to
// the tool once a later process offers it.
func TestRestoredEntriesWaitForTheirTool(t *testing.T) {
	inBubble(func(t *testing.T) {
		ctx := context.Background()
		store := toolset.NewMemoryRunStore()
		a := newDurableAgent()
		run, err := toolset.ResumeRun(ctx, store, "wait")
		require.NoError(t, err)
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "a", a.entries...)
		require.NoError(t, err)
		_, err = execute(t, turn, tools, "c0", "lookup", `{"id":1}`)
		require.Error(t, err)
		_, err = execute(t, turn, tools, "c1", "tool_search", `{"query":"weather"}`)
		require.NoError(t, err)
		turn = run.Turn(ctx)
		tools, err = toolset.BuildTools(turn, "a", a.entries...)
		require.NoError(t, err)
		_, err = execute(t, turn, tools, "c2", "get_weather", `{"city":"Oslo"}`)
		require.NoError(t, err)
		require.NoError(t, run.Suspend(ctx))
		first, _, err := store.Load(ctx, "wait")
		require.NoError(t, err)
		sections := func(data []byte) map[string]json.RawMessage {
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(data, &m))
			delete(m, "step")
			delete(m, "holder")
			return m
		}

		// A process that offers none of the tools.
		run, err = toolset.ResumeRun(ctx, store, "wait")
		require.NoError(t, err)
		_, err = toolset.BuildTools(run.Turn(ctx), "a", echoTool("other"))
		require.NoError(t, err)
		require.NoError(t, run.Suspend(ctx))
		second, _, err := store.Load(ctx, "wait")
		require.NoError(t, err)
		assert.Equal(t, sections(first), sections(second), "the entries are kept for their tools")

		// A process that offers them again.
		b := newDurableAgent()
		run, err = toolset.ResumeRun(ctx, store, "wait")
		require.NoError(t, err)
		defer run.End()
		turn = run.Turn(ctx)
		tools, err = toolset.BuildTools(turn, "a", b.entries...)
		require.NoError(t, err)
		assert.Contains(t, tools.Names(), "get_weather", "the reveal is bound")
		got, err := execute(t, turn, tools, "c3", "get_weather", `{"city":"Oslo"}`)
		require.NoError(t, err)
		assert.JSONEq(t, `{"city":"Oslo","temp":7}`, string(got.(json.RawMessage)))
		assert.Zero(t, b.weatherRuns.Load(), "the cache is bound")
		_, err = execute(t, turn, tools, "c4", "lookup", `{"id":1}`)
		require.Error(t, err)
		tools, err = toolset.BuildTools(run.Turn(ctx), "a", b.entries...)
		require.NoError(t, err)
		assert.NotContains(t, tools.Names(), "lookup", "the failure is bound: two failing steps spend the budget")
	})(t)
}

// A run whose tool is made anew each turn (a Dynamic toolset) keeps a
// run cache for each of those tools, all of one name and schema; its
// saved state lists them as one cache, which the next process resumes,
// with the entries of each.
func TestRunCachesOfAToolMadeEachTurnResume(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	var runs []string
	dyn := toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) {
		return toolset.NewTool("weather", "Weather of a city.", func(_ context.Context, in struct {
			City string `json:"city"`
		}) (string, error) {
			runs = append(runs, in.City)
			return "sunny in " + in.City, nil
		}, toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun, Persist: true})), nil
	})
	run, err := toolset.ResumeRun(ctx, store, "dyn")
	require.NoError(t, err)
	for _, city := range []string{"Oslo", "Rome", "Oslo"} {
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "a", dyn)
		require.NoError(t, err)
		_, err = tools.Execute(turn, toolset.ToolCall{Name: "weather", Args: json.RawMessage(`{"city":"` + city + `"}`)})
		require.NoError(t, err)
	}
	require.NoError(t, run.Suspend(ctx))
	data, _, err := store.Load(ctx, "dyn")
	require.NoError(t, err)
	var st struct {
		Caches []struct {
			Tool    string
			Entries []struct{ Key string }
		}
	}
	require.NoError(t, json.Unmarshal(data, &st))
	require.Len(t, st.Caches, 1, "%s", data)
	var keys []string
	for _, e := range st.Caches[0].Entries {
		keys = append(keys, e.Key)
	}
	assert.ElementsMatch(t, []string{`{"city":"Oslo"}`, `{"city":"Rome"}`}, keys, "each key once")

	run, err = toolset.ResumeRun(ctx, store, "dyn")
	require.NoError(t, err, "the saved state resumes")
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", dyn)
	require.NoError(t, err)
	before := len(runs)
	for _, city := range []string{"Oslo", "Rome"} {
		got, err := tools.Execute(turn, toolset.ToolCall{Name: "weather", Args: json.RawMessage(`{"city":"` + city + `"}`)})
		require.NoError(t, err)
		assert.Equal(t, "sunny in "+city, got)
	}
	assert.Len(t, runs, before, "both answered from the restored cache")
}
