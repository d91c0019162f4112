// Command durable pauses a run for a human's approval on one replica and
// finishes it on another: the run's state lives in Redis, and the second
// replica, with a Redis client of its own, resumes it by its id.
//
//	go run ./examples/durable [-redis 127.0.0.1:6379]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/redistoolset"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "the Redis the replicas share")
	flag.Parse()
	if err := run(context.Background(), *addr, "req-42", new(int), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// refund is the tool; refunds counts its runs, so a test sees it ran once.
func refund(refunds *int) toolset.Tool {
	return toolset.NewTool("refund", "Refund an order.", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		*refunds++
		return "refunded " + in.Order, nil
	}, toolset.WithApprovalRequired(toolset.Always))
}

// replica is one process of the service: a Redis client and a run store.
func replica(ctx context.Context, addr, id string) (*toolset.RunContext, func(), error) {
	client := redis.NewClient(&redis.Options{Addr: addr})
	run, err := toolset.ResumeRun(ctx, redistoolset.NewRunStore(client, nil), id)
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("resuming run %s: %w", id, err)
	}
	return run, func() { client.Close() }, nil
}

// ask is the model's request in a turn of run: build the tools, call refund.
func ask(ctx context.Context, run *toolset.RunContext, refunds *int) (any, error) {
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "support", refund(refunds))
	if err != nil {
		return nil, err
	}
	return tools.Execute(turn, toolset.ToolCall{ID: "call_1", Name: "refund", Args: json.RawMessage(`{"order":"A-7"}`)})
}

func run(ctx context.Context, addr, id string, refunds *int, w io.Writer) error {
	// Replica 1: the model asks for a refund; the call needs approval, so
	// the run is saved and let go while a human decides.
	run, done, err := replica(ctx, addr, id)
	if err != nil {
		return err
	}
	var need *toolset.ApprovalRequiredError
	if _, err := ask(ctx, run, refunds); !errors.As(err, &need) {
		return fmt.Errorf("expected a pause for approval, got %v", err)
	}
	fmt.Fprintln(w, "replica 1: paused,", need.Call.ID, "waits for approval")
	err = run.Suspend(ctx)
	done() // replica 1 is gone
	if err != nil {
		return err
	}

	// Replica 2: a new client finds the pending call, records the human's
	// yes, and makes the call again: now it runs.
	run, done, err = replica(ctx, addr, id)
	if err != nil {
		return err
	}
	defer done()
	defer run.End() // the run is over: its state leaves Redis
	for _, p := range run.PendingApprovals() {
		fmt.Fprintf(w, "replica 2: approving %s %s %s\n", p.CallID, p.Tool, p.Args)
		run.RecordApproval(p.Call())
	}
	res, err := ask(ctx, run, refunds)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "replica 2:", res)
	return nil
}
