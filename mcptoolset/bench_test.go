package mcptoolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// manyTools returns an SDK server with n tools.
func manyTools(n int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "v1"}, nil)
	for i := range n {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("tool_%03d", i), Description: "A tool."},
			func(_ context.Context, _ *mcp.CallToolRequest, in struct {
				X int `json:"x"`
			}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.X)}}}, nil, nil
			})
	}
	return s
}

// A turn over a cached MCP toolset: no request reaches the server.
func BenchmarkBuildToolsCached(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprint(n, "tools"), func(b *testing.B) {
			ctx := context.Background()
			ts := mcptoolset.NewInMemory("many", manyTools(n))
			defer ts.Close()
			entry := ts.Prefixed("m")
			if _, err := toolset.BuildTools(ctx, "agent", entry); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := toolset.BuildTools(ctx, "agent", entry); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// One tools/call round trip over an in-memory session.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	ts := mcptoolset.NewInMemory("many", manyTools(1))
	defer ts.Close()
	tools, err := toolset.BuildTools(ctx, "agent", ts)
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"x":1}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tools.Execute(ctx, toolset.ToolCall{Name: "tool_000", Args: args}); err != nil {
			b.Fatal(err)
		}
	}
}

// Listing the tools from the server, as after a list change.
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	ts := mcptoolset.NewInMemory("many", manyTools(100))
	defer ts.Close()
	b.ReportAllocs()
	for b.Loop() {
		ts.ToolsChanged()
		if _, err := ts.GetTools(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
