package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestApproverIsAskedConcurrentlyAndEachAnswerBindsItsCall runs a turn of
// calls that all wait for approval, as the provider adapters do: the
// Approver is asked from the goroutines that run the calls, all at once,
// once per call; an approved call runs once, with its own arguments, and a
// refused one tells the model the Approver's reason.
func TestApproverIsAskedConcurrentlyAndEachAnswerBindsItsCall(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	paid := map[string]int{}
	pay := toolset.NewTool("pay", "", func(_ context.Context, in struct {
		To string `json:"to"`
	}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		paid[in.To]++
		return "paid " + in.To, nil
	}, toolset.WithApprovalRequired(toolset.Always))
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", pay)
	require.NoError(t, err)

	calls := make([]toolset.ToolCall, n)
	for i := range calls {
		calls[i] = toolset.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "pay", Args: json.RawMessage(fmt.Sprintf(`{"to":"payee%d"}`, i))}
	}
	asked := map[string]int{}
	all := make(chan struct{}) // closed when every call has been put to the Approver
	approver := toolset.Approver(func(ctx context.Context, call toolset.ToolCall) (bool, string, error) {
		mu.Lock()
		asked[call.ID]++
		if len(asked) == n && asked[call.ID] == 1 {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all: // every call is waiting on an answer at once
		case <-time.After(10 * time.Second):
			return false, "", fmt.Errorf("call %s: the other calls were not asked at the same time", call.ID)
		}
		var in struct {
			To string `json:"to"`
		}
		if err := json.Unmarshal(call.Args, &in); err != nil {
			return false, "", err
		}
		if in.To == "payee3" || in.To == "payee6" {
			return false, "unknown payee " + in.To, nil
		}
		return true, "", nil
	})

	o := provider.Options{Concurrency: n, Approver: approver}
	out, err := provider.RunCalls(ctx, "test", tools, calls, o, tools.Execute, func(oc provider.Outcome) (provider.Outcome, error) { return oc, nil })
	require.NoError(t, err)
	for i, o := range out {
		assert.Equal(t, 1, asked[calls[i].ID], "asked once: %s", calls[i].ID)
		payee := fmt.Sprintf("payee%d", i)
		if i == 3 || i == 6 {
			assert.True(t, o.IsError)
			assert.Equal(t, `the call of tool "pay" was denied by a human: unknown payee `+payee, o.Message)
			assert.Zero(t, paid[payee], "a refused call never runs")
			continue
		}
		assert.False(t, o.IsError, o.Message)
		assert.Equal(t, "paid "+payee, o.Result)
		assert.Equal(t, 1, paid[payee], "an approved call runs once")
	}
}
