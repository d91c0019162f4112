package anthropictools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/scripted"
	"github.com/gotoolset/toolset/provider/anthropictools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// WeatherArgs are the arguments of get_weather.
type WeatherArgs struct {
	City string `json:"city" jsonschema:"City name"`
	Unit string `json:"unit,omitempty" jsonschema:"enum=celsius,enum=fahrenheit"`
}

// ConvertArgs are the arguments of convert_currency.
type ConvertArgs struct {
	Amount float64 `json:"amount" jsonschema:"minimum=0"`
	From   string  `json:"from"`
	To     string  `json:"to"`
}

func agentTools() []toolset.Toolset {
	return []toolset.Toolset{
		toolset.NewTool("get_weather", "Get the current weather in a city.",
			func(_ context.Context, in WeatherArgs) (string, error) { return in.City + ": 22°C, sunny", nil }),
		toolset.NewTool("convert_currency", "Convert an amount between currencies.",
			func(_ context.Context, in ConvertArgs) (float64, error) { return in.Amount * 1.1, nil }),
	}
}

const (
	weatherSchema = `{"properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"additionalProperties":false,"type":"object","required":["city"]}`
	convertSchema = `{"properties":{"amount":{"type":"number","minimum":0},"from":{"type":"string"},"to":{"type":"string"}},"additionalProperties":false,"type":"object","required":["amount","from","to"]}`
	question      = "What is the weather in Paris, and what is 10 EUR in USD?"
	answer        = "It is 22°C and sunny in Paris. I could not convert the currency."
	badArgs       = `{"amount":"ten","from":"EUR"}`
)

func badArgsMessage(t *testing.T) string {
	t.Helper()
	tools, err := toolset.BuildTools(t.Context(), "assistant", agentTools()...)
	require.NoError(t, err)
	_, err = tools.Call(t.Context(), "convert_currency", json.RawMessage(badArgs))
	msg, ok := toolset.ModelMessage(err)
	require.True(t, ok, "bad arguments must be an error the model sees: %v", err)
	require.Contains(t, msg, `"amount"`)
	return msg
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// loop is an agent loop as an application writes it.
func loop(ctx context.Context, client anthropic.Client) (string, error) {
	messages := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(question))}
	for range 4 {
		tools, err := toolset.BuildTools(ctx, "assistant", agentTools()...)
		if err != nil {
			return "", err
		}
		params, err := anthropictools.Tools(tools)
		if err != nil {
			return "", err
		}
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model: "claude-test", MaxTokens: 1024, Messages: messages, Tools: params,
		})
		if err != nil {
			return "", err
		}
		if len(anthropictools.Calls(msg.Content)) == 0 {
			return msg.Content[0].Text, nil
		}
		messages = append(messages, msg.ToParam())
		results, err := anthropictools.RunCalls(ctx, tools, msg.Content)
		if err != nil {
			return "", err
		}
		messages = append(messages, anthropic.NewUserMessage(results...))
	}
	return "", fmt.Errorf("no answer after 4 turns")
}

func message(stop, content string) string {
	return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"` + stop +
		`","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":10},"content":` + content + `}`
}

const toolUses = `[{"type":"text","text":"Let me look."},` +
	`{"type":"tool_use","id":"toolu_weather","name":"get_weather","input":{"city":"Paris"}},` +
	`{"type":"tool_use","id":"toolu_convert","name":"convert_currency","input":{"amount":"ten","from":"EUR"}}]`

func TestLoop(t *testing.T) {
	model := scripted.New(t, "/v1/messages",
		func([]byte) (string, error) { return message("tool_use", toolUses), nil },
		func(body []byte) (string, error) {
			var req struct {
				Messages []struct {
					Role    string `json:"role"`
					Content []struct {
						Type      string `json:"type"`
						ToolUseID string `json:"tool_use_id"`
					} `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				return "", err
			}
			last := req.Messages[len(req.Messages)-1]
			if last.Role != "user" || len(last.Content) != 2 ||
				last.Content[0].ToolUseID != "toolu_weather" || last.Content[1].ToolUseID != "toolu_convert" {
				return "", fmt.Errorf("want tool results for toolu_weather and toolu_convert, got %+v", last)
			}
			return message("end_turn", `[{"type":"text","text":`+quote(answer)+`}]`), nil
		},
	)
	client := anthropic.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("test-key"),
		option.WithHTTPClient(model.Client()), option.WithMaxRetries(0))
	got, err := loop(t.Context(), client)
	require.NoError(t, err)
	assert.Equal(t, answer, got)

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	tools := `[{"name":"get_weather","description":"Get the current weather in a city.","input_schema":` + weatherSchema + `},` +
		`{"name":"convert_currency","description":"Convert an amount between currencies.","input_schema":` + convertSchema + `}]`
	user := `{"role":"user","content":[{"type":"text","text":` + quote(question) + `}]}`
	assert.JSONEq(t, `{"model":"claude-test","max_tokens":1024,"messages":[`+user+`],"tools":`+tools+`}`, string(reqs[0]))
	assert.JSONEq(t, `{"model":"claude-test","max_tokens":1024,"tools":`+tools+`,"messages":[`+user+`,`+
		`{"role":"assistant","content":`+toolUses+`},`+
		`{"role":"user","content":[`+
		`{"type":"tool_result","tool_use_id":"toolu_weather","content":[{"type":"text","text":"Paris: 22°C, sunny"}]},`+
		`{"type":"tool_result","tool_use_id":"toolu_convert","is_error":true,"content":[{"type":"text","text":`+quote(badArgsMessage(t))+`}]}`+
		`]}]}`, string(reqs[1]))
}
