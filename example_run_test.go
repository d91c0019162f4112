package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gotoolset/toolset"
)

// The agent loop: one run per user request, made once and ended when the
// request is answered, and one Turn per model step. The run keeps what its
// turns did: a tool that failed in two steps is spent, and a tool a search
// revealed stays revealed.
func ExampleNewRun() {
	flaky := toolset.NewTool("flaky_lookup", "Often down.", func(context.Context, struct{}) (string, error) {
		return "", toolset.NewModelError("the lookup service is down")
	}, toolset.WithMaxFailures(2))
	archive := toolset.NewFunction(toolset.NewTool("archive_search", "Search the archive.",
		func(context.Context, struct{}) (string, error) { return "3 hits", nil }, toolset.WithDeferred()))
	entries := []toolset.Toolset{flaky, archive, toolset.NewToolSearch(archive)}

	run := toolset.NewRun("req-42")
	defer run.End()
	// What the model asks for at each step, in this example.
	script := [][]string{{"flaky_lookup", "tool_search"}, {"flaky_lookup", "archive_search"}, {"archive_search"}}
	for _, calls := range script {
		ctx := run.Turn(context.Background()) // step 0, then 1, 2, ...
		tools, err := toolset.BuildTools(ctx, "support", entries...)
		if err != nil {
			panic(err) // a misused run, a name conflict, a failing toolset
		}
		fmt.Println("step", toolset.FromContext(ctx).Step(), tools.Names())
		for _, name := range calls {
			args := `{}`
			if name == "tool_search" {
				args = `{"query":"archive"}`
			}
			res, err := tools.Execute(ctx, toolset.ToolCall{ID: name, Name: name, Args: json.RawMessage(args)})
			if msg, ok := toolset.ErrorText(err); ok {
				res = "error: " + msg // for the model
			} else if err != nil {
				panic(err) // stops the run
			}
			text, _ := toolset.ResultText(res)
			fmt.Printf("  %s: %.60s\n", name, text)
		}
	}
	// Output:
	// step 0 [flaky_lookup tool_search]
	//   flaky_lookup: error: the lookup service is down
	//   tool_search: {"tools":[{"name":"archive_search","description":"Search the
	// step 1 [flaky_lookup archive_search tool_search]
	//   flaky_lookup: error: the lookup service is down
	//   archive_search: 3 hits
	// step 2 [archive_search tool_search]
	//   archive_search: 3 hits
}

// A typed value of the run, read cheaply in a predicate: no string is
// hashed and, under the contexts BuildTools gives predicates, no context
// chain is walked.
func ExampleKey() {
	var Role = toolset.NewKey[string]("role") // at package level, once

	admin := toolset.NewFunction(tool("delete_user")).Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) {
		return Role.Get(ctx) == "admin", nil
	})
	for _, role := range []string{"admin", "guest"} {
		run := toolset.NewRun("", toolset.WithValue(Role, role))
		tools, _ := toolset.BuildTools(run.Turn(context.Background()), "ops", admin, tool("whoami"))
		fmt.Println(role, tools.Names())
		run.End()
	}
	// Output:
	// admin [delete_user whoami]
	// guest [whoami]
}
