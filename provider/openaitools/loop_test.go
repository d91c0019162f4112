package openaitools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/gotoolset/toolset/toolsettest/sampleagent"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chatLoop is an agent loop as an application writes it.
func chatLoop(ctx context.Context, client openai.Client, toolsets []toolset.Toolset, opts ...openaitools.Option) (string, error) {
	messages := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(sampleagent.Question)}
	for range 4 {
		turn := toolset.FromContext(ctx).Turn(ctx) // ctx itself when it carries no run
		tools, err := toolset.BuildTools(turn, "assistant", toolsets...)
		if err != nil {
			return "", err
		}
		params, err := openaitools.ChatTools(tools, opts...)
		if err != nil {
			return "", err
		}
		completion, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "gpt-test", Messages: messages, Tools: params,
		})
		if err != nil {
			return "", err
		}
		msg := completion.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		messages = append(messages, msg.ToParam())
		results, err := openaitools.RunChatCalls(turn, tools, msg.ToolCalls, opts...)
		if err != nil {
			return "", err
		}
		messages = append(messages, results...)
	}
	return "", fmt.Errorf("no answer after 4 turns")
}

func newClient(m *toolsettest.ScriptedModel) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(m.BaseURL()),
		option.WithAPIKey("test-key"),
		option.WithHTTPClient(m.Client()),
		option.WithMaxRetries(0),
	)
}

func TestChatLoop(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, sampleagent.Script()...)
	got, err := chatLoop(t.Context(), newClient(model), sampleagent.Tools())
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, got)

	reqs := model.Requests()
	sampleagent.AssertRun(t, reqs, sampleagent.SentTools(), false)
	tools := `[{"type":"function","function":{"name":"get_weather","description":"Get the current weather in a city.","parameters":` + sampleagent.WeatherSchema + `}},` +
		`{"type":"function","function":{"name":"convert_currency","description":"Convert an amount between currencies.","parameters":` + sampleagent.ConvertSchema + `}}]`
	assert.JSONEq(t, `{"model":"gpt-test","messages":[{"role":"user","content":`+quote(sampleagent.Question)+`}],"tools":`+tools+`}`, string(reqs[0].Body))
	assert.JSONEq(t, `{"model":"gpt-test","tools":`+tools+`,"messages":[`+
		`{"role":"user","content":`+quote(sampleagent.Question)+`},`+
		`{"role":"assistant","tool_calls":[`+
		`{"id":"call_weather","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},`+
		`{"id":"call_convert","type":"function","function":{"name":"convert_currency","arguments":`+quote(sampleagent.BadArgs)+`}}]},`+
		`{"role":"tool","tool_call_id":"call_weather","content":"Paris: 22°C, sunny"},`+
		`{"role":"tool","tool_call_id":"call_convert","content":`+quote(sampleagent.BadArgsMessage(t))+`}]}`, string(reqs[1].Body))
}

func TestChatLoopStrict(t *testing.T) {
	// In strict mode the model sends null for the optional unit.
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat,
		toolsettest.CallTools(
			toolset.ToolCall{ID: "call_weather", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","unit":null}`)},
			toolset.ToolCall{ID: "call_convert", Name: "convert_currency", Args: json.RawMessage(sampleagent.BadArgs)}),
		sampleagent.Script()[1])
	got, err := chatLoop(t.Context(), newClient(model), sampleagent.Tools(), openaitools.WithStrict())
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, got)

	strict := []toolsettest.SentTool{
		{Name: "get_weather", Description: "Get the current weather in a city.", Strict: true,
			Parameters: json.RawMessage(`{"properties":{"city":{"type":"string","description":"City name"},"unit":{"type":["string","null"],"enum":["celsius","fahrenheit",null]}},"additionalProperties":false,"type":"object","required":["city","unit"]}`)},
		{Name: "convert_currency", Description: "Convert an amount between currencies.", Strict: true,
			Parameters: json.RawMessage(`{"properties":{"amount":{"type":"number","minimum":0},"from":{"type":"string"},"to":{"type":"string"}},"additionalProperties":false,"type":"object","required":["amount","from","to"]}`)},
	}
	// The null unit is dropped before the call, so get_weather succeeds.
	sampleagent.AssertRun(t, model.Requests(), strict, false)
}

// refundTools is a tool that waits for a human's approval of every call.
func refundTools() []toolset.Toolset { return []toolset.Toolset{sampleagent.NeedsApproval("refund")} }

func refundCalls() toolsettest.Step {
	return toolsettest.CallTools(
		toolset.ToolCall{ID: "call_a", Name: "refund", Args: json.RawMessage(`{"id":"A"}`)},
		toolset.ToolCall{ID: "call_b", Name: "refund", Args: json.RawMessage(`{"id":"B"}`)})
}

