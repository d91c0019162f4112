package openaitools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/openai/openai-go/v3"
)

// SearchArgs are the arguments of a search tool.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"What to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=20"`
}

func searchTool() toolset.Tool {
	return toolset.NewTool("search", "Search the docs.", func(_ context.Context, in SearchArgs) ([]string, error) {
		return []string{"Result for " + in.Query}, nil
	})
}

// The turn's tools as Chat Completions tool params, in strict mode: the
// optional limit becomes a required, nullable property.
func ExampleChatTools() {
	tools, err := toolset.BuildTools(context.Background(), "assistant", searchTool())
	if err != nil {
		log.Fatal(err)
	}
	params, err := openaitools.ChatTools(tools, openaitools.WithStrict())
	if err != nil {
		log.Fatal(err)
	}
	b, _ := json.MarshalIndent(params[0], "", "  ")
	fmt.Println(string(b))
	// Output:
	// {
	//   "function": {
	//     "name": "search",
	//     "strict": true,
	//     "description": "Search the docs.",
	//     "parameters": {
	//       "additionalProperties": false,
	//       "properties": {
	//         "query": {
	//           "type": "string",
	//           "description": "What to look for"
	//         },
	//         "limit": {
	//           "type": [
	//             "integer",
	//             "null"
	//           ],
	//           "maximum": 20,
	//           "minimum": 1
	//         }
	//       },
	//       "required": [
	//         "query",
	//         "limit"
	//       ],
	//       "type": "object"
	//     }
	//   },
	//   "type": "function"
	// }
}

// Running a model's tool calls: the results come back as tool messages in
// call order, and the bad call's error is text the model can act on. The
// null limit a strict model sends is dropped before the call.
func ExampleRunChatCalls() {
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "assistant", searchTool())
	if err != nil {
		log.Fatal(err)
	}
	var msg openai.ChatCompletionMessage // as the model returned it
	_ = json.Unmarshal([]byte(`{"role":"assistant","tool_calls":[
		{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"query\":\"timeouts\",\"limit\":null}"}},
		{"id":"call_2","type":"function","function":{"name":"search","arguments":"{\"limit\":50}"}}]}`), &msg)

	results, err := openaitools.RunChatCalls(ctx, tools, msg.ToolCalls)
	if err != nil {
		log.Fatal(err) // an error that should stop the run
	}
	for _, r := range results {
		text, _, _ := strings.Cut(r.OfTool.Content.OfString.Value, "\n")
		fmt.Printf("%s: %s\n", r.OfTool.ToolCallID, text)
	}
	// Output:
	// call_1: ["Result for timeouts"]
	// call_2: invalid arguments for tool "search":
}
