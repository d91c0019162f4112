package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApproval(t *testing.T) {
	var runs atomic.Int64
	transfer := toolset.NewTool("transfer", "", func(_ context.Context, in lookupArgs) (string, error) {
		runs.Add(1)
		return fmt.Sprintf("sent %d", in.ID), nil
	}, toolset.WithApprovalRequired(func(_ context.Context, _ toolset.Tool, args json.RawMessage) (bool, error) {
		var in lookupArgs
		return json.Unmarshal(args, &in) != nil || in.ID > 100, nil // large amounts need a human
	}))
	rc := testRun(t, "r")
	ctx := rc.Turn(context.Background())
	tools := clones(t, ctx, transfer)

	got, err := tools.Execute(ctx, toolset.ToolCall{ID: "c0", Name: "p_transfer", Args: json.RawMessage(`{"id":5}`)})
	require.NoError(t, err)
	assert.Equal(t, "sent 5", got)

	big := toolset.ToolCall{ID: "c1", Name: "renamed", Args: json.RawMessage(`{"id":500}`)}
	_, err = tools.Execute(ctx, big)
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need)
	assert.Equal(t, big, need.Call)
	assert.Equal(t, int64(1), runs.Load())

	rc.RecordApproval(big)
	wipe := toolset.NewTool("wipe", "", func(_ context.Context, in lookupArgs) (string, error) {
		return "wiped", nil
	}, toolset.WithApprovalRequired(toolset.Always))
	withWipe, err := toolset.BuildTools(rc.Turn(ctx), "a", toolset.NewFunction(transfer), wipe)
	require.NoError(t, err)
	for _, other := range []toolset.ToolCall{
		{ID: "c1", Name: "transfer", Args: json.RawMessage(`{"id":999}`)},
		{ID: "c1", Name: "wipe", Args: json.RawMessage(`{"id":500}`)},
	} {
		_, err = withWipe.Execute(ctx, other)
		require.ErrorAs(t, err, &need, "an approval holds for the call it was asked for: %s", other.Args)
	}
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "transfer", Args: json.RawMessage(`{"id":500}`)})
	require.ErrorAs(t, err, &need, "the same tool under another name is another call")
	got, err = tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "renamed", Args: json.RawMessage(`{ "id": 500 }`)})
	require.NoError(t, err, "the same arguments in another form")
	assert.Equal(t, "sent 500", got)
	_, err = tools.Execute(ctx, big)
	require.ErrorAs(t, err, &need, "an approval is used up by its call")

	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "transfer", Args: json.RawMessage(`{"id":500}`)})
	require.ErrorAs(t, err, &need)
	assert.ErrorContains(t, err, "approvals are recorded by call ID: execute it with a ToolCall that has an ID", "a call without an ID cannot be approved, and says so")
	_, forModel := toolset.ErrorText(err)
	assert.False(t, forModel, "a call waiting for approval stops the run")
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c9", Name: "transfer", Args: json.RawMessage(`{"id":501}`)})
	require.ErrorAs(t, err, &need)
	assert.Equal(t, `toolset: run "r": call "c9" of tool "transfer" needs a human's approval: record it with RunContext.RecordApproval or RecordDenial and execute the call again`, err.Error())
	assert.Equal(t, "r", need.RunID)
	_, forModel = toolset.ErrorText(err)
	assert.False(t, forModel, "a call waiting for approval stops the run")

	deny := toolset.ToolCall{ID: "c2", Name: "transfer", Args: json.RawMessage(`{"id":900}`)}
	rc.RecordDenial(deny, "over the daily limit")
	_, err = tools.Execute(ctx, deny)
	msg, visible := toolset.ErrorText(err)
	require.True(t, visible)
	assert.Equal(t, `the call of tool "transfer" was denied by a human: over the daily limit`, msg)
	assert.Equal(t, int64(2), runs.Load())

	rc.RecordApproval(big)
	otherCtx := newRun(t, "other")
	other := clones(t, otherCtx, transfer)
	_, err = other.Execute(otherCtx, big)
	assert.ErrorAs(t, err, &need, "approvals are per run")
}

// A decision recorded for a call applies to that call only, even when the
// model (or a server) gives two calls one ID.
func TestApprovalBindsToTheCall(t *testing.T) {
	var paid []string
	var mu sync.Mutex
	pay := toolset.NewTool("pay", "", func(_ context.Context, in struct {
		To string `json:"to"`
	}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		paid = append(paid, in.To)
		return "paid " + in.To, nil
	}, toolset.WithApprovalRequired(toolset.Always))
	rc := testRun(t, "r")
	ctx := rc.Turn(context.Background())
	tools := clones(t, ctx, pay)
	mallory := toolset.ToolCall{ID: "call_0", Name: "pay", Args: json.RawMessage(`{"to":"mallory"}`)}
	bob := toolset.ToolCall{ID: "call_0", Name: "pay", Args: json.RawMessage(`{"to":"bob"}`)}
	var need *toolset.ApprovalRequiredError
	for _, c := range []toolset.ToolCall{mallory, bob} {
		_, err := tools.Execute(ctx, c)
		require.ErrorAs(t, err, &need)
	}
	rc.RecordDenial(mallory, "unknown payee")
	rc.RecordApproval(bob)
	_, err := tools.Execute(ctx, mallory)
	var denied *toolset.ApprovalDeniedError
	require.ErrorAs(t, err, &denied)
	got, err := tools.Execute(ctx, bob)
	require.NoError(t, err)
	assert.Equal(t, "paid bob", got)
	assert.Equal(t, []string{"bob"}, paid)

	// Without a run, nothing could record a decision: the call stops the
	// run and says why.
	_, err = pay.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"to":"bob"}`)})
	require.ErrorContains(t, err, "approvals are recorded in the run: execute it under a run (NewRun)")
	_, visible := toolset.ErrorText(err)
	assert.False(t, visible)
}

// TestNeedsApprovalAsksTheToolsFunction asks a tool whether a call would
// wait for approval, as a tool offering it again through Execute does:
// the tool's own function answers, a tool without one needs none, and a
// panic of the function is an error naming the tool.
func TestNeedsApprovalAsksTheToolsFunction(t *testing.T) {
	big := toolset.NewTool("transfer", "", func(_ context.Context, in lookupArgs) (string, error) { return "", nil },
		toolset.WithApprovalRequired(func(_ context.Context, _ toolset.Tool, args json.RawMessage) (bool, error) {
			var in lookupArgs
			err := json.Unmarshal(args, &in)
			return in.ID > 100, err
		}))
	for args, want := range map[string]bool{`{"id": 7}`: false, `{"id": 700}`: true} {
		got, err := big.NeedsApproval(context.Background(), json.RawMessage(args))
		require.NoError(t, err)
		assert.Equal(t, want, got, args)
	}
	plain := toolset.NewTool("lookup", "", func(_ context.Context, in lookupArgs) (string, error) { return "", nil })
	got, err := plain.NeedsApproval(context.Background(), json.RawMessage(`{"id": 700}`))
	require.NoError(t, err)
	assert.False(t, got)
	var zero toolset.Tool
	got, err = zero.NeedsApproval(context.Background(), nil)
	assert.NoError(t, err)
	assert.False(t, got)

	panics := toolset.NewTool("boom", "", func(_ context.Context, in lookupArgs) (string, error) { return "", nil },
		toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) { panic("no") }))
	_, err = panics.NeedsApproval(context.Background(), json.RawMessage(`{}`))
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "boom")
}
