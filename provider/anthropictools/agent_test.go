package anthropictools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/anthropictools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/gotoolset/toolset/toolsettest/sampleagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func question() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(sampleagent.Question))},
	}
}

func TestRunLoopCallsToolsThenAnswers(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic, sampleagent.Script()...)
	res, err := anthropictools.RunLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant", sampleagent.Tools())
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, res.Text)
	assert.Equal(t, 2, res.Steps)
	require.NotNil(t, res.Message)
	// The question, the calls, the user message of their results, the
	// answer.
	require.Len(t, res.Messages, 4)
	assert.NotNil(t, res.Messages[1].OfAssistant)
	assert.Len(t, res.Messages[2].OfUser.Content, 2)
	// The bad arguments came back flagged, for the model to fix.
	sampleagent.AssertRun(t, model.Requests(), sampleagent.SentTools(), true)
}

func TestRunLoopRunsCallsInParallel(t *testing.T) {
	var running atomic.Int32
	both := make(chan struct{})
	meet := toolset.NewTool("meet", "Waits for the other call.", func(ctx context.Context, in struct {
		ID string `json:"id"`
	}) (string, error) {
		if running.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
			return "met " + in.ID, nil
		case <-time.After(5 * time.Second):
			return "", toolset.ModelErrorf("alone")
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(
			toolset.ToolCall{ID: "call_b", Name: "meet", Args: json.RawMessage(`{"id":"B"}`)},
			toolset.ToolCall{ID: "call_a", Name: "meet", Args: json.RawMessage(`{"id":"A"}`)}),
		toolsettest.Answer("both met"))
	res, err := anthropictools.RunLoop(t.Context(), newClient(model), question(), nil, "assistant", []toolset.Toolset{meet})
	require.NoError(t, err)
	assert.Equal(t, "both met", res.Text)
	assert.Equal(t, []toolsettest.ToolResult{
		{CallID: "call_b", Name: "meet", Text: "met B"},
		{CallID: "call_a", Name: "meet", Text: "met A"},
	}, model.Requests()[1].Results)
}

func TestRunLoopStopsAtTheStepLimit(t *testing.T) {
	weather := func(id string) toolsettest.Step {
		return toolsettest.CallTools(toolset.ToolCall{ID: id, Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)})
	}
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic, weather("call_1"), weather("call_2"))
	res, err := anthropictools.RunLoop(t.Context(), newClient(model), question(), nil, "assistant", sampleagent.Tools(),
		anthropictools.WithMaxSteps(2))
	var limit *anthropictools.StepLimitError
	require.ErrorAs(t, err, &limit)
	assert.Equal(t, 2, limit.Steps)
	require.Len(t, limit.Messages, 5)
	assert.Equal(t, res.Messages, limit.Messages)

	_, err = anthropictools.RunLoop(t.Context(), newClient(model), question(), nil, "assistant", sampleagent.Tools(),
		anthropictools.WithMaxSteps(-1))
	require.ErrorContains(t, err, "WithMaxSteps(-1)")
}

func TestRunLoopPausesForApprovalAndResumes(t *testing.T) {
	ctx := t.Context()
	store := toolset.NewMemoryRunStore()
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(
			toolset.ToolCall{ID: "call_a", Name: "refund", Args: json.RawMessage(`{"id":"A"}`)},
			toolset.ToolCall{ID: "call_b", Name: "refund", Args: json.RawMessage(`{"id":"B"}`)}),
		toolsettest.Answer("A is refunded."))
	client := newClient(model)
	refund := []toolset.Toolset{sampleagent.NeedsApproval("refund")}

	run, err := toolset.ResumeRun(ctx, store, "run-1")
	require.NoError(t, err)
	res, err := anthropictools.RunLoop(ctx, client, question(), run, "assistant", refund)
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need)
	require.Len(t, res.Messages, 2, "the question, and the calls that did not run")
	require.NoError(t, run.Suspend(ctx))
	// The conversation is kept as JSON until the human decides.
	saved, err := json.Marshal(res.Messages)
	require.NoError(t, err)
	var messages []anthropic.MessageParam
	require.NoError(t, json.Unmarshal(saved, &messages))

	for pauses := 0; ; pauses++ {
		require.Less(t, pauses, 3, "the loop keeps pausing")
		run, err := toolset.ResumeRun(ctx, store, "run-1")
		require.NoError(t, err)
		for _, p := range run.PendingApprovals() {
			if p.CallID == "call_a" {
				run.RecordApproval(p.Call())
			} else {
				run.RecordDenial(p.Call(), "not B")
			}
		}
		params := question()
		params.Messages = messages
		res, err = anthropictools.RunLoop(ctx, client, params, run, "assistant", refund)
		if errors.As(err, &need) {
			messages = res.Messages
			require.NoError(t, run.Suspend(ctx))
			continue
		}
		require.NoError(t, err)
		run.End()
		break
	}
	assert.Equal(t, "A is refunded.", res.Text)
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []toolsettest.ToolResult{
		{CallID: "call_a", Name: "refund", Text: "done A"},
		{CallID: "call_b", Name: "refund", Text: `the call of tool "refund" was denied by a human: not B`, IsError: true},
	}, reqs[1].Results)
}

