package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMarkIsTheRunsOwn checks that a mark is seen by its run alone, not
// by another run nor by a child, and is gone when the run ends.
func TestMarkIsTheRunsOwn(t *testing.T) {
	a := toolset.NewRun("marks-a")
	b := toolset.NewRun("marks-b")
	defer b.End()
	require.NoError(t, a.Mark("skill:pdf"))
	require.NoError(t, a.Mark("skill:pdf"), "marking twice is marking once")
	assert.True(t, a.Marked("skill:pdf"))
	assert.False(t, a.Marked("skill:csv"))
	assert.False(t, b.Marked("skill:pdf"))
	child := a.NewChild("")
	assert.False(t, child.Marked("skill:pdf"))
	child.End()

	a.End()
	assert.False(t, a.Marked("skill:pdf"))
	assert.ErrorIs(t, a.Mark("skill:csv"), toolset.ErrRunEnded)

	var none *toolset.RunContext
	assert.False(t, none.Marked("skill:pdf"))
	assert.ErrorContains(t, none.Mark("skill:pdf"), "no run")
}

func TestMarkRefusesBadNames(t *testing.T) {
	rc := toolset.NewRun("marks-bad")
	defer rc.End()
	for _, name := range []string{"", strings.Repeat("x", toolset.MaxMarkBytes+1), "\xff"} {
		assert.Error(t, rc.Mark(name), "%q", name)
	}
	require.NoError(t, rc.Mark(strings.Repeat("x", toolset.MaxMarkBytes)))
}

func TestMarksAreBounded(t *testing.T) {
	rc := toolset.NewRun("marks-many")
	defer rc.End()
	for i := range toolset.MaxMarks {
		require.NoError(t, rc.Mark(fmt.Sprint("m", i)))
	}
	assert.ErrorContains(t, rc.Mark("one-more"), "marks")
	require.NoError(t, rc.Mark("m0"), "an existing mark is no new one")
}

func TestMarksConcurrently(t *testing.T) {
	rc := toolset.NewRun("marks-concurrent")
	defer rc.End()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				name := fmt.Sprint("m", (i*50+j)%100)
				assert.NoError(t, rc.Mark(name))
				assert.True(t, rc.Marked(name))
			}
		})
	}
	wg.Wait()
	for i := range 100 {
		assert.True(t, rc.Marked(fmt.Sprint("m", i)))
	}
}

// TestMarksAreSavedWithTheRun checks that a run resumed elsewhere gets
// the marks of the process that suspended it, and that the state names
// them in "marks", sorted.
func TestMarksAreSavedWithTheRun(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	rc, err := toolset.ResumeRun(ctx, store, "marks-saved")
	require.NoError(t, err)
	require.NoError(t, rc.Mark("skill:pdf"))
	require.NoError(t, rc.Mark("skill:csv"))
	require.NoError(t, rc.Suspend(ctx))

	data, _, err := store.Load(ctx, "marks-saved")
	require.NoError(t, err)
	var st struct {
		Marks []string `json:"marks"`
	}
	require.NoError(t, json.Unmarshal(data, &st))
	assert.Equal(t, []string{"skill:csv", "skill:pdf"}, st.Marks)

	again, err := toolset.ResumeRun(ctx, store, "marks-saved")
	require.NoError(t, err)
	assert.True(t, again.Marked("skill:pdf"))
	assert.True(t, again.Marked("skill:csv"))
	again.End()
}

// TestMarkSavedAfterTheCall checks that a mark a tool makes is saved when
// its call returns, as a reveal is.
func TestMarkSavedAfterTheCall(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	load := toolset.NewTool("load", "Load.", func(ctx context.Context, _ struct{}) (string, error) {
		return "ok", toolset.FromContext(ctx).Mark("skill:pdf")
	})
	rc, err := toolset.ResumeRun(ctx, store, "marks-call")
	require.NoError(t, err)
	defer rc.End()
	tools, err := toolset.BuildTools(rc.Turn(ctx), "a", load)
	require.NoError(t, err)
	_, err = tools.Execute(rc.Turn(ctx), toolset.ToolCall{ID: "1", Name: "load", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	data, _, err := store.Load(ctx, "marks-call")
	require.NoError(t, err)
	assert.Contains(t, string(data), `"marks":["skill:pdf"]`)
}

// TestResumeRefusesBadMarks checks the marks of a forged or damaged
// state.
func TestResumeRefusesBadMarks(t *testing.T) {
	ctx := context.Background()
	many := make([]string, toolset.MaxMarks+1)
	for i := range many {
		many[i] = fmt.Sprint("m", i)
	}
	for name, marks := range map[string][]string{
		"empty":    {""},
		"long":     {strings.Repeat("x", toolset.MaxMarkBytes+1)},
		"twice":    {"a", "a"},
		"too many": many,
	} {
		t.Run(name, func(t *testing.T) {
			store := toolset.NewMemoryRunStore()
			data, err := json.Marshal(map[string]any{"version": 1, "id": "marks-forged", "step": 0, "marks": marks})
			require.NoError(t, err)
			_, err = store.Save(ctx, "marks-forged", data, 0, 0)
			require.NoError(t, err)
			_, err = toolset.ResumeRun(ctx, store, "marks-forged")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "marks")
			var ce *toolset.RunStateConflictError
			assert.False(t, errors.As(err, &ce))
		})
	}
}
