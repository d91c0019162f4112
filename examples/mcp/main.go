// Command mcp uses the tools of two MCP servers whose tool names collide.
// It starts both itself: a documentation server written with the MCP Go
// SDK, reached in memory, and an issue tracker that serves a toolset over
// streamable HTTP on 127.0.0.1. It shows the conflict error, fixes it with
// prefixes, and calls a tool of each server.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SearchArgs are the arguments of both search tools.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"What to look for"`
}

func main() {
	ctx := context.Background()

	section("1. Two MCP servers, started by this program")
	docs := mcptoolset.NewInMemory("docs", docsServer())
	defer docs.Close()
	url, stop := serveTracker()
	defer stop()
	tracker := mcptoolset.NewHTTP(url, mcptoolset.WithName("tracker"))
	defer tracker.Close()
	fmt.Println("docs:    an SDK server, in memory")
	fmt.Println("tracker: a toolset served over streamable HTTP at", url)

	section("2. Combined as they are, both offer \"search\"")
	_, err := toolset.BuildTools(ctx, "helpdesk", docs, tracker)
	var conflict *toolset.NameConflictError
	if !errors.As(err, &conflict) {
		log.Fatalf("expected a name conflict, got %v", err)
	}
	fmt.Println(err)

	section("3. Prefixed: the tools as the model sees them")
	tools, err := toolset.BuildTools(ctx, "helpdesk", docs.Prefixed("docs"), tracker.Prefixed("tracker"))
	if err != nil {
		log.Fatal(err)
	}
	for t := range tools.All() {
		params, _ := t.ParametersJSON()
		fmt.Printf("%-22s %-34s %s\n", t.Name, t.Description, params)
	}
	instructions, err := toolset.Instructions(ctx, docs, tracker)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("instructions from the servers: %q\n", instructions)

	section("4. Calling a tool of each server")
	call(ctx, tools, "docs_search", `{"query":"password"}`)
	call(ctx, tools, "tracker_search", `{"query":"password"}`)
	call(ctx, tools, "tracker_search", `{"q":"password"}`)
}

// docsServer is a documentation server written with the MCP Go SDK alone.
func docsServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "v1"},
		&mcp.ServerOptions{Instructions: "Search the docs before answering how-to questions."})
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Search the product documentation."},
		func(_ context.Context, _ *mcp.CallToolRequest, in SearchArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("2 pages match %q: Resetting your password; Two-factor authentication", in.Query),
			}}}, nil, nil
		})
	return s
}

// serveTracker serves an issue tracker's toolset over streamable HTTP on
// 127.0.0.1 and returns its URL and a function that stops it.
func serveTracker() (string, func()) {
	tracker := toolset.NewFunction(
		toolset.NewTool("search", "Search the issue tracker.", func(_ context.Context, in SearchArgs) ([]string, error) {
			return []string{"#42 " + in.Query + " reset email not sent"}, nil
		}),
		toolset.NewTool("create_issue", "File a new issue.", func(_ context.Context, in struct {
			Title string `json:"title"`
		}) (string, error) {
			return "created #43 " + in.Title, nil
		}),
	)
	srv := mcptoolset.NewServer(tracker, mcptoolset.WithImplementation(&mcp.Implementation{Name: "tracker", Version: "v1"}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: srv.HTTPHandler(nil)}
	go hs.Serve(ln)
	return "http://" + ln.Addr().String() + "/mcp", func() { hs.Close() }
}

// call runs one tool call the way an agent loop would, and prints what the
// model would be sent back.
func call(ctx context.Context, tools *toolset.ToolList, name, args string) {
	fmt.Printf("\n%s(%s)\n", name, args)
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: json.RawMessage(args)})
	if msg, ok := toolset.ErrorText(err); ok {
		fmt.Println("  error for the model:", strings.ReplaceAll(msg, "\n", "\n  "))
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	text, err := toolset.ResultText(res)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("  result:", text)
}

func section(title string) { fmt.Printf("\n== %s\n", title) }