func TestRunLoopReportsAModelError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"type":"error","error":{"type":"api_error","message":"the model is down"}}`)
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	res, err := anthropictools.RunLoop(t.Context(), client, question(), nil, "assistant", sampleagent.Tools())
	var me *anthropictools.ModelError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 1, me.Step)
	var apiErr *anthropic.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusInternalServerError, apiErr.StatusCode)
	assert.Len(t, res.Messages, 1)
}

func TestRunLoopStopsAtACallErrorThatStopsTheRun(t *testing.T) {
	broken := toolset.NewTool("broken", "Fails.", func(context.Context, struct{}) (string, error) {
		return "", errors.New("the database is gone")
	})
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(toolset.ToolCall{ID: "call_x", Name: "broken"}))
	res, err := anthropictools.RunLoop(t.Context(), newClient(model), question(), nil, "assistant", []toolset.Toolset{broken})
	var ce *anthropictools.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "call_x", ce.Call.ID)
	assert.Len(t, res.Messages, 2)
}

func TestRunLoopStreamsTheModelsText(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic, sampleagent.Script()...)
	var deltas []string
	res, err := anthropictools.RunLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant", sampleagent.Tools(),
		anthropictools.WithStream(func(d string) { deltas = append(deltas, d) }))
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, res.Text)
	assert.Equal(t, strings.SplitAfter(sampleagent.Answer, " "), deltas, "the pieces, in order")
	assert.Equal(t, res.Text, strings.Join(deltas, ""))
	// The calls came in pieces too, and ran: the model saw both results.
	sampleagent.AssertRun(t, model.Requests(), sampleagent.SentTools(), true)
	for _, r := range model.Requests() {
		assert.Contains(t, string(r.Body), `"stream":true`)
	}
	require.NotNil(t, res.Message)
	assert.Equal(t, "msg_2", res.Message.ID)
}

func TestRunLoopHostileStream(t *testing.T) {
	for name, body := range map[string]string{
		"no message_start": "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
		"not JSON":         "event: message_start\ndata: {\"type\":\n\n",
		"nothing":          "",
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, body)
			}))
			defer srv.Close()
			defer srv.Client().CloseIdleConnections()
			client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"),
				option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
			var deltas []string
			res, err := anthropictools.RunLoop(t.Context(), client, question(), nil, "assistant", sampleagent.Tools(),
				anthropictools.WithStream(func(d string) { deltas = append(deltas, d) }))
			var me *anthropictools.ModelError
			require.ErrorAs(t, err, &me)
			assert.Empty(t, deltas)
			assert.Len(t, res.Messages, 1)
		})
	}
}

func TestRunLoopStreamFunctionThatPanics(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic, toolsettest.Answer("hello world"))
	_, err := anthropictools.RunLoop(t.Context(), newClient(model), question(), nil, "assistant", sampleagent.Tools(),
		anthropictools.WithStream(func(string) { panic("boom") }))
	require.ErrorContains(t, err, "the stream function panicked: boom")
}

func TestRunLoopPauseKeepsTheResultsOfTheCallsThatRan(t *testing.T) {
	ctx := t.Context()
	var weatherRuns atomic.Int32
	weather := toolset.NewTool("weather", "Weather.", func(context.Context, struct{}) (string, error) {
		weatherRuns.Add(1)
		return "sunny", nil
	})
	tools := []toolset.Toolset{weather, sampleagent.NeedsApproval("refund")}
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(
			toolset.ToolCall{ID: "call_w", Name: "weather"},
			toolset.ToolCall{ID: "call_r", Name: "refund", Args: json.RawMessage(`{"id":"R"}`)}),
		toolsettest.Answer("done"))
	client := newClient(model)
	run := toolsettest.NewRun(t)
	res, err := anthropictools.RunLoop(ctx, client, question(), run, "assistant", tools)
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need)
	assert.Equal(t, "call_r", need.Call.ID)
	require.Len(t, res.Messages, 3, "the question, the calls, the result of the call that ran")
	assert.Len(t, res.Messages[2].OfUser.Content, 1)

	run.RecordApproval(need.Call)
	params := question()
	params.Messages = res.Messages
	res, err = anthropictools.RunLoop(ctx, client, params, run, "assistant", tools)
	require.NoError(t, err)
	assert.Equal(t, "done", res.Text)
	assert.Equal(t, int32(1), weatherRuns.Load(), "the call that ran before the pause does not run again")
	assert.Equal(t, []toolsettest.ToolResult{
		{CallID: "call_w", Name: "weather", Text: "sunny"},
		{CallID: "call_r", Name: "refund", Text: "done R"},
	}, model.Requests()[1].Results, "one user message of both results")
	assert.Len(t, res.Messages, 4)
}
