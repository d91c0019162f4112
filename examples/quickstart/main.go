// Command quickstart builds an agent's tools from two toolsets whose names
// collide, shows the conflict error, fixes it with prefixes, prints the tool
// list as a model sees it, and runs two tool calls, one with bad arguments.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/gotoolset/toolset"
)

// SearchArgs are the arguments of both search tools.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"What to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"description=How many results,minimum=1,maximum=20"`
}

// IssueArgs are the arguments of create_issue.
type IssueArgs struct {
	Title    string `json:"title" jsonschema:"Issue title"`
	Priority string `json:"priority" jsonschema:"enum=low,enum=normal,enum=high"`
}

func main() {
	ctx := toolset.NewContext(context.Background(), &toolset.RunContext{
		RunID: "run-1", Agent: "helpdesk", Values: map[string]any{"role": "agent"},
	})

	// Two toolsets, written by different teams, both with a "search" tool.
	docs := toolset.NewFunction(
		toolset.NewTool("search", "Search the product documentation.", func(_ context.Context, in SearchArgs) ([]string, error) {
			return []string{"Resetting your password", "Two-factor authentication"}[:min(max(in.Limit, 1), 2)], nil
		}),
	).WithLabel("docs")
	tracker := toolset.NewFunction(
		toolset.NewTool("search", "Search the issue tracker.", func(_ context.Context, in SearchArgs) ([]string, error) {
			return []string{"#42 Password reset email not sent"}, nil
		}),
		toolset.NewTool("create_issue", "File a new issue.", func(_ context.Context, in IssueArgs) (string, error) {
			return fmt.Sprintf("created #43 %q (%s)", in.Title, in.Priority), nil
		}),
	).WithLabel("tracker")

	section("1. Combining them as they are")
	_, err := toolset.BuildTools(ctx, "helpdesk", docs, tracker)
	var conflict *toolset.NameConflictError
	if !errors.As(err, &conflict) {
		log.Fatalf("expected a name conflict, got %v", err)
	}
	fmt.Println(err)

	section("2. Fixed with prefixes: the tools as the model sees them")
	tools, err := toolset.BuildTools(ctx, "helpdesk", docs.Prefixed("docs"), tracker.Prefixed("tracker"))
	if err != nil {
		log.Fatal(err)
	}
	type modelTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	var list []modelTool
	for t := range tools.All() {
		params, err := t.ParametersJSON()
		if err != nil {
			log.Fatal(err)
		}
		list = append(list, modelTool{t.Name, t.Description, params})
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	if err := out.Encode(list); err != nil {
		log.Fatal(err)
	}

	section("3. The model calls docs_search")
	call(ctx, tools, "docs_search", `{"query": "password reset", "limit": 2}`)

	section("4. The model calls tracker_create_issue with bad arguments")
	call(ctx, tools, "tracker_create_issue", `{"titel": "Reset email missing", "priority": "urgent"}`)
}

// call runs one tool call and prints what the model would get back.
func call(ctx context.Context, tools *toolset.Tools, name, args string) {
	fmt.Printf("call %s %s\n", name, args)
	res, err := tools.Call(ctx, name, json.RawMessage(args))
	if err != nil {
		msg, forModel := toolset.ModelMessage(err)
		if !forModel {
			log.Fatalf("the run stops: %v", err)
		}
		fmt.Printf("error sent back to the model:\n%s\n", msg)
		return
	}
	text, err := toolset.ResultText(res)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("result: %s\n", text)
}

func section(title string) {
	fmt.Printf("\n%s\n%s\n", title, strings.Repeat("-", len(title)))
}
