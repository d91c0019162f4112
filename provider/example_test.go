package provider_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
)

// wireTool and wireResult are a made-up provider's wire types.
type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type wireResult struct {
	CallID  string `json:"call_id"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
}

// Option is the made-up adapter's option type.
type Option func(*provider.Options)

// WithMaxConcurrency bounds how many calls of a turn run at once.
func WithMaxConcurrency(n int) Option { return Option(provider.WithMaxConcurrency(n)) }

// tools converts a turn's tools to the provider's form.
func tools(list *toolset.ToolList) ([]wireTool, error) {
	return provider.ConvertTools(list, func(t toolset.Tool) (wireTool, error) {
		params, err := t.ParametersJSON()
		if err != nil {
			return wireTool{}, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		return wireTool{Name: t.Name, Description: t.Description, Parameters: params}, nil
	})
}

// runCalls runs the model's calls and converts their outcomes.
func runCalls(ctx context.Context, list *toolset.ToolList, calls []toolset.ToolCall, opts ...Option) ([]wireResult, error) {
	o := provider.Apply(opts)
	return provider.RunCalls(ctx, "madeup", list, calls, o, list.Execute, func(oc provider.Outcome) (wireResult, error) {
		if oc.IsError {
			return wireResult{CallID: oc.Call.ID, Output: oc.Message, IsError: true}, nil
		}
		// This provider takes text only: media is described in words.
		segs, err := provider.Segments(oc.Result, func(toolset.Part) bool { return false })
		if err != nil {
			return wireResult{}, err
		}
		return wireResult{CallID: oc.Call.ID, Output: provider.JoinText(segs)}, nil
	})
}

// An adapter for a provider of one's own: the turn's tools in the
// provider's form, and the results of the model's calls, one that worked
// and one with arguments the model must be told are wrong.
func Example() {
	type args struct {
		City string `json:"city"`
	}
	weather := toolset.NewTool("get_weather", "Get the weather in a city.",
		func(_ context.Context, in args) (string, error) { return in.City + ": sunny", nil })

	ctx := context.Background()
	list, err := toolset.BuildTools(ctx, "assistant", weather)
	if err != nil {
		panic(err)
	}
	sent, err := tools(list)
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(sent)
	fmt.Println(string(b))

	results, err := runCalls(ctx, list, []toolset.ToolCall{
		{ID: "1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
		{ID: "2", Name: "get_weather", Args: json.RawMessage(`{"town":"Paris"}`)},
	}, WithMaxConcurrency(2))
	if err != nil {
		panic(err)
	}
	for _, r := range results {
		fmt.Printf("%s error=%v: %s\n", r.CallID, r.IsError, r.Output)
	}
	// Output:
	// [{"name":"get_weather","description":"Get the weather in a city.","parameters":{"properties":{"city":{"type":"string"}},"additionalProperties":false,"type":"object","required":["city"]}}]
	// 1 error=false: Paris: sunny
	// 2 error=true: invalid arguments for tool "get_weather":
	// - "city": required field is missing; expected string
	// - "town": unknown field; allowed fields: "city"
	// Fix the arguments and call the tool again.
}
