// Package sampleagent is a small agent, ready to run against a
// [toolsettest.ScriptedModel], for testing an agent loop end to end: the
// loop, the provider's SDK client and the adapter that converts the
// toolset's tools and results.
//
// The agent has two tools ([Tools]: get_weather and convert_currency) and
// one [Question]. Its [Script] has the model call both tools at once, the
// currency conversion with arguments that do not match its schema
// ([BadArgs]), and answer ([Answer]) once it has both results. A loop
// that works sends the tools as [SentTools] lists them on every request,
// tells the model what was wrong with the bad call ([BadArgsMessage])
// rather than stopping, and ends with the answer; [AssertRun] checks the
// requests the model recorded.
//
//	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic, sampleagent.Script()...)
//	// ... run the loop over sampleagent.Tools() with the SDK client
//	// pointed at model.BaseURL() and the user's message sampleagent.Question ...
//	sampleagent.AssertRun(t, model.Requests(), sampleagent.SentTools(), true)
//
// [NeedsApproval] and [GuestTools] build the turns that test a loop's
// approvals and a turn with no tools.
package sampleagent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolsettest"
)

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

// Tools returns the agent's toolsets: get_weather, which answers
// "CITY: 22°C, sunny", and convert_currency.
func Tools() []toolset.Toolset {
	return []toolset.Toolset{
		toolset.NewTool("get_weather", "Get the current weather in a city.",
			func(_ context.Context, in WeatherArgs) (string, error) {
				unit := "C"
				if in.Unit == "fahrenheit" {
					unit = "F"
				}
				return fmt.Sprintf("%s: 22°%s, sunny", in.City, unit), nil
			}),
		toolset.NewTool("convert_currency", "Convert an amount between currencies.",
			func(_ context.Context, in ConvertArgs) (float64, error) { return in.Amount * 1.1, nil }),
	}
}

// The agent's schemas as sent, the conversation, and the bad arguments.
const (
	WeatherSchema = `{"properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"additionalProperties":false,"type":"object","required":["city"]}`
	ConvertSchema = `{"properties":{"amount":{"type":"number","minimum":0},"from":{"type":"string"},"to":{"type":"string"}},"additionalProperties":false,"type":"object","required":["amount","from","to"]}`
	Question      = "What is the weather in Paris, and what is 10 EUR in USD?"
	Answer        = "It is 22°C and sunny in Paris. I could not convert the currency."
	BadArgs       = `{"amount":"ten","from":"EUR"}`
)

// BadArgsMessage is the text the model must be sent for the call with
// BadArgs: what the turn's tools say about those arguments.
func BadArgsMessage(t testing.TB) string {
	t.Helper()
	tools, err := toolset.BuildTools(t.Context(), "assistant", Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tools.Execute(t.Context(), toolset.ToolCall{ID: "call_convert", Name: "convert_currency", Args: json.RawMessage(BadArgs)})
	msg, ok := toolset.ErrorText(err)
	if !ok {
		t.Fatalf("bad arguments must be an error the model sees: %v", err)
	}
	return msg
}

// NeedsApproval is a tool every call of which waits for a human's
// approval; it returns "done" and its argument id.
func NeedsApproval(name string) toolset.Tool {
	return toolset.NewTool(name, "Needs approval.", func(_ context.Context, in struct {
		ID string `json:"id"`
	}) (string, error) {
		return "done " + in.ID, nil
	}, toolset.WithApprovalRequired(toolset.Always))
}

// GuestTools builds the turn of a user who may see none of the agent's
// tools: a filter keeps every one of them for admins only.
func GuestTools(t testing.TB) *toolset.ToolList {
	t.Helper()
	adminOnly := toolset.NewFiltered(toolset.NewCombined(Tools()...),
		func(ctx context.Context, _ toolset.Tool) (bool, error) {
			return toolset.FromContext(ctx).Value("role") == "admin", nil
		})
	run := toolset.NewRun("", toolset.WithValues(map[string]any{"role": "guest"}))
	t.Cleanup(run.End)
	ctx := run.Turn(t.Context())
	tools, err := toolset.BuildTools(ctx, "assistant", adminOnly)
	if err != nil {
		t.Fatal(err)
	}
	if tools.Len() != 0 {
		t.Fatalf("a guest sees %d tools, want none", tools.Len())
	}
	return tools
}

// Script is the model's part: it calls both tools, the currency
// conversion with bad arguments, and answers once it has a result of
// each.
func Script() []toolsettest.Step {
	return []toolsettest.Step{
		toolsettest.CallTools(
			toolset.ToolCall{ID: "call_weather", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
			toolset.ToolCall{ID: "call_convert", Name: "convert_currency", Args: json.RawMessage(BadArgs)}),
		toolsettest.Decide(func(req toolsettest.ModelRequest) (toolsettest.Step, error) {
			if len(req.Results) != 2 {
				return toolsettest.Step{}, fmt.Errorf("want the results of both calls, got %+v", req.Results)
			}
			return toolsettest.Answer(Answer), nil
		}),
	}
}

// SentTools are the agent's tools as the model is sent them.
func SentTools() []toolsettest.SentTool {
	return []toolsettest.SentTool{
		{Name: "get_weather", Description: "Get the current weather in a city.", Parameters: json.RawMessage(WeatherSchema)},
		{Name: "convert_currency", Description: "Convert an amount between currencies.", Parameters: json.RawMessage(ConvertSchema)},
	}
}

// AssertRun checks what the model was sent over a run of [Script]: want
// as the tools each time, then the two results, the bad call's flagged as
// an error where the API can say so (flagged).
func AssertRun(t testing.TB, reqs []toolsettest.ModelRequest, want []toolsettest.SentTool, flagged bool) {
	t.Helper()
	if len(reqs) != 2 {
		t.Fatalf("the model was sent %d requests, want 2", len(reqs))
	}
	for i, req := range reqs {
		if len(req.Tools) != len(want) {
			t.Fatalf("request %d: tools %v, want %d", i+1, req.ToolNames(), len(want))
		}
		for j, got := range req.Tools {
			w := want[j]
			if got.Name != w.Name || got.Description != w.Description || got.Strict != w.Strict || !jsonEqual(got.Parameters, w.Parameters) {
				t.Errorf("request %d: tool %d is\n%+v\nwant\n%+v", i+1, j, got, w)
			}
		}
	}
	wantResults := []toolsettest.ToolResult{
		{CallID: "call_weather", Name: "get_weather", Text: "Paris: 22°C, sunny"},
		{CallID: "call_convert", Name: "convert_currency", Text: BadArgsMessage(t), IsError: flagged},
	}
	if got := reqs[1].Results; !reflect.DeepEqual(got, wantResults) {
		t.Errorf("results sent:\n%+v\nwant\n%+v", got, wantResults)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
