package openaitools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/scripted"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chatLoop is an agent loop as an application writes it.
func chatLoop(ctx context.Context, client openai.Client, opts ...openaitools.Option) (string, error) {
	messages := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(scripted.Question)}
	for range 4 {
		tools, err := toolset.BuildTools(ctx, "assistant", scripted.AgentTools()...)
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
		results, err := openaitools.RunChatCalls(ctx, tools, msg.ToolCalls, opts...)
		if err != nil {
			return "", err
		}
		messages = append(messages, results...)
	}
	return "", fmt.Errorf("no answer after 4 turns")
}

func chatCompletion(message string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"finish_reason":"stop","message":` + message + `}]}`
}

const toolCallsMessage = `{"role":"assistant","content":null,"tool_calls":[` +
	`{"id":"call_weather","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},` +
	`{"id":"call_convert","type":"function","function":{"name":"convert_currency","arguments":"{\"amount\":\"ten\",\"from\":\"EUR\"}"}}]}`

// sentToolCalls is the assistant message of toolCallsMessage as the SDK
// sends it back (ToParam leaves out the null content).
const sentToolCalls = `{"role":"assistant","tool_calls":[` +
	`{"id":"call_weather","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},` +
	`{"id":"call_convert","type":"function","function":{"name":"convert_currency","arguments":"{\"amount\":\"ten\",\"from\":\"EUR\"}"}}]}`

// toolMessages returns the tool messages of a Chat Completions request by
// call ID.
func toolMessages(body []byte) (map[string]string, error) {
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Content
		}
	}
	return out, nil
}

// answerWhenBothResults is the model's second step: it answers only when
// both calls have a result.
func answerWhenBothResults(body []byte) (string, error) {
	results, err := toolMessages(body)
	if err != nil {
		return "", err
	}
	if len(results) != 2 || results["call_weather"] == "" || results["call_convert"] == "" {
		return "", fmt.Errorf("want a tool message for call_weather and call_convert, got %v", results)
	}
	return chatCompletion(`{"role":"assistant","content":` + scripted.Quote(scripted.Answer) + `}`), nil
}

func newClient(m *scripted.Model) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(m.URL+"/v1/"),
		option.WithAPIKey("test-key"),
		option.WithHTTPClient(m.Client()),
		option.WithMaxRetries(0),
	)
}

func TestChatLoop(t *testing.T) {
	model := scripted.New(t, "/v1/chat/completions",
		func([]byte) (string, error) { return chatCompletion(toolCallsMessage), nil },
		answerWhenBothResults,
	)
	got, err := chatLoop(t.Context(), newClient(model))
	require.NoError(t, err)
	assert.Equal(t, scripted.Answer, got)

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	tools := `[{"type":"function","function":{"name":"get_weather","description":"Get the current weather in a city.","parameters":` + scripted.WeatherSchema + `}},` +
		`{"type":"function","function":{"name":"convert_currency","description":"Convert an amount between currencies.","parameters":` + scripted.ConvertSchema + `}}]`
	assert.JSONEq(t, `{"model":"gpt-test","messages":[{"role":"user","content":`+scripted.Quote(scripted.Question)+`}],"tools":`+tools+`}`, string(reqs[0]))
	assert.JSONEq(t, `{"model":"gpt-test","tools":`+tools+`,"messages":[`+
		`{"role":"user","content":`+scripted.Quote(scripted.Question)+`},`+
		sentToolCalls+`,`+
		`{"role":"tool","tool_call_id":"call_weather","content":"Paris: 22°C, sunny"},`+
		`{"role":"tool","tool_call_id":"call_convert","content":`+scripted.Quote(scripted.BadArgsMessage(t))+`}]}`, string(reqs[1]))
}

func TestChatLoopStrict(t *testing.T) {
	// In strict mode the model sends null for the optional unit.
	calls := `{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"call_weather","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":null}"}},` +
		`{"id":"call_convert","type":"function","function":{"name":"convert_currency","arguments":"{\"amount\":\"ten\",\"from\":\"EUR\"}"}}]}`
	model := scripted.New(t, "/v1/chat/completions",
		func([]byte) (string, error) { return chatCompletion(calls), nil },
		answerWhenBothResults,
	)
	got, err := chatLoop(t.Context(), newClient(model), openaitools.WithStrict())
	require.NoError(t, err)
	assert.Equal(t, scripted.Answer, got)

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	strictWeather := `{"properties":{"city":{"type":"string","description":"City name"},"unit":{"type":["string","null"],"enum":["celsius","fahrenheit",null]}},"additionalProperties":false,"type":"object","required":["city","unit"]}`
	strictConvert := `{"properties":{"amount":{"type":"number","minimum":0},"from":{"type":"string"},"to":{"type":"string"}},"additionalProperties":false,"type":"object","required":["amount","from","to"]}`
	tools := `[{"type":"function","function":{"name":"get_weather","description":"Get the current weather in a city.","strict":true,"parameters":` + strictWeather + `}},` +
		`{"type":"function","function":{"name":"convert_currency","description":"Convert an amount between currencies.","strict":true,"parameters":` + strictConvert + `}}]`
	assert.JSONEq(t, `{"model":"gpt-test","messages":[{"role":"user","content":`+scripted.Quote(scripted.Question)+`}],"tools":`+tools+`}`, string(reqs[0]))
	results, err := toolMessages(reqs[1])
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"call_weather": "Paris: 22°C, sunny", "call_convert": scripted.BadArgsMessage(t)}, results,
		"the null unit is dropped before the call, so get_weather succeeds")
}

