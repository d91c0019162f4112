package toolset_test

import (
	"context"
	"encoding/json"
	"testing"

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
