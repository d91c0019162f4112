package openaitools_test

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

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/gotoolset/toolset/toolsettest/sampleagent"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func question() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(sampleagent.Question)},
	}
}

func TestRunChatLoopCallsToolsThenAnswers(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, sampleagent.Script()...)
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant", sampleagent.Tools())
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, res.Text)
	assert.Equal(t, 2, res.Steps)
	require.NotNil(t, res.Completion)
	assert.Equal(t, "chatcmpl-2", res.Completion.ID)
	// The question, the calls, their two results, the answer.
	require.Len(t, res.Messages, 5)
	assert.NotNil(t, res.Messages[1].OfAssistant)
	assert.Equal(t, sampleagent.Answer, res.Messages[4].OfAssistant.Content.OfString.Value)

	// The model was sent the tools each time, and the bad arguments as
	// the result of their call.
	sampleagent.AssertRun(t, model.Requests(), sampleagent.SentTools(), false)
	assert.Equal(t, sampleagent.BadArgsMessage(t), model.Requests()[1].Results[1].Text)
}

func TestRunChatLoopWithoutARun(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, sampleagent.Script()...)
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), question(), nil, "assistant", sampleagent.Tools())
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, res.Text)
}

func TestRunChatLoopRunsCallsInParallel(t *testing.T) {
	// Each call waits until both are running: run one after another, they
	// would time out.
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
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat,
		toolsettest.CallTools(
			toolset.ToolCall{ID: "call_b", Name: "meet", Args: json.RawMessage(`{"id":"B"}`)},
			toolset.ToolCall{ID: "call_a", Name: "meet", Args: json.RawMessage(`{"id":"A"}`)}),
		toolsettest.Answer("both met"))
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant", []toolset.Toolset{meet})
	require.NoError(t, err)
	assert.Equal(t, "both met", res.Text)
	// The results come in call order.
	assert.Equal(t, []toolsettest.ToolResult{
		{CallID: "call_b", Name: "meet", Text: "met B"},
		{CallID: "call_a", Name: "meet", Text: "met A"},
	}, model.Requests()[1].Results)
}

func TestRunChatLoopStopsAtTheStepLimit(t *testing.T) {
	weather := func(id string) toolsettest.Step {
		return toolsettest.CallTools(toolset.ToolCall{ID: id, Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)})
	}
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, weather("call_1"), weather("call_2"))
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant", sampleagent.Tools(),
		openaitools.WithMaxSteps(2))
	var limit *openaitools.StepLimitError
	require.ErrorAs(t, err, &limit)
	assert.Equal(t, 2, limit.Steps)
	assert.Equal(t, 2, res.Steps)
	assert.Empty(t, res.Text)
	// The question, then two calls and their results.
	require.Len(t, limit.Messages, 5)
	assert.Equal(t, res.Messages, limit.Messages)
	assert.Equal(t, "call_2", limit.Messages[4].OfTool.ToolCallID)
	assert.Len(t, model.Requests(), 2)
}

func TestRunChatLoopRefusesABadStepLimit(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat)
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), question(), nil, "assistant", sampleagent.Tools(),
		openaitools.WithMaxSteps(0))
	require.ErrorContains(t, err, "WithMaxSteps(0)")
	assert.Len(t, res.Messages, 1)
}

func TestRunChatLoopPassesTheApproverThrough(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, refundCalls(), toolsettest.Answer("A is refunded."))
	approver := func(_ context.Context, call toolset.ToolCall) (bool, string, error) {
		return call.ID == "call_a", "not B", nil
	}
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant", refundTools(),
		openaitools.WithCallOptions(openaitools.WithApprover(approver), openaitools.WithMaxConcurrency(1)))
	require.NoError(t, err)
	assert.Equal(t, "A is refunded.", res.Text)
	assert.Equal(t, []toolsettest.ToolResult{
		{CallID: "call_a", Name: "refund", Text: "done A"},
		{CallID: "call_b", Name: "refund", Text: `the call of tool "refund" was denied by a human: not B`},
	}, model.Requests()[1].Results)
}

