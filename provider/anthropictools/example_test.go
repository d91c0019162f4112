package anthropictools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/anthropictools"
)

// Running a message's tool_use blocks: one tool_result per call, in call
// order; the bad call's error is flagged is_error for the model to fix.
func ExampleRunCalls() {
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "assistant",
		toolset.NewTool("add", "Add two numbers.", func(_ context.Context, in struct {
			A int `json:"a"`
			B int `json:"b"`
		}) (int, error) {
			return in.A + in.B, nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	var msg anthropic.Message // as the model returned it
	_ = json.Unmarshal([]byte(`{"role":"assistant","content":[
		{"type":"tool_use","id":"toolu_1","name":"add","input":{"a":2,"b":3}},
		{"type":"tool_use","id":"toolu_2","name":"sub","input":{"a":2,"b":3}}]}`), &msg)

	results, err := anthropictools.RunCalls(ctx, tools, msg.Content)
	if err != nil {
		log.Fatal(err) // an error that should stop the run
	}
	for _, r := range results {
		fmt.Println(r.OfToolResult.ToolUseID, r.OfToolResult.IsError.Valid(), r.OfToolResult.Content[0].OfText.Text)
	}
	// The next message sends them back.
	_ = anthropic.NewUserMessage(results...)
	// Output:
	// toolu_1 false 5
	// toolu_2 true unknown tool "sub"; available tools: add
}
