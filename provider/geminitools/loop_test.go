package geminitools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/geminitools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/gotoolset/toolset/toolsettest/sampleagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/genai"
)

func TestMain(m *testing.M) {
	// The SDK's auth dependency imports OpenCensus, whose init starts a
	// worker that lives as long as the process.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// loop is an agent loop as an application writes it.
func loop(ctx context.Context, client *genai.Client, toolsets []toolset.Toolset, opts ...geminitools.Option) (string, error) {
	contents := []*genai.Content{genai.NewContentFromText(sampleagent.Question, genai.RoleUser)}
	for range 4 {
		turn := toolset.FromContext(ctx).Turn(ctx) // ctx itself when it carries no run
		tools, err := toolset.BuildTools(turn, "assistant", toolsets...)
		if err != nil {
			return "", err
		}
		decls, err := geminitools.Tools(tools)
		if err != nil {
			return "", err
		}
		resp, err := client.Models.GenerateContent(ctx, "gemini-test", contents, &genai.GenerateContentConfig{Tools: decls})
		if err != nil {
			return "", err
		}
		reply := resp.Candidates[0].Content
		results, err := geminitools.RunCalls(turn, tools, reply, opts...)
		if err != nil {
			return "", err
		}
		if results == nil {
			return resp.Text(), nil
		}
		contents = append(contents, reply, results)
	}
	return "", fmt.Errorf("no answer after 4 turns")
}

func newClient(t *testing.T, m *toolsettest.ScriptedModel) *genai.Client {
	t.Helper()
	client, err := genai.NewClient(t.Context(), &genai.ClientConfig{
		APIKey:      "test-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  m.Client(),
		HTTPOptions: genai.HTTPOptions{BaseURL: m.BaseURL()},
	})
	require.NoError(t, err)
	return client
}

func TestLoop(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.Gemini, sampleagent.Script()...)
	got, err := loop(t.Context(), newClient(t, model), sampleagent.Tools())
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, got)

	reqs := model.Requests()
	sampleagent.AssertRun(t, reqs, sampleagent.SentTools(), true)
	tools := `[{"functionDeclarations":[` +
		`{"name":"get_weather","description":"Get the current weather in a city.","parametersJsonSchema":` + sampleagent.WeatherSchema + `},` +
		`{"name":"convert_currency","description":"Convert an amount between currencies.","parametersJsonSchema":` + sampleagent.ConvertSchema + `}]}]`
	user := `{"role":"user","parts":[{"text":` + quote(sampleagent.Question) + `}]}`
	assert.JSONEq(t, `{"contents":[`+user+`],"generationConfig":{},"tools":`+tools+`}`, string(reqs[0].Body))
	assert.JSONEq(t, `{"tools":`+tools+`,"generationConfig":{},"contents":[`+user+`,`+
		`{"role":"model","parts":[`+
		`{"functionCall":{"id":"call_weather","name":"get_weather","args":{"city":"Paris"}}},`+
		`{"functionCall":{"id":"call_convert","name":"convert_currency","args":`+sampleagent.BadArgs+`}}]},`+
		`{"role":"user","parts":[`+
		`{"functionResponse":{"id":"call_weather","name":"get_weather","response":{"output":"Paris: 22°C, sunny"}}},`+
		`{"functionResponse":{"id":"call_convert","name":"convert_currency","response":{"error":`+quote(sampleagent.BadArgsMessage(t))+`}}}`+
		`]}]}`, string(reqs[1].Body))
}

func TestLoopApprovals(t *testing.T) {
	deploy := sampleagent.NeedsApproval("deploy")
	approver := func(context.Context, toolset.ToolCall) (bool, string, error) { return false, "not on a Friday", nil }
	ctx := toolset.NewContext(t.Context(), toolsettest.NewRun(t))

	model := toolsettest.NewScriptedModel(t, toolsettest.Gemini,
		toolsettest.CallTools(toolset.ToolCall{ID: "call_deploy", Name: "deploy", Args: json.RawMessage(`{"id":"web"}`)}),
		toolsettest.Answer("Not deployed."))
	got, err := loop(ctx, newClient(t, model), []toolset.Toolset{deploy}, geminitools.WithApprover(approver))
	require.NoError(t, err)
	assert.Equal(t, "Not deployed.", got)
	assert.Equal(t, []toolsettest.ToolResult{{CallID: "call_deploy", Name: "deploy", IsError: true,
		Text: `the call of tool "deploy" was denied by a human: not on a Friday`}}, model.Requests()[1].Results)

	// A call without an ID, as the Gemini API may send, cannot be
	// approved, even with an approver: it stops the run.
	model = toolsettest.NewScriptedModel(t, toolsettest.Gemini,
		toolsettest.CallTools(toolset.ToolCall{Name: "deploy", Args: json.RawMessage(`{"id":"web"}`)}))
	_, err = loop(ctx, newClient(t, model), []toolset.Toolset{deploy}, geminitools.WithApprover(approver))
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need)
	assert.Empty(t, need.Call.ID)
}

func TestTurnWithNoVisibleToolsSendsNoToolsField(t *testing.T) {
	ctx := t.Context()
	decls, err := geminitools.Tools(sampleagent.GuestTools(t))
	require.NoError(t, err)
	assert.Nil(t, decls, "a tool with no function declarations must not be sent")

	model := toolsettest.NewScriptedModel(t, toolsettest.Gemini, toolsettest.Answer(sampleagent.Answer))
	user := genai.NewContentFromText(sampleagent.Question, genai.RoleUser)
	resp, err := newClient(t, model).Models.GenerateContent(ctx, "gemini-test", []*genai.Content{user}, &genai.GenerateContentConfig{Tools: decls})
	require.NoError(t, err)
	assert.Equal(t, sampleagent.Answer, resp.Text())
	reqs := model.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, `{"contents":[{"role":"user","parts":[{"text":`+quote(sampleagent.Question)+`}]}],"generationConfig":{}}`, string(reqs[0].Body))
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
