package geminitools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/scripted"
	"github.com/gotoolset/toolset/provider/geminitools"
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
func loop(ctx context.Context, client *genai.Client) (string, error) {
	contents := []*genai.Content{genai.NewContentFromText(scripted.Question, genai.RoleUser)}
	for range 4 {
		tools, err := toolset.BuildTools(ctx, "assistant", scripted.AgentTools()...)
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
		results, err := geminitools.RunCalls(ctx, tools, reply)
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

func candidate(content string) string {
	return `{"candidates":[{"content":` + content + `,"finishReason":"STOP","index":0}],"modelVersion":"gemini-test"}`
}

const functionCalls = `{"role":"model","parts":[` +
	`{"functionCall":{"id":"call_weather","name":"get_weather","args":{"city":"Paris"}}},` +
	`{"functionCall":{"id":"call_convert","name":"convert_currency","args":{"amount":"ten","from":"EUR"}}}]}`

func TestLoop(t *testing.T) {
	model := scripted.New(t, "/v1beta/models/gemini-test:generateContent",
		func([]byte) (string, error) { return candidate(functionCalls), nil },
		func(body []byte) (string, error) {
			var req struct {
				Contents []struct {
					Role  string `json:"role"`
					Parts []struct {
						FunctionResponse *struct {
							ID   string `json:"id"`
							Name string `json:"name"`
						} `json:"functionResponse"`
					} `json:"parts"`
				} `json:"contents"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				return "", err
			}
			last := req.Contents[len(req.Contents)-1]
			if len(last.Parts) != 2 || last.Parts[0].FunctionResponse == nil || last.Parts[1].FunctionResponse == nil ||
				last.Parts[0].FunctionResponse.ID != "call_weather" || last.Parts[1].FunctionResponse.ID != "call_convert" {
				return "", fmt.Errorf("want function responses for call_weather and call_convert, got %+v", last)
			}
			return candidate(`{"role":"model","parts":[{"text":` + scripted.Quote(scripted.Answer) + `}]}`), nil
		},
	)
	client, err := genai.NewClient(t.Context(), &genai.ClientConfig{
		APIKey:      "test-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  model.Client(),
		HTTPOptions: genai.HTTPOptions{BaseURL: model.URL},
	})
	require.NoError(t, err)
	got, err := loop(t.Context(), client)
	require.NoError(t, err)
	assert.Equal(t, scripted.Answer, got)

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	tools := `[{"functionDeclarations":[` +
		`{"name":"get_weather","description":"Get the current weather in a city.","parametersJsonSchema":` + scripted.WeatherSchema + `},` +
		`{"name":"convert_currency","description":"Convert an amount between currencies.","parametersJsonSchema":` + scripted.ConvertSchema + `}]}]`
	user := `{"role":"user","parts":[{"text":` + scripted.Quote(scripted.Question) + `}]}`
	assert.JSONEq(t, `{"contents":[`+user+`],"generationConfig":{},"tools":`+tools+`}`, string(reqs[0]))
	assert.JSONEq(t, `{"tools":`+tools+`,"generationConfig":{},"contents":[`+user+`,`+functionCalls+`,`+
		`{"role":"user","parts":[`+
		`{"functionResponse":{"id":"call_weather","name":"get_weather","response":{"output":"Paris: 22°C, sunny"}}},`+
		`{"functionResponse":{"id":"call_convert","name":"convert_currency","response":{"error":`+scripted.Quote(scripted.BadArgsMessage(t))+`}}}`+
		`]}]}`, string(reqs[1]))
}

func TestTurnWithNoVisibleToolsSendsNoToolsField(t *testing.T) {
	ctx := t.Context()
	decls, err := geminitools.Tools(scripted.GuestTools(t))
	require.NoError(t, err)
	assert.Nil(t, decls, "a tool with no function declarations must not be sent")

	model := scripted.New(t, "/v1beta/models/gemini-test:generateContent", scripted.WithoutKeys(
		candidate(`{"role":"model","parts":[{"text":`+scripted.Quote(scripted.Answer)+`}]}`), "tools", "toolConfig"))
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      "test-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  model.Client(),
		HTTPOptions: genai.HTTPOptions{BaseURL: model.URL},
	})
	require.NoError(t, err)
	user := genai.NewContentFromText(scripted.Question, genai.RoleUser)
	resp, err := client.Models.GenerateContent(ctx, "gemini-test", []*genai.Content{user}, &genai.GenerateContentConfig{Tools: decls})
	require.NoError(t, err)
	assert.Equal(t, scripted.Answer, resp.Text())
	reqs := model.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, `{"contents":[{"role":"user","parts":[{"text":`+scripted.Quote(scripted.Question)+`}]}],"generationConfig":{}}`, string(reqs[0]))
}
