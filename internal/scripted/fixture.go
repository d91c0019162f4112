package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
)

// The agent every provider's loop test runs: two tools, one question, and a
// call with bad arguments the model must be told about.

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

// AgentTools returns the agent's toolsets.
func AgentTools() []toolset.Toolset {
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
func BadArgsMessage(t *testing.T) string {
	t.Helper()
	tools, err := toolset.BuildTools(t.Context(), "assistant", AgentTools()...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tools.Execute(t.Context(), toolset.ToolCall{Name: "convert_currency", Args: json.RawMessage(BadArgs)})
	msg, ok := toolset.ErrorText(err)
	if !ok {
		t.Fatalf("bad arguments must be an error the model sees: %v", err)
	}
	return msg
}

// Quote returns s as a JSON string.
func Quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// GuestTools builds the turn of a user who may see none of the agent's
// tools: a filter keeps every one of them for admins only.
func GuestTools(t *testing.T) *toolset.ToolList {
	t.Helper()
	adminOnly := toolset.NewFiltered(toolset.NewCombined(AgentTools()...),
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

// WithoutKeys is a step that fails unless the request body has none of
// keys at its top level (the fields an API accepts only with tools), then
// answers with reply.
func WithoutKeys(reply string, keys ...string) Step {
	return func(body []byte) (string, error) {
		var req map[string]json.RawMessage
		if err := json.Unmarshal(body, &req); err != nil {
			return "", err
		}
		for _, k := range keys {
			if v, ok := req[k]; ok {
				return "", fmt.Errorf("a turn with no tools must not send %q, got %s", k, v)
			}
		}
		return reply, nil
	}
}
