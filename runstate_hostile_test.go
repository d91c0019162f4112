package toolset_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An approval given with edited arguments that are not JSON (or empty)
// approves those arguments only: after a save and a resume the call must
// not run with the model's arguments, which the approver replaced.
func TestEditedArgsThatAreNotJSONNeverRunTheModelsArgsAfterResume(t *testing.T) {
	for name, edit := range map[string]string{"not JSON": `{"to":"ann",`, "empty": ``} {
		a := newDurableAgent()
		ctx := context.Background()
		store := toolset.NewMemoryRunStore()
		run, err := toolset.ResumeRun(ctx, store, "r")
		require.NoError(t, err)
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "a", a.entries...)
		require.NoError(t, err)
		call := toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"mallory","amount":5000}`)}
		_, err = tools.Execute(turn, call)
		var asked *toolset.ApprovalRequiredError
		require.ErrorAs(t, err, &asked, name)
		run.RecordApproval(call, toolset.WithEditedArgs(json.RawMessage(edit)))
		require.NoError(t, run.Suspend(ctx), name)

		run, err = toolset.ResumeRun(ctx, store, "r")
		require.NoError(t, err, name)
		turn = run.Turn(ctx)
		tools, err = toolset.BuildTools(turn, "a", a.entries...)
		require.NoError(t, err, name)
		_, err = tools.Execute(turn, call)
		require.Error(t, err, name)
		assert.Zero(t, a.payRuns.Load(), "%s: the model's arguments, replaced by the approver, did not run", name)
		run.End()
	}
}

// A state lists each call, and each tool's count and cache, once, as a
// run saves it; one that lists one twice (two decisions for one call, one
// approving and one denying, say) is refused, not read in an order that
// picks one of them.
func TestResumeRunRefusesDuplicateEntries(t *testing.T) {
	ctx := context.Background()
	ok := `{"call_id":"c1","tool":"pay","args":{"to":"bob","amount":5},"decision":"approved"}`
	no := `{"call_id":"c1","tool":"pay","args":{ "amount":5, "to":"bob" },"decision":"denied"}`
	ask := `{"call_id":"c1","tool":"pay","args":{},"schema":"s","asked_at":"2026-01-02T15:00:00Z"}`
	fail := `{"tool":"lookup","schema":"s","steps":1,"last_step":0}`
	cache := `{"tool":"get_weather","schema":"s","entries":[{"key":"k","value":1}]}`
	for name, data := range map[string]string{
		"decisions": `{"version":1,"id":"r","step":0,"approvals":[` + no + `,` + ok + `]}`,
		"pending":   `{"version":1,"id":"r","step":0,"pending":[` + ask + `,` + ask + `]}`,
		"failures":  `{"version":1,"id":"r","step":0,"failures":[` + fail + `,` + fail + `]}`,
		"caches":    `{"version":1,"id":"r","step":0,"caches":[` + cache + `,` + cache + `]}`,
	} {
		store := toolset.NewMemoryRunStore()
		_, err := store.Save(ctx, "r", []byte(data), 0, 0)
		require.NoError(t, err)
		run, err := toolset.ResumeRun(ctx, store, "r")
		require.Error(t, err, name)
		assert.Nil(t, run, name)
		assert.Contains(t, err.Error(), `toolset: run "r": saved state`, name)
	}
}

// A process whose lease ran out, and whose run another process resumed
// since, does not delete that process's state when it ends the run: it
// no longer holds it.
func TestStaleProcessEndingARunKeepsTheNewHoldersState(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	stale, err := toolset.ResumeRun(ctx, store, "r", toolset.WithRunLease(time.Millisecond))
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond) // the lease runs out; the process does not know
	// Another process resumes the run, as ResumeRun does there: it loads
	// the state and claims it with a compare-and-swap save.
	data, v, err := store.Load(ctx, "r")
	require.NoError(t, err)
	theirs := strings.Replace(string(data), `"step":`, `"holder":{"token":"b","until":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"},"step":`, 1)
	_, err = store.Save(ctx, "r", []byte(theirs), v, 0)
	require.NoError(t, err)

	stale.End()
	data, _, err = store.Load(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, theirs, string(data), "the new holder's state is still saved")
}
