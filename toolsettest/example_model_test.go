package toolsettest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolsettest"
)

// A scripted model of the Chat Completions API: it calls a tool, then
// answers from the tool's result. An agent loop talks to it through the
// provider's SDK and adapter (openai.NewClient with
// option.WithBaseURL(model.BaseURL()) and option.WithHTTPClient(model.Client()));
// here the wire JSON is written by hand, to show what the model is sent.
func ExampleStartScriptedModel() {
	model, err := toolsettest.StartScriptedModel(toolsettest.OpenAIChat,
		toolsettest.CallTools(toolset.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}),
		toolsettest.Decide(func(req toolsettest.ModelRequest) (toolsettest.Step, error) {
			if len(req.Results) != 1 {
				return toolsettest.Step{}, fmt.Errorf("want the weather, got %d results", len(req.Results))
			}
			return toolsettest.Answer("In Paris: " + req.Results[0].Text), nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()

	complete := func(request string) (reply struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}) {
		resp, err := model.Client().Post(model.BaseURL()+"chat/completions", "application/json", bytes.NewBufferString(request))
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
			log.Fatal(err)
		}
		return reply
	}
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	user := `{"role":"user","content":"Weather in Paris?"}`
	calls := complete(`{"model":"m","tools":` + tools + `,"messages":[` + user + `]}`).Choices[0].Message
	fmt.Println(string(calls))
	answer := complete(`{"model":"m","tools":` + tools + `,"messages":[` + user + `,` + string(calls) + `,` +
		`{"role":"tool","tool_call_id":"call_1","content":"22°C, sunny"}]}`).Choices[0].Message
	fmt.Println(string(answer))

	for i, req := range model.Requests() {
		fmt.Printf("request %d: tools %v, results %+v\n", i+1, req.ToolNames(), req.Results)
	}
	fmt.Println("off script:", model.Err())
	// Output:
	// {"content":null,"refusal":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\"}","name":"get_weather"},"id":"call_1","type":"function"}]}
	// {"content":"In Paris: 22°C, sunny","refusal":null,"role":"assistant"}
	// request 1: tools [get_weather], results []
	// request 2: tools [get_weather], results [{CallID:call_1 Name:get_weather Text:22°C, sunny IsError:false Media:0}]
	// off script: <nil>
}
