package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gotoolset/toolset"
)

// Tools made elsewhere (here a Function standing for an MCP server's
// tools) given a timeout and a failure budget of the program's, once per
// tool.
func ExampleNewGuarded() {
	type query struct {
		SQL string `json:"sql"`
	}
	remote := toolset.NewFunction(toolset.NewTool("query", "Runs a query.", func(_ context.Context, q query) (string, error) {
		return "3 rows", nil
	}))
	guarded := toolset.NewGuarded(remote, func(t toolset.Tool) []toolset.ToolOption {
		return []toolset.ToolOption{
			toolset.WithTimeout(10*time.Second, toolset.TimeoutTellModel),
			toolset.WithMaxFailures(3),
		}
	}).Prefixed("db")

	run := toolset.NewRun("example-guarded")
	defer run.End()
	turn := run.Turn(context.Background())
	tools, _ := toolset.BuildTools(turn, "analyst", guarded)
	res, _ := tools.Execute(turn, toolset.ToolCall{Name: "db_query", Args: json.RawMessage(`{"sql":"select 1"}`)})
	fmt.Println(tools.Names(), res)
	// Output: [db_query] 3 rows
}

// A run that may call tools three times: the fourth call is refused with
// a message for the model, and a call in a later step stops the run.
func ExampleWithCallLimits() {
	search := toolset.NewTool("search", "Searches.", func(context.Context, struct{}) (string, error) { return "found", nil })
	run := toolset.NewRun("example-limits", toolset.WithCallLimits(toolset.CallLimits{Calls: 3}))
	defer run.End()
	turn := run.Turn(context.Background())
	tools, _ := toolset.BuildTools(turn, "a", search)
	for range 4 {
		_, err := tools.Execute(turn, toolset.ToolCall{Name: "search", Args: json.RawMessage(`{}`)})
		if msg, forModel := toolset.ErrorText(err); forModel {
			fmt.Println("model is told:", msg)
		}
	}
	next := run.Turn(context.Background())
	tools, _ = toolset.BuildTools(next, "a", search)
	_, err := tools.Execute(next, toolset.ToolCall{Name: "search", Args: json.RawMessage(`{}`)})
	var limit *toolset.CallLimitError
	fmt.Println("stops the run:", errors.As(err, &limit) && limit.Stop)
	// Output:
	// model is told: tool "search" was not called: the limit of 3 tool calls was reached; answer with what you have, without calling tools
	// stops the run: true
}

// What each of one model turn's calls waits for: the writes of one file
// one after the other, the deploy after everything before it.
func ExampleToolList_CallOrder() {
	noop := func(context.Context, struct{}) (string, error) { return "", nil }
	tools, _ := toolset.BuildTools(context.Background(), "ops",
		toolset.NewTool("read", "Reads.", noop),
		toolset.NewTool("write", "Writes the config.", noop, toolset.WithResource("config")),
		toolset.NewTool("deploy", "Deploys.", noop, toolset.WithSequential()),
	)
	calls := []toolset.ToolCall{{Name: "write"}, {Name: "read"}, {Name: "write"}, {Name: "deploy"}, {Name: "read"}}
	for i, after := range tools.CallOrder(calls) {
		fmt.Println(i, calls[i].Name, "after", after)
	}
	// Output:
	// 0 write after []
	// 1 read after []
	// 2 write after [0]
	// 3 deploy after [0 1 2]
	// 4 read after [3]
}

// A framework that retries a call: with the run's journal, the payment is
// made once, and the retry gets the first answer.
func ExampleWithCallJournal() {
	type payment struct {
		To     string `json:"to"`
		Amount int    `json:"amount"`
	}
	paid := 0
	pay := toolset.NewTool("pay", "Pays.", func(_ context.Context, p payment) (string, error) {
		paid++
		return fmt.Sprintf("paid %d to %s", p.Amount, p.To), nil
	})
	run := toolset.NewRun("example-journal", toolset.WithCallJournal(toolset.JournalOptions{}))
	defer run.End()
	turn := run.Turn(context.Background())
	tools, _ := toolset.BuildTools(turn, "a", pay)
	call := toolset.ToolCall{ID: "call-7", Name: "pay", Args: json.RawMessage(`{"to":"bob","amount":5}`)}
	first, _ := tools.Execute(turn, call)
	retry, _ := tools.Execute(turn, call)
	fmt.Println(first, "|", retry, "| payments:", paid)
	// Output: paid 5 to bob | paid 5 to bob | payments: 1
}
