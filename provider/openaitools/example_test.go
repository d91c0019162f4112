package openaitools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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

// An agent loop run against toolsettest's scripted model of the Chat
// Completions API, with the SDK's real client: the way to test a loop
// without an API key or the network.
func Example_scriptedModel() {
	model, err := toolsettest.StartScriptedModel(toolsettest.OpenAIChat,
		toolsettest.CallTools(toolset.ToolCall{Name: "search", Args: json.RawMessage(`{"query":"timeouts"}`)}),
		toolsettest.Decide(func(req toolsettest.ModelRequest) (toolsettest.Step, error) {
			return toolsettest.Answer("The docs say: " + req.Results[0].Text), nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()
	client := openai.NewClient(option.WithBaseURL(model.BaseURL()), option.WithHTTPClient(model.Client()),
		option.WithAPIKey("unused"), option.WithMaxRetries(0))

	ctx := context.Background()
	messages := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("How do timeouts work?")}
	for {
		tools, err := toolset.BuildTools(ctx, "assistant", searchTool())
		if err != nil {
			log.Fatal(err)
		}
		params, err := openaitools.ChatTools(tools)
		if err != nil {
			log.Fatal(err)
		}
		completion, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "any", Messages: messages, Tools: params})
		if err != nil {
			log.Fatal(err)
		}
		msg := completion.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Println(msg.Content)
			break
		}
		results, err := openaitools.RunChatCalls(ctx, tools, msg.ToolCalls)
		if err != nil {
			log.Fatal(err)
		}
		messages = append(append(messages, msg.ToParam()), results...)
	}
	for i, req := range model.Requests() {
		fmt.Printf("request %d: tools %v, %d results\n", i+1, req.ToolNames(), len(req.Results))
	}
	// Output:
	// The docs say: ["Result for timeouts"]
	// request 1: tools [search], 0 results
	// request 2: tools [search], 1 results
}
