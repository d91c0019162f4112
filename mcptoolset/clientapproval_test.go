package mcptoolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// confirmingServer is a real SDK server over loopback HTTP at 2026-07-28
// whose tool deploy asks for a confirmation by an input-required result;
// asked is the request the server sends. It counts deploys done.
func confirmingServer(t *testing.T, asked mcp.InputRequestMap, deployed *atomic.Int32) string {
	return confirmingServerState(t, asked, "opaque:1", deployed)
}

func confirmingServerState(t *testing.T, asked mcp.InputRequestMap, state string, deployed *atomic.Int32) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "deploy", InputSchema: json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.RequestState == "" {
				return &mcp.CallToolResult{InputRequests: asked, RequestState: state}, nil
			}
			r, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
			if req.Params.RequestState != state || !ok || r.Action != "accept" || r.Content["ok"] != true {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "not confirmed"}}}, nil
			}
			deployed.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	return hs.URL
}

var confirm = mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Message: "Deploy to prod?",
	RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)}}

// A remote server's request to confirm a call reaches the agent's run as
// an approval: the call stops with an ApprovalRequiredError listed by
// PendingApprovals, and once the run records the approval, repeating the
// call answers the server's request and the call runs.
func TestClientServersConfirmationIsAnApprovalOfTheRun(t *testing.T) {
	checkLeaks(t)
	var deployed atomic.Int32
	ts := mcptoolset.NewHTTP(confirmingServer(t, confirm, &deployed), mcptoolset.WithName("remote"))
	t.Cleanup(func() { _ = ts.Close() })
	run := toolset.NewRun("agent-run")
	defer run.End()

	turn, tools, _ := names(t, run, ts)
	call := toolset.ToolCall{ID: "c1", Name: "deploy", Args: json.RawMessage(`{"env": "prod"}`)}
	_, err := tools.Execute(turn, call)
	var are *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &are)
	assert.Equal(t, "c1", are.Call.ID)
	assert.Equal(t, "agent-run", are.RunID)
	pending := run.PendingApprovals()
	require.Len(t, pending, 1)
	assert.Equal(t, "deploy", pending[0].Tool)
	assert.Equal(t, "c1", pending[0].CallID)
	assert.JSONEq(t, `{"env":"prod"}`, string(pending[0].Args))
	assert.Zero(t, deployed.Load())

	// Repeated without a decision, it still waits.
	turn, tools, _ = names(t, run, ts)
	_, err = tools.Execute(turn, call)
	require.ErrorAs(t, err, &are)
	assert.Zero(t, deployed.Load())

	run.RecordApproval(pending[0].Call())
	turn, tools, _ = names(t, run, ts)
	res, err := tools.Execute(turn, call)
	require.NoError(t, err)
	text, _ := toolset.ResultText(res)
	assert.Equal(t, "deployed", text)
	assert.EqualValues(t, 1, deployed.Load())
	assert.Empty(t, run.PendingApprovals())

	// The approval is used up: the next call is asked about again.
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "c2", Name: "deploy", Args: json.RawMessage(`{"env":"prod"}`)})
	require.ErrorAs(t, err, &are)
	assert.EqualValues(t, 1, deployed.Load())
}

// A denial recorded in the run tells the model, and the server's request
// is not answered.
func TestClientServersConfirmationDenied(t *testing.T) {
	checkLeaks(t)
	var deployed atomic.Int32
	ts := mcptoolset.NewHTTP(confirmingServer(t, confirm, &deployed), mcptoolset.WithName("remote"))
	t.Cleanup(func() { _ = ts.Close() })
	run := toolset.NewRun("agent-run")
	defer run.End()
	turn, tools, _ := names(t, run, ts)
	call := toolset.ToolCall{ID: "c1", Name: "deploy", Args: json.RawMessage(`{"env":"prod"}`)}
	_, err := tools.Execute(turn, call)
	require.Error(t, err)
	run.RecordDenial(call, "not on a Friday")
	_, err = tools.Execute(turn, call)
	text, forModel := toolset.ErrorText(err)
	require.True(t, forModel, "%v", err)
	assert.Contains(t, text, "denied by a human: not on a Friday")
	assert.Zero(t, deployed.Load())
}

// Any other question of the server is an error the model sees, naming
// what was asked.
func TestClientServersOtherQuestionsAreModelErrors(t *testing.T) {
	checkLeaks(t)
	for name, asked := range map[string]mcp.InputRequestMap{
		"form":     {"confirm": &mcp.ElicitParams{Message: "Which region?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string"}}}`)}},
		"two":      {"confirm": confirm["confirm"], "b": confirm["confirm"]},
		"sampling": wireRequests(t, `{"s":{"method":"sampling/createMessage","params":{"maxTokens":10,"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}}}`),
		"roots":    wireRequests(t, `{"r":{"method":"roots/list","params":{}}}`),
	} {
		t.Run(name, func(t *testing.T) {
			var deployed atomic.Int32
			ts := mcptoolset.NewHTTP(confirmingServer(t, asked, &deployed), mcptoolset.WithName("remote"))
			t.Cleanup(func() { _ = ts.Close() })
			run := toolset.NewRun("agent-run")
			defer run.End()
			turn, tools, _ := names(t, run, ts)
			_, err := tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "deploy", Args: json.RawMessage(`{}`)})
			text, forModel := toolset.ErrorText(err)
			require.True(t, forModel, "%v", err)
			assert.Contains(t, text, `the MCP server "remote" asked, for the call of its tool "deploy", for input this client cannot give`)
			assert.Contains(t, text, map[string]string{"form": `"Which region?"`, "two": "an elicitation", "sampling": "sampling/createMessage", "roots": "roots/list"}[name])
			var ire *mcptoolset.InputRequestError
			require.True(t, errors.As(err, &ire))
			assert.Empty(t, run.PendingApprovals())
		})
	}
}