func TestRunChatLoopPausesForApprovalAndResumes(t *testing.T) {
	ctx := t.Context()
	store := toolset.NewMemoryRunStore()
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, refundCalls(), toolsettest.Answer("A is refunded."))
	client := newClient(model)

	// The first request: the model calls refund twice, and nobody is
	// there to approve.
	run, err := toolset.ResumeRun(ctx, store, "run-1")
	require.NoError(t, err)
	res, err := openaitools.RunChatLoop(ctx, client, question(), run, "assistant", refundTools())
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need)
	assert.Equal(t, "run-1", need.RunID)
	require.Len(t, res.Messages, 2, "the question, and the calls that did not run")
	require.NotNil(t, res.Messages[1].OfAssistant)
	assert.Len(t, model.Requests(), 1, "the model is not asked again")
	require.NoError(t, run.Suspend(ctx))
	conversation, err := json.Marshal(res.Messages)
	require.NoError(t, err)

	// Later, perhaps elsewhere: the human decides each call asked about,
	// and the loop goes on from the conversation saved. A call not yet
	// asked about pauses the loop again, until every one is decided.
	var messages []openai.ChatCompletionMessageParamUnion
	require.NoError(t, json.Unmarshal(conversation, &messages))
	for pauses := 0; ; pauses++ {
		require.Less(t, pauses, 3, "the loop keeps pausing")
		run, err := toolset.ResumeRun(ctx, store, "run-1")
		require.NoError(t, err)
		pending := run.PendingApprovals()
		require.NotEmpty(t, pending)
		for _, p := range pending {
			if p.CallID == "call_a" {
				run.RecordApproval(p.Call())
			} else {
				run.RecordDenial(p.Call(), "B was refunded last week")
			}
		}
		require.NoError(t, run.Save(ctx))
		params := question()
		params.Messages = messages
		res, err = openaitools.RunChatLoop(ctx, client, params, run, "assistant", refundTools())
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
	assert.Equal(t, 1, res.Steps, "the resumed loop asked the model once")
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []toolsettest.ToolResult{
		{CallID: "call_a", Name: "refund", Text: "done A"},
		{CallID: "call_b", Name: "refund", Text: `the call of tool "refund" was denied by a human: B was refunded last week`},
	}, reqs[1].Results)
}

func TestRunChatLoopReportsAModelError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"type":"server_error","message":"the model is down"}}`)
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	res, err := openaitools.RunChatLoop(t.Context(), client, question(), toolsettest.NewRun(t), "assistant", sampleagent.Tools())
	var me *openaitools.ModelError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 1, me.Step)
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusInternalServerError, apiErr.StatusCode)
	assert.Contains(t, err.Error(), "step 1: asking the model")
	assert.Len(t, res.Messages, 1)
	assert.Nil(t, res.Completion)
}

func TestRunChatLoopStopsAtACallErrorThatStopsTheRun(t *testing.T) {
	broken := toolset.NewTool("broken", "Fails.", func(context.Context, struct{}) (string, error) {
		return "", errors.New("the database is gone")
	})
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat,
		toolsettest.CallTools(toolset.ToolCall{ID: "call_x", Name: "broken"}))
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant", []toolset.Toolset{broken})
	var ce *openaitools.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "call_x", ce.Call.ID)
	assert.Contains(t, err.Error(), "the database is gone")
	assert.Len(t, res.Messages, 2)
}

func TestRunChatLoopToolErrorTheModelSees(t *testing.T) {
	picky := toolset.NewTool("picky", "Knows one city.", func(_ context.Context, in struct {
		City string `json:"city"`
	}) (string, error) {
		if in.City != "Paris" {
			return "", toolset.ModelErrorf("no data for %s; try Paris", in.City)
		}
		return "sunny", nil
	})
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat,
		toolsettest.CallTools(toolset.ToolCall{ID: "call_1", Name: "picky", Args: json.RawMessage(`{"city":"Oslo"}`)}),
		toolsettest.Decide(func(req toolsettest.ModelRequest) (toolsettest.Step, error) {
			if len(req.Results) != 1 || !strings.Contains(req.Results[0].Text, "try Paris") {
				return toolsettest.Step{}, fmt.Errorf("want to be told to try Paris, got %+v", req.Results)
			}
			return toolsettest.CallTools(toolset.ToolCall{ID: "call_2", Name: "picky", Args: json.RawMessage(`{"city":"Paris"}`)}), nil
		}),
		toolsettest.Answer("Paris is sunny."))
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant", []toolset.Toolset{picky})
	require.NoError(t, err)
	assert.Equal(t, "Paris is sunny.", res.Text)
	assert.Equal(t, 3, res.Steps)
}

func TestRunChatLoopStreamsTheModelsText(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, sampleagent.Script()...)
	var deltas []string
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant", sampleagent.Tools(),
		openaitools.WithStream(func(delta string) { deltas = append(deltas, delta) }))
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, res.Text)
	assert.Equal(t, strings.SplitAfter(sampleagent.Answer, " "), deltas, "the pieces, in order")
	assert.Equal(t, res.Text, strings.Join(deltas, ""))
	// The calls came in pieces too, and ran: the model saw both results.
	sampleagent.AssertRun(t, model.Requests(), sampleagent.SentTools(), false)
	for _, r := range model.Requests() {
		assert.Contains(t, string(r.Body), `"stream":true`)
	}
	require.NotNil(t, res.Completion)
	assert.Equal(t, "chatcmpl-2", res.Completion.ID)
}

func TestRunChatLoopStreamFunctionThatPanics(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, toolsettest.Answer("hello world"))
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), question(), nil, "assistant", sampleagent.Tools(),
		openaitools.WithStream(func(string) { panic("boom") }))
	var me *openaitools.ModelError
	require.ErrorAs(t, err, &me)
	assert.Contains(t, err.Error(), "the stream function panicked: boom")
	assert.Len(t, res.Messages, 1)
}

func TestRunChatLoopStreamedModelError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"type":"server_error","message":"the model is down"}}`)
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	_, err := openaitools.RunChatLoop(t.Context(), client, question(), nil, "assistant", sampleagent.Tools(),
		openaitools.WithStream(func(string) {}))
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusInternalServerError, apiErr.StatusCode)
}

