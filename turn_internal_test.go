package toolset

import (
	"context"
	"testing"
)

// A loop that reassigns its context each turn (ctx = run.Turn(ctx)) does
// not stack a context per turn: a long run would otherwise keep every
// turn's context, and each lookup of another value would walk them all.
func TestTurnReassignedEachTurnDoesNotStack(t *testing.T) {
	run := NewRun("")
	defer run.End()
	ctx := context.Background()
	for range 100 {
		ctx = run.Turn(ctx)
	}
	depth := 0
	for c := ctx; ; {
		tc, ok := c.(*turnContext)
		if !ok {
			break
		}
		depth++
		c = tc.Context
	}
	if depth != 1 {
		t.Fatalf("after 100 turns the context holds %d turn contexts, want 1", depth)
	}
	if got := FromContext(ctx).Step(); got != 99 {
		t.Fatalf("Step() = %d, want 99", got)
	}
}

// Predicates under a Combined whose children are materialised on
// goroutines get a context that answers the run without a walk.
func TestPredicatesUnderCombinedGetTheTurnContext(t *testing.T) {
	run := NewRun("")
	defer run.End()
	seen := make(chan bool, 4)
	pred := func(ctx context.Context, _ Tool) (bool, error) {
		_, ok := ctx.(*turnContext)
		seen <- ok
		return true, nil
	}
	mk := func(name string) Toolset {
		return NewFiltered(NewFunction(NewTool(name, "", func(context.Context, struct{}) (string, error) { return "", nil })), pred)
	}
	_, err := BuildTools(run.Turn(context.Background()), "a", NewCombined(mk("a"), mk("b")), mk("c"))
	if err != nil {
		t.Fatal(err)
	}
	close(seen)
	for ok := range seen {
		if !ok {
			t.Fatal("a predicate got a context that is not a turn's")
		}
	}
}
