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

// loop is an agent loop as an application writes it.
func loop(ctx context.Context, client anthropic.Client) (string, error) {
	messages := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(scripted.Question))}
	for range 4 {
		tools, err := toolset.BuildTools(ctx, "assistant", scripted.AgentTools()...)
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
			return message("end_turn", `[{"type":"text","text":`+scripted.Quote(scripted.Answer)+`}]`), nil
		},
	)
	client := anthropic.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("test-key"),
		option.WithHTTPClient(model.Client()), option.WithMaxRetries(0))
	got, err := loop(t.Context(), client)
	require.NoError(t, err)
	assert.Equal(t, scripted.Answer, got)

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	tools := `[{"name":"get_weather","description":"Get the current weather in a city.","input_schema":` + scripted.WeatherSchema + `},` +
		`{"name":"convert_currency","description":"Convert an amount between currencies.","input_schema":` + scripted.ConvertSchema + `}]`
	user := `{"role":"user","content":[{"type":"text","text":` + scripted.Quote(scripted.Question) + `}]}`
	assert.JSONEq(t, `{"model":"claude-test","max_tokens":1024,"messages":[`+user+`],"tools":`+tools+`}`, string(reqs[0]))
	assert.JSONEq(t, `{"model":"claude-test","max_tokens":1024,"tools":`+tools+`,"messages":[`+user+`,`+
		`{"role":"assistant","content":`+toolUses+`},`+
		`{"role":"user","content":[`+
		`{"type":"tool_result","tool_use_id":"toolu_weather","content":[{"type":"text","text":"Paris: 22°C, sunny"}]},`+
		`{"type":"tool_result","tool_use_id":"toolu_convert","is_error":true,"content":[{"type":"text","text":`+scripted.Quote(scripted.BadArgsMessage(t))+`}]}`+
		`]}]}`, string(reqs[1]))
}

func TestTurnWithNoVisibleToolsSendsNoToolsField(t *testing.T) {
	ctx := t.Context()
	params, err := anthropictools.Tools(scripted.GuestTools(t))
	require.NoError(t, err)
	assert.Nil(t, params)

	model := scripted.New(t, "/v1/messages", scripted.WithoutKeys(
		message("end_turn", `[{"type":"text","text":`+scripted.Quote(scripted.Answer)+`}]`), "tools", "tool_choice"))
	client := anthropic.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("test-key"),
		option.WithHTTPClient(model.Client()), option.WithMaxRetries(0))
	user := anthropic.NewUserMessage(anthropic.NewTextBlock(scripted.Question))
	msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 1024, Messages: []anthropic.MessageParam{user}, Tools: params,
	})
	require.NoError(t, err)
	assert.Equal(t, scripted.Answer, msg.Content[0].Text)
	reqs := model.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, `{"model":"claude-test","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":`+
		scripted.Quote(scripted.Question)+`}]}]}`, string(reqs[0]))
}