// wireRequests decodes input requests from their wire form.
func wireRequests(t *testing.T, s string) mcp.InputRequestMap {
	var m mcp.InputRequestMap
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

// End to end: this package's client calls this package's server, whose
// tool needs approval. The server's request reaches the client's run, the
// run approves, and the served tool runs once.
func TestClientApprovesAServedTool(t *testing.T) {
	checkLeaks(t)
	var ran atomic.Int32
	_, url := approvalServer(t, &ran)
	ts := mcptoolset.NewHTTP(url, mcptoolset.WithName("bank"))
	t.Cleanup(func() { _ = ts.Close() })
	run := toolset.NewRun("agent-run")
	defer run.End()
	turn, tools, _ := names(t, run, ts)
	call := toolset.ToolCall{ID: "c1", Name: "transfer", Args: json.RawMessage(`{"amount":500}`)}
	_, err := tools.Execute(turn, call)
	var are *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &are)
	require.Len(t, run.PendingApprovals(), 1)
	run.RecordApproval(call)
	turn, tools, _ = names(t, run, ts)
	res, err := tools.Execute(turn, call)
	require.NoError(t, err)
	text, _ := toolset.ResultText(res)
	assert.Equal(t, "transferred $500", text)
	assert.EqualValues(t, 1, ran.Load())
}

// A server's requestState is kept opaque and bounded: one too long is not
// kept, and the model is told.
func TestClientServersOversizedRequestState(t *testing.T) {
	checkLeaks(t)
	var deployed atomic.Int32
	ts := mcptoolset.NewHTTP(confirmingServerState(t, confirm, strings.Repeat("s", 64<<10), &deployed), mcptoolset.WithName("remote"))
	t.Cleanup(func() { _ = ts.Close() })
	run := toolset.NewRun("agent-run")
	defer run.End()
	turn, tools, _ := names(t, run, ts)
	_, err := tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "deploy", Args: json.RawMessage(`{}`)})
	text, forModel := toolset.ErrorText(err)
	require.True(t, forModel, "%v", err)
	assert.Contains(t, text, "requestState is too long")
	assert.Empty(t, run.PendingApprovals())
}

// An older server (a real SDK server over loopback HTTP, in a 2025-11-25
// session) that asks on the session by elicitation/create reaches the
// run too: undecided, the elicitation is cancelled and the call waits for
// the run's approval; approved, the repeated call's elicitation is
// accepted.
func TestClientSessionElicitationIsAnApprovalOfTheRun(t *testing.T) {
	checkLeaks(t)
	var deployed atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "old", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "deploy", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Deploy?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)})
			if err != nil {
				return nil, err
			}
			if r.Action != "accept" || r.Content["ok"] != true {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "not deployed: " + r.Action}}}, nil
			}
			deployed.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	ts := mcptoolset.NewHTTP(hs.URL, mcptoolset.WithName("old"))
	t.Cleanup(func() { _ = ts.Close() })
	run := toolset.NewRun("agent-run")
	defer run.End()

	turn, tools, _ := names(t, run, ts)
	call := toolset.ToolCall{ID: "c1", Name: "deploy", Args: json.RawMessage(`{}`)}
	_, err := tools.Execute(turn, call)
	var are *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &are)
	require.Len(t, run.PendingApprovals(), 1)
	assert.Zero(t, deployed.Load())

	run.RecordApproval(call)
	turn, tools, _ = names(t, run, ts)
	res, err := tools.Execute(turn, call)
	require.NoError(t, err)
	text, _ := toolset.ResultText(res)
	assert.Equal(t, "deployed", text)
	assert.EqualValues(t, 1, deployed.Load())
}

// A call the run approved before the server asked (a decision recorded
// ahead, or kept by a run resumed in another process) answers the
// server's request at once.
func TestClientServersConfirmationApprovedAhead(t *testing.T) {
	checkLeaks(t)
	var deployed atomic.Int32
	ts := mcptoolset.NewHTTP(confirmingServer(t, confirm, &deployed), mcptoolset.WithName("remote"))
	t.Cleanup(func() { _ = ts.Close() })
	run := toolset.NewRun("agent-run")
	defer run.End()
	call := toolset.ToolCall{ID: "c1", Name: "deploy", Args: json.RawMessage(`{"env":"prod"}`)}
	run.RecordApproval(call)
	turn, tools, _ := names(t, run, ts)
	res, err := tools.Execute(turn, call)
	require.NoError(t, err)
	text, _ := toolset.ResultText(res)
	assert.Equal(t, "deployed", text)
	assert.EqualValues(t, 1, deployed.Load())
}

// A hostile server that asks again after every answer does not make the
// client loop: each new request is a new approval for the run to decide.
func TestClientServerAskingForeverNeedsAHumanEachTime(t *testing.T) {
	checkLeaks(t)
	var asks atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "nag", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "deploy", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			asks.Add(1)
			return &mcp.CallToolResult{InputRequests: confirm, RequestState: "again"}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	ts := mcptoolset.NewHTTP(hs.URL, mcptoolset.WithName("nag"))
	t.Cleanup(func() { _ = ts.Close() })
	run := toolset.NewRun("agent-run")
	defer run.End()
	call := toolset.ToolCall{ID: "c1", Name: "deploy", Args: json.RawMessage(`{}`)}
	for i := range 3 {
		turn, tools, _ := names(t, run, ts)
		_, err := tools.Execute(turn, call)
		var are *toolset.ApprovalRequiredError
		require.ErrorAs(t, err, &are)
		assert.EqualValues(t, i+1, asks.Load(), "one request per attempt")
		run.RecordApproval(call)
	}
}
