package mcptoolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fileServer is an MCP server written with the SDK, as a third party
// would; both "disks" have a read_file tool.
func fileServer(disk string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: disk, Version: "v1"}, nil)
	type args struct {
		Path string `json:"path" jsonschema:"the file to read"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: disk + ":" + in.Path}}}, nil, nil
		})
	return s
}

// Two MCP servers expose read_file: combined as they are they conflict,
// prefixed they do not, and each prefixed tool calls its own server.
func ExampleNewInMemory() {
	ctx := context.Background()
	local := mcptoolset.NewInMemory("local", fileServer("local"))
	defer local.Close()
	backup := mcptoolset.NewInMemory("backup", fileServer("backup"))
	defer backup.Close()

	_, err := toolset.BuildTools(ctx, "agent", local, backup)
	var conflict *toolset.NameConflictError
	fmt.Println(errors.As(err, &conflict), conflict.Conflicts[0].Contributors)

	tools, err := toolset.BuildTools(ctx, "agent", local.Prefixed("local"), backup.Prefixed("backup"))
	if err != nil {
		panic(err)
	}
	fmt.Println(tools.Names())
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "backup_read_file", Args: json.RawMessage(`{"path":"notes.txt"}`)})
	if err != nil {
		panic(err)
	}
	text, _ := toolset.ResultText(res)
	fmt.Println(text)
	// Output:
	// true [Toolset#0 "mcp:local" Toolset#1 "mcp:backup"]
	// [local_read_file backup_read_file]
	// backup:notes.txt
}

// A toolset served as an MCP server, seen by the SDK's own client.
func ExampleNewServer() {
	ctx := context.Background()
	greet := toolset.NewTool("greet", "Greet someone.", func(_ context.Context, in struct {
		Name string `json:"name"`
	}) (string, error) {
		return "Hello, " + in.Name + "!", nil
	})
	srv := mcptoolset.NewServer(toolset.NewFunction(greet))

	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, serverEnd, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Wait()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		panic(err)
	}
	schema, _ := json.Marshal(list.Tools[0].InputSchema)
	fmt.Println(list.Tools[0].Name, string(schema))
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// greet {"additionalProperties":false,"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}
	// Hello, Ada!
	// true invalid arguments for tool "greet":
	// - "name": required field is missing; expected string
	// Fix the arguments and call the tool again.
}

// Handles share one connection; the last Close ends it.
func ExampleToolset_Acquire() {
	ctx := context.Background()
	shared := mcptoolset.NewInMemory("local", fileServer("local"))
	support := shared.Acquire()
	billing := shared.Acquire()

	shared.Close()
	tools, err := support.GetTools(ctx)
	fmt.Println(len(tools), err)
	support.Close()
	support.Close() // harmless
	_, err = billing.GetTools(ctx)
	fmt.Println(err)
	billing.Close() // the last handle: the session ends
	_, err = billing.GetTools(ctx)
	fmt.Println(errors.Is(err, mcptoolset.ErrClosed))
	// Output:
	// 1 <nil>
	// <nil>
	// true
}

// A served tool that needs a human's approval asks the client's user: on
// a session, by elicitation. The client approves and the call runs.
func ExampleNewServer_approval() {
	ctx := context.Background()
	refund := toolset.NewTool("refund", "Refund an order.", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded " + in.Order, nil
	}, toolset.WithApprovalRequired(toolset.Always))
	srv := mcptoolset.NewServer(toolset.NewFunction(refund))

	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, serverEnd, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Wait()
	// The client's user: shown what is asked, answers yes.
	approve := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		fmt.Println("asked:", strings.Contains(req.Params.Message, "refund"))
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{mcptoolset.ApprovalField: true}}, nil
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, &mcp.ClientOptions{ElicitationHandler: approve})
	cs, err := client.Connect(ctx, clientEnd, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "refund", Arguments: map[string]any{"order": "A-17"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// asked: true
	// refunded A-17
}