// responsesLoop is an agent loop over the Responses API, chaining turns
// with previous_response_id.
func responsesLoop(ctx context.Context, client openai.Client, opts ...openaitools.Option) (string, error) {
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(scripted.Question, responses.EasyInputMessageRoleUser)}
	previous := ""
	for range 4 {
		tools, err := toolset.BuildTools(ctx, "assistant", scripted.AgentTools()...)
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
		if input, err = openaitools.RunResponseCalls(ctx, tools, resp.Output, opts...); err != nil {
			return "", err
		}
		previous = resp.ID
	}
	return "", fmt.Errorf("no answer after 4 turns")
}

func response(id, output string) string {
	return `{"id":"` + id + `","object":"response","created_at":1,"status":"completed","model":"gpt-test","output":` + output + `}`
}

func TestResponsesLoop(t *testing.T) {
	calls := `[{"type":"function_call","id":"fc_1","call_id":"call_weather","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed"},` +
		`{"type":"function_call","id":"fc_2","call_id":"call_convert","name":"convert_currency","arguments":"{\"amount\":\"ten\",\"from\":\"EUR\"}","status":"completed"}]`
	model := scripted.New(t, "/v1/responses",
		func([]byte) (string, error) { return response("resp_1", calls), nil },
		func(body []byte) (string, error) {
			var req struct {
				Previous string `json:"previous_response_id"`
				Input    []struct {
					Type   string `json:"type"`
					CallID string `json:"call_id"`
				} `json:"input"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				return "", err
			}
			if req.Previous != "resp_1" || len(req.Input) != 2 || req.Input[0].CallID != "call_weather" || req.Input[1].CallID != "call_convert" {
				return "", fmt.Errorf("want the outputs of call_weather and call_convert after resp_1, got %+v", req)
			}
			return response("resp_2", `[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":`+scripted.Quote(scripted.Answer)+`,"annotations":[]}]}]`), nil
		},
	)
	client := openai.NewClient(option.WithBaseURL(model.URL+"/v1/"), option.WithAPIKey("test-key"),
		option.WithHTTPClient(model.Client()), option.WithMaxRetries(0))
	got, err := responsesLoop(t.Context(), client)
	require.NoError(t, err)
	assert.Equal(t, scripted.Answer, got)

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	tools := `[{"type":"function","name":"get_weather","description":"Get the current weather in a city.","strict":false,"parameters":` + scripted.WeatherSchema + `},` +
		`{"type":"function","name":"convert_currency","description":"Convert an amount between currencies.","strict":false,"parameters":` + scripted.ConvertSchema + `}]`
	assert.JSONEq(t, `{"model":"gpt-test","input":[{"role":"user","content":`+scripted.Quote(scripted.Question)+`}],"tools":`+tools+`}`, string(reqs[0]))
	assert.JSONEq(t, `{"model":"gpt-test","previous_response_id":"resp_1","tools":`+tools+`,"input":[`+
		`{"type":"function_call_output","call_id":"call_weather","output":"Paris: 22°C, sunny"},`+
		`{"type":"function_call_output","call_id":"call_convert","output":`+scripted.Quote(scripted.BadArgsMessage(t))+`}]}`, string(reqs[1]))
}

// noToolsKey is a step that fails if the request has a "tools" key, or
// the keys OpenAI accepts only with tools (it answers 400), then answers
// with reply.
func noToolsKey(reply string) scripted.Step {
	return scripted.WithoutKeys(reply, "tools", "tool_choice", "parallel_tool_calls")
}

func TestChatTurnWithNoVisibleToolsSendsNoToolsField(t *testing.T) {
	params, err := openaitools.ChatTools(scripted.GuestTools(t))
	require.NoError(t, err)
	assert.Nil(t, params)

	model := scripted.New(t, "/v1/chat/completions",
		noToolsKey(chatCompletion(`{"role":"assistant","content":`+scripted.Quote(scripted.Answer)+`}`)))
	client := newClient(model)
	completion, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(scripted.Question)}, Tools: params,
	})
	require.NoError(t, err)
	assert.Equal(t, scripted.Answer, completion.Choices[0].Message.Content)
	reqs := model.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, `{"model":"gpt-test","messages":[{"role":"user","content":`+scripted.Quote(scripted.Question)+`}]}`, string(reqs[0]))
}

func TestResponsesTurnWithNoVisibleToolsSendsNoToolsField(t *testing.T) {
	for _, opts := range [][]openaitools.Option{nil, {openaitools.WithStrict()}} {
		params, err := openaitools.ResponseTools(scripted.GuestTools(t), opts...)
		require.NoError(t, err)
		assert.Nil(t, params)

		model := scripted.New(t, "/v1/responses",
			noToolsKey(response("resp_1", `[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":`+scripted.Quote(scripted.Answer)+`,"annotations":[]}]}]`)))
		client := newClient(model)
		resp, err := client.Responses.New(t.Context(), responses.ResponseNewParams{
			Model: "gpt-test",
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage(scripted.Question, responses.EasyInputMessageRoleUser)}},
			Tools: params,
		})
		require.NoError(t, err)
		assert.Equal(t, scripted.Answer, resp.OutputText())
		reqs := model.Requests()
		require.Len(t, reqs, 1)
		assert.JSONEq(t, `{"model":"gpt-test","input":[{"role":"user","content":`+scripted.Quote(scripted.Question)+`}]}`, string(reqs[0]))
	}
}