func TestRunChatLoopHostileStream(t *testing.T) {
	for name, body := range map[string]string{
		"choice index out of range": `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":100000,"delta":{"content":"hi"}}]}` + "\n\n",
		"not JSON":                  "data: {\"id\":\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, body+"data: [DONE]\n\n")
			}))
			defer srv.Close()
			defer srv.Client().CloseIdleConnections()
			client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"),
				option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
			var deltas []string
			res, err := openaitools.RunChatLoop(t.Context(), client, question(), nil, "assistant", sampleagent.Tools(),
				openaitools.WithStream(func(d string) { deltas = append(deltas, d) }))
			var me *openaitools.ModelError
			require.ErrorAs(t, err, &me)
			assert.Empty(t, deltas)
			assert.Len(t, res.Messages, 1)
		})
	}
}

func TestRunChatLoopResumedConversationThatIsNotOurs(t *testing.T) {
	// A conversation ending with a call of a custom tool the loop cannot
	// run: an error, and the model is not asked.
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat)
	params := question()
	params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
		ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfCustom: &openai.ChatCompletionMessageCustomToolCallParam{
			ID: "call_c", Custom: openai.ChatCompletionMessageCustomToolCallCustomParam{Name: "grammar", Input: "x"}}}},
	}})
	res, err := openaitools.RunChatLoop(t.Context(), newClient(model), params, nil, "assistant", sampleagent.Tools())
	var cte *openaitools.CallTypeError
	require.ErrorAs(t, err, &cte)
	assert.Equal(t, "call_c", cte.ID)
	assert.Len(t, res.Messages, 2)

	// A call of a tool no longer offered: the model is told, and goes on.
	model = toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, toolsettest.Answer("ok"))
	params = question()
	params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
		ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID: "call_gone", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "gone", Arguments: "{}"}}}},
	}})
	res, err = openaitools.RunChatLoop(t.Context(), newClient(model), params, nil, "assistant", sampleagent.Tools())
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Text)
	results := model.Requests()[0].Results
	require.Len(t, results, 1)
	assert.Contains(t, results[0].Text, `unknown tool "gone"`)
}

func TestRunChatLoopReplyWithoutChoices(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","choices":[]}`)
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	res, err := openaitools.RunChatLoop(t.Context(), client, question(), nil, "assistant", sampleagent.Tools())
	var me *openaitools.ModelError
	require.ErrorAs(t, err, &me)
	assert.ErrorContains(t, err, "no choices")
	assert.Len(t, res.Messages, 1)
}

func TestRunChatLoopPauseKeepsTheResultsOfTheCallsThatRan(t *testing.T) {
	ctx := t.Context()
	var weatherRuns atomic.Int32
	weather := toolset.NewTool("weather", "Weather.", func(context.Context, struct{}) (string, error) {
		weatherRuns.Add(1)
		return "sunny", nil
	})
	tools := []toolset.Toolset{weather, sampleagent.NeedsApproval("refund")}
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat,
		toolsettest.CallTools(
			toolset.ToolCall{ID: "call_w", Name: "weather"},
			toolset.ToolCall{ID: "call_r", Name: "refund", Args: json.RawMessage(`{"id":"R"}`)}),
		toolsettest.Answer("done"))
	client := newClient(model)
	run := toolsettest.NewRun(t)
	res, err := openaitools.RunChatLoop(ctx, client, question(), run, "assistant", tools)
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need)
	assert.Equal(t, "call_r", need.Call.ID)
	require.Len(t, res.Messages, 3, "the question, the calls, the result of the call that ran")
	assert.Equal(t, "call_w", res.Messages[2].OfTool.ToolCallID)

	run.RecordApproval(need.Call)
	params := question()
	params.Messages = res.Messages
	res, err = openaitools.RunChatLoop(ctx, client, params, run, "assistant", tools)
	require.NoError(t, err)
	assert.Equal(t, "done", res.Text)
	assert.Equal(t, int32(1), weatherRuns.Load(), "the call that ran before the pause does not run again")
	assert.Equal(t, []toolsettest.ToolResult{
		{CallID: "call_w", Name: "weather", Text: "sunny"},
		{CallID: "call_r", Name: "refund", Text: "done R"},
	}, model.Requests()[1].Results)
}
