package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gotoolset/toolset"
)

// Effects as data, call bounds, call order, a turn's result budget and
// the call journal, together: the destructive tool waits for a human and
// runs alone, a long listing reaches the model cut (the rest readable
// with read_result), a call made again is answered from the journal, and
// Explain says what set each policy.
func Example_effectsAndBudgets() {
	ctx := context.Background()
	deleted := 0
	archive := toolset.NewResultArchive(0)
	tools := toolset.NewFunction(
		toolset.NewTool("list_files", "Lists the files.", func(context.Context, struct{}) (string, error) {
			return strings.Repeat("report.txt\n", 200), nil
		}, toolset.WithEffects(toolset.Effects{ReadOnly: true})),
		toolset.NewTool("delete_file", "Deletes a file.", func(_ context.Context, in struct {
			Path string `json:"path"`
		}) (string, error) {
			deleted++
			return "deleted " + in.Path, nil
		}, toolset.WithEffects(toolset.Effects{Destructive: true})),
		archive.ReadTool(),
	).Guarded(toolset.EffectPolicies)

	run := toolset.NewRun("example-effects",
		toolset.WithCallJournal(toolset.JournalOptions{}),
		toolset.WithCallLimits(toolset.CallLimits{Calls: 20}),
		toolset.WithTurnResultBudget(toolset.ResultBudget{MaxBytes: 600, Archive: archive}))
	defer run.End()
	turn := run.Turn(ctx)
	list, err := toolset.BuildTools(turn, "files", tools)
	if err != nil {
		fmt.Println(err)
		return
	}
	calls := []toolset.ToolCall{
		{ID: "c1", Name: "list_files", Args: json.RawMessage(`{}`)},
		{ID: "c2", Name: "delete_file", Args: json.RawMessage(`{"path":"old.txt"}`)},
	}
	fmt.Println("order:", list.CallOrder(calls))

	res, _ := list.Execute(turn, calls[0])
	listing := res.(string)
	fmt.Println("listing cut:", len(listing) <= 600, strings.Contains(listing, "bytes left out; read them with read_result"))

	_, err = list.Execute(turn, calls[1])
	var asked *toolset.ApprovalRequiredError
	if errors.As(err, &asked) {
		fmt.Println("asks a human for:", asked.Call.Name)
		run.RecordApproval(asked.Call)
	}
	res, _ = list.Execute(turn, calls[1])
	fmt.Println(res)
	res, _ = list.Execute(turn, calls[1]) // re-sent: the journal answers
	fmt.Println(res, "- handler ran", deleted, "time")

	x, _ := toolset.Explain(turn, "files", tools)
	for _, name := range []string{"list_files", "delete_file"} {
		for _, p := range x.Find(name)[0].Policies {
			fmt.Println(name, "-", p)
		}
	}
	// Output:
	// order: [[] [0]]
	// listing cut: true true
	// asks a human for: delete_file
	// deleted old.txt
	// deleted old.txt - handler ran 1 time
	// list_files - resume: an interrupted call runs again unasked (read-only, declared by WithEffects)
	// delete_file - approval: required (destructive, declared by WithEffects)
	// delete_file - order: runs alone, in the model's order (destructive, declared by WithEffects)
	// delete_file - resume: an interrupted call asks a human before it runs again (not idempotent, declared by WithEffects)
}