func TestChatLoopAsksTheApprover(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, refundCalls(), toolsettest.Answer("A is refunded."))
	var asked []string
	approver := func(_ context.Context, call toolset.ToolCall) (bool, string, error) {
		asked = append(asked, call.ID)
		return call.ID == "call_a", "B was refunded last week", nil
	}
	ctx := toolset.NewContext(t.Context(), toolsettest.NewRun(t))
	got, err := chatLoop(ctx, newClient(model), refundTools(), openaitools.WithApprover(approver), openaitools.WithMaxConcurrency(1))
	require.NoError(t, err)
	assert.Equal(t, "A is refunded.", got)
	assert.Equal(t, []string{"call_a", "call_b"}, asked)
	assert.Equal(t, []toolsettest.ToolResult{
		{CallID: "call_a", Name: "refund", Text: "done A"},
		{CallID: "call_b", Name: "refund", Text: `the call of tool "refund" was denied by a human: B was refunded last week`},
	}, model.Requests()[1].Results)
}

func TestChatLoopWithoutApproverStopsAtACallThatNeedsApproval(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, refundCalls())
	ctx := toolset.NewContext(t.Context(), toolsettest.NewRun(t))
	_, err := chatLoop(ctx, newClient(model), refundTools())
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need, "nobody would be asked: the run stops")
	var ce *openaitools.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "refund", ce.Call.Name)
	assert.Len(t, model.Requests(), 1, "the model is not told to wait")
}

// responsesLoop is an agent loop over the Responses API, chaining turns
// with previous_response_id.
func responsesLoop(ctx context.Context, client openai.Client, opts ...openaitools.Option) (string, error) {
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(sampleagent.Question, responses.EasyInputMessageRoleUser)}
	previous := ""
	for range 4 {
		turn := toolset.FromContext(ctx).Turn(ctx) // ctx itself when it carries no run
		tools, err := toolset.BuildTools(turn, "assistant", sampleagent.Tools()...)
		if err != nil {
			return "", err
		}
		params, err := openaitools.ResponseTools(tools, opts...)
		if err != nil {
			return "", err
		}
		req := responses.ResponseNewParams{
			Model: "gpt-test",
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
			Tools: params,
		}
		if previous != "" {
			req.PreviousResponseID = openai.String(previous)
		}
		resp, err := client.Responses.New(ctx, req)
		if err != nil {
			return "", err
		}
		if len(openaitools.ResponseCalls(resp.Output)) == 0 {
			return resp.OutputText(), nil
		}
		if input, err = openaitools.RunResponseCalls(turn, tools, resp.Output, opts...); err != nil {
			return "", err
		}
		previous = resp.ID
	}
	return "", fmt.Errorf("no answer after 4 turns")
}

func TestResponsesLoop(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIResponses, sampleagent.Script()...)
	got, err := responsesLoop(t.Context(), newClient(model))
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, got)

	reqs := model.Requests()
	sampleagent.AssertRun(t, reqs, sampleagent.SentTools(), false)
	tools := `[{"type":"function","name":"get_weather","description":"Get the current weather in a city.","strict":false,"parameters":` + sampleagent.WeatherSchema + `},` +
		`{"type":"function","name":"convert_currency","description":"Convert an amount between currencies.","strict":false,"parameters":` + sampleagent.ConvertSchema + `}]`
	assert.JSONEq(t, `{"model":"gpt-test","input":[{"role":"user","content":`+quote(sampleagent.Question)+`}],"tools":`+tools+`}`, string(reqs[0].Body))
	assert.JSONEq(t, `{"model":"gpt-test","previous_response_id":"resp_1","tools":`+tools+`,"input":[`+
		`{"type":"function_call_output","call_id":"call_weather","output":"Paris: 22°C, sunny"},`+
		`{"type":"function_call_output","call_id":"call_convert","output":`+quote(sampleagent.BadArgsMessage(t))+`}]}`, string(reqs[1].Body))
}

func TestChatTurnWithNoVisibleToolsSendsNoToolsField(t *testing.T) {
	params, err := openaitools.ChatTools(sampleagent.GuestTools(t))
	require.NoError(t, err)
	assert.Nil(t, params)

	// The scripted model refuses what OpenAI refuses with status 400: an
	// empty tools array, and tool_choice or parallel_tool_calls without
	// tools.
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, toolsettest.Answer(sampleagent.Answer))
	client := newClient(model)
	completion, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(sampleagent.Question)}, Tools: params,
	})
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, completion.Choices[0].Message.Content)
	reqs := model.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, `{"model":"gpt-test","messages":[{"role":"user","content":`+quote(sampleagent.Question)+`}]}`, string(reqs[0].Body))
}

func TestResponsesTurnWithNoVisibleToolsSendsNoToolsField(t *testing.T) {
	for _, opts := range [][]openaitools.Option{nil, {openaitools.WithStrict()}} {
		params, err := openaitools.ResponseTools(sampleagent.GuestTools(t), opts...)
		require.NoError(t, err)
		assert.Nil(t, params)

		model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIResponses, toolsettest.Answer(sampleagent.Answer))
		client := newClient(model)
		resp, err := client.Responses.New(t.Context(), responses.ResponseNewParams{
			Model: "gpt-test",
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage(sampleagent.Question, responses.EasyInputMessageRoleUser)}},
			Tools: params,
		})
		require.NoError(t, err)
		assert.Equal(t, sampleagent.Answer, resp.OutputText())
		reqs := model.Requests()
		require.Len(t, reqs, 1)
		assert.JSONEq(t, `{"model":"gpt-test","input":[{"role":"user","content":`+quote(sampleagent.Question)+`}]}`, string(reqs[0].Body))
	}
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
