package anthropictools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/anthropictools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/gotoolset/toolset/toolsettest/sampleagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// loop is an agent loop as an application writes it.
func loop(ctx context.Context, client anthropic.Client, toolsets []toolset.Toolset, opts ...anthropictools.Option) (string, error) {
	messages := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(sampleagent.Question))}
	for range 4 {
		turn := toolset.FromContext(ctx).Turn(ctx) // ctx itself when it carries no run
		tools, err := toolset.BuildTools(turn, "assistant", toolsets...)
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
		results, err := anthropictools.RunCalls(turn, tools, msg.Content, opts...)
		if err != nil {
			return "", err
		}
		messages = append(messages, anthropic.NewUserMessage(results...))
	}
	return "", fmt.Errorf("no answer after 4 turns")
}

func newClient(m *toolsettest.ScriptedModel) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(m.BaseURL()), option.WithAPIKey("test-key"),
		option.WithHTTPClient(m.Client()), option.WithMaxRetries(0))
}

func TestLoop(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic, sampleagent.Script()...)
	got, err := loop(t.Context(), newClient(model), sampleagent.Tools())
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, got)

	reqs := model.Requests()
	sampleagent.AssertRun(t, reqs, sampleagent.SentTools(), true)
	tools := `[{"name":"get_weather","description":"Get the current weather in a city.","input_schema":` + sampleagent.WeatherSchema + `},` +
		`{"name":"convert_currency","description":"Convert an amount between currencies.","input_schema":` + sampleagent.ConvertSchema + `}]`
	user := `{"role":"user","content":[{"type":"text","text":` + quote(sampleagent.Question) + `}]}`
	assert.JSONEq(t, `{"model":"claude-test","max_tokens":1024,"messages":[`+user+`],"tools":`+tools+`}`, string(reqs[0].Body))
	assert.JSONEq(t, `{"model":"claude-test","max_tokens":1024,"tools":`+tools+`,"messages":[`+user+`,`+
		`{"role":"assistant","content":[`+
		`{"type":"tool_use","id":"call_weather","name":"get_weather","input":{"city":"Paris"}},`+
		`{"type":"tool_use","id":"call_convert","name":"convert_currency","input":`+sampleagent.BadArgs+`}]},`+
		`{"role":"user","content":[`+
		`{"type":"tool_result","tool_use_id":"call_weather","content":[{"type":"text","text":"Paris: 22°C, sunny"}]},`+
		`{"type":"tool_result","tool_use_id":"call_convert","is_error":true,"content":[{"type":"text","text":`+quote(sampleagent.BadArgsMessage(t))+`}]}`+
		`]}]}`, string(reqs[1].Body))
}

func TestLoopAsksTheApprover(t *testing.T) {
	pay := sampleagent.NeedsApproval("pay")
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(toolset.ToolCall{Name: "pay", Args: json.RawMessage(`{"id":"INV-1"}`)}),
		toolsettest.Answer("Paid."))
	approver := func(_ context.Context, call toolset.ToolCall) (bool, string, error) {
		return call.ID == "call_1", "", nil
	}
	ctx := toolset.NewContext(t.Context(), toolsettest.NewRun(t))
	got, err := loop(ctx, newClient(model), []toolset.Toolset{pay}, anthropictools.WithApprover(approver))
	require.NoError(t, err)
	assert.Equal(t, "Paid.", got)
	assert.Equal(t, []toolsettest.ToolResult{{CallID: "call_1", Name: "pay", Text: "done INV-1"}}, model.Requests()[1].Results)

	// Without an approver, the call stops the run.
	model = toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(toolset.ToolCall{Name: "pay", Args: json.RawMessage(`{"id":"INV-2"}`)}))
	_, err = loop(ctx, newClient(model), []toolset.Toolset{pay})
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need)
	assert.Equal(t, `{"id":"INV-2"}`, string(need.Call.Args))
}

func TestTurnWithNoVisibleToolsSendsNoToolsField(t *testing.T) {
	ctx := t.Context()
	params, err := anthropictools.Tools(sampleagent.GuestTools(t))
	require.NoError(t, err)
	assert.Nil(t, params)

	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic, toolsettest.Answer(sampleagent.Answer))
	client := newClient(model)
	user := anthropic.NewUserMessage(anthropic.NewTextBlock(sampleagent.Question))
	msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 1024, Messages: []anthropic.MessageParam{user}, Tools: params,
	})
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, msg.Content[0].Text)
	reqs := model.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, `{"model":"claude-test","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":`+
		quote(sampleagent.Question)+`}]}]}`, string(reqs[0].Body))
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
