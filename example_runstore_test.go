package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gotoolset/toolset"
)

// A run that pauses for a human's approval in one request and resumes in
// another, perhaps on another replica: each request resumes the run from
// the store, and the run saves itself as it goes. Here the three requests
// share an in-memory store; replicas share one in a database.
func ExampleResumeRun() {
	store := toolset.NewMemoryRunStore()
	refund := toolset.NewTool("refund", "Refund an order.", func(_ context.Context, in struct {
		Order  string `json:"order"`
		Amount int    `json:"amount"`
	}) (string, error) {
		return fmt.Sprintf("refunded %d on %s", in.Amount, in.Order), nil
	}, toolset.WithApprovalRequired(toolset.Always))
	call := toolset.ToolCall{ID: "call_1", Name: "refund", Args: json.RawMessage(`{"order":"A-7","amount":300}`)}
	ctx := context.Background()

	// Request 1: the agent's loop; the model asks for a refund.
	run, err := toolset.ResumeRun(ctx, store, "req-42")
	if err != nil {
		panic(err)
	}
	turn := run.Turn(ctx)
	tools, _ := toolset.BuildTools(turn, "support", refund)
	_, err = tools.Execute(turn, call)
	var need *toolset.ApprovalRequiredError
	if errors.As(err, &need) {
		fmt.Println("paused:", need.Call.ID, "needs approval")
		if err := run.Suspend(ctx); err != nil { // saved, and let go
			panic(err)
		}
	}

	// Request 2: a human looks at the pending calls and edits the amount.
	run, err = toolset.ResumeRun(ctx, store, "req-42")
	if err != nil {
		panic(err)
	}
	for _, p := range run.PendingApprovals() {
		fmt.Printf("pending: %s %s %s\n", p.CallID, p.Tool, p.Args)
		run.RecordApproval(p.Call(), toolset.WithEditedArgs(json.RawMessage(`{"order":"A-7","amount":30}`)))
	}
	if err := run.Suspend(ctx); err != nil {
		panic(err)
	}

	// Request 3: the loop goes on where it stopped.
	run, err = toolset.ResumeRun(ctx, store, "req-42")
	if err != nil {
		panic(err)
	}
	defer run.End() // the run is over: its saved state is deleted
	turn = run.Turn(ctx)
	tools, _ = toolset.BuildTools(turn, "support", refund)
	res, err := tools.Execute(turn, call)
	fmt.Println("step", toolset.FromContext(turn).Step(), res, err)
	// Output:
	// paused: call_1 needs approval
	// pending: call_1 refund {"amount":300,"order":"A-7"}
	// step 1 refunded 30 on A-7 <nil>
}

// A RunStore is three methods; this one counts the saves of an in-memory
// store, to show when a run saves itself: when it is resumed, at the end
// of each BuildTools, and after a call that changed its bookkeeping.
func ExampleRunStore() {
	store := &countingStore{MemoryRunStore: toolset.NewMemoryRunStore()}
	search := toolset.NewFunction(toolset.NewTool("archive", "Search the archive.",
		func(context.Context, struct{}) (string, error) { return "3 hits", nil }, toolset.WithDeferred()))
	ctx := context.Background()

	run, _ := toolset.ResumeRun(ctx, store, "req-7")
	defer run.End()
	fmt.Println("resumed:", store.saves)
	turn := run.Turn(ctx)
	tools, _ := toolset.BuildTools(turn, "support", search, toolset.NewToolSearch(search))
	fmt.Println("built:", store.saves)
	tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "tool_search", Args: json.RawMessage(`{"query":"archive"}`)})
	fmt.Println("revealed:", store.saves)
	// Output:
	// resumed: 1
	// built: 2
	// revealed: 3
}

// countingStore is a RunStore that counts its saves.
type countingStore struct {
	*toolset.MemoryRunStore
	saves int
}

func (s *countingStore) Save(ctx context.Context, id string, data []byte, expect int64, ttl time.Duration) (int64, error) {
	s.saves++
	return s.MemoryRunStore.Save(ctx, id, data, expect, ttl)
}
