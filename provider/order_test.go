package provider_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// trace records when each call began and ended, in one order.
type trace struct {
	mu     sync.Mutex
	events []string
}

func (tr *trace) add(e string) {
	tr.mu.Lock()
	tr.events = append(tr.events, e)
	tr.mu.Unlock()
}

// overlap reports whether calls a and b ran at once.
func (tr *trace) overlap(a, b string) bool {
	at := func(e string) int { return slices.Index(tr.events, e) }
	return at("start "+a) < at("end "+b) && at("start "+b) < at("end "+a)
}

// A turn's calls run in the order the tools ask: calls sharing a resource
// one at a time in the model's order, a sequential tool's alone between
// what came before and after it, and the rest at once.
func TestRunKeepsTheCallOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	tr := &trace{}
	both := make(chan struct{}) // closed when two independent reads run at once
	var reads sync.WaitGroup
	reads.Add(2)
	go func() { reads.Wait(); close(both) }()
	work := func(ctx context.Context, c toolset.ToolCall) (any, error) {
		tr.add("start " + c.ID)
		defer tr.add("end " + c.ID)
		if c.Name == "read" && (c.ID == "r1" || c.ID == "r2") {
			reads.Done()
			select {
			case <-both:
			case <-time.After(5 * time.Second):
				return nil, fmt.Errorf("%s never ran beside the other read", c.ID)
			}
		}
		time.Sleep(5 * time.Millisecond)
		return c.ID, nil
	}
	handler := func(ctx context.Context, _ struct{}) (string, error) { return "", nil }
	list, err := toolset.BuildTools(t.Context(), "a", toolset.NewFunction(
		toolset.NewTool("read", "Reads.", handler),
		toolset.NewTool("write", "Writes the file.", handler, toolset.WithResource("file")),
		toolset.NewTool("deploy", "Deploys.", handler, toolset.WithSequential()),
	))
	require.NoError(t, err)
	calls := []toolset.ToolCall{
		call("w1", "write", `{}`), call("r1", "read", `{}`), call("w2", "write", `{}`), call("r2", "read", `{}`),
		call("d", "deploy", `{}`), call("r3", "read", `{}`), call("w3", "write", `{}`),
	}
	out, err := provider.Run(t.Context(), calls, 8, list.CallOrder(calls), work)
	require.NoError(t, err)
	require.Len(t, out, len(calls))
	for i, o := range out {
		assert.Equal(t, calls[i].ID, o.Result, "outcomes in call order")
	}
	assert.True(t, tr.overlap("r1", "r2"), "independent calls run at once: %v", tr.events)
	assert.False(t, tr.overlap("w1", "w2"), "calls sharing a resource never overlap: %v", tr.events)
	assert.Less(t, slices.Index(tr.events, "end w1"), slices.Index(tr.events, "start w2"), "in the model's order")
	for _, other := range []string{"w1", "r1", "w2", "r2", "r3", "w3"} {
		assert.False(t, tr.overlap("d", other), "the sequential call runs alone, not beside %s: %v", other, tr.events)
	}
	for _, before := range []string{"w1", "r1", "w2", "r2"} {
		assert.Less(t, slices.Index(tr.events, "end "+before), slices.Index(tr.events, "start d"))
	}
	assert.Less(t, slices.Index(tr.events, "end d"), slices.Index(tr.events, "start r3"))
}

// An order of the wrong length is refused, and a failing call stops the
// calls that wait for it from starting.
func TestRunOrderErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, err := provider.Run(t.Context(), []toolset.ToolCall{call("a", "x", `{}`), call("b", "x", `{}`)}, 2, [][]int{nil}, nil)
	require.ErrorContains(t, err, "call order for 1 calls, not 2")

	var mu sync.Mutex
	var ran []string
	exec := func(ctx context.Context, c toolset.ToolCall) (any, error) {
		mu.Lock()
		ran = append(ran, c.ID)
		mu.Unlock()
		if c.ID == "a" {
			return nil, fmt.Errorf("down")
		}
		return "ok", nil
	}
	_, err = provider.Run(t.Context(), []toolset.ToolCall{call("a", "x", `{}`), call("b", "x", `{}`)}, 2, [][]int{nil, {0}}, exec)
	var ce *provider.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "a", ce.Call.ID)
	assert.Equal(t, []string{"a"}, ran, "the call waiting for the failed one never ran")
}
