package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gotoolset/toolset"
)

// held is the result of a call an agent loop holds back: one waiting for
// approval, or one ordered after such a call.
type held struct{}

// RunPausing runs calls as [RunCalls] does, for an agent loop that pauses
// for approval. Without an approver, a call waiting for approval does not
// stop the others: it and the calls ordered after it are held back, the
// other calls run, and RunPausing returns the results of the calls that
// ran, in call order, with the first held call's
// [*toolset.ApprovalRequiredError] in a [*CallError], so that a resumed
// loop runs only the held calls. With an approver, or calls without
// unique IDs (which cannot be approved), it is RunCalls.
func RunPausing[R any](ctx context.Context, pkg string, tools *toolset.ToolList, calls []toolset.ToolCall, o Options, exec Exec, conv func(Outcome) (R, error)) (results []R, ran []bool, err error) {
	index := make(map[string]int, len(calls))
	for i, c := range calls {
		if _, dup := index[c.ID]; dup || c.ID == "" {
			index = nil
			break
		}
		index[c.ID] = i
	}
	if o.Approver != nil || index == nil {
		results, err = RunCalls(ctx, pkg, tools, calls, o, exec, conv)
		if err != nil {
			return nil, nil, err
		}
		ran = make([]bool, len(calls))
		for i := range ran {
			ran[i] = true
		}
		return results, ran, nil
	}
	// The order is needed one call at a time too: a call ordered after a
	// held one is held with it, not run ahead of it.
	var after [][]int
	if tools != nil && len(calls) > 1 {
		after = tools.CallOrder(calls)
	}
	var mu sync.Mutex
	paused := make([]bool, len(calls))
	needs := make([]error, len(calls))
	pausing := func(ctx context.Context, call toolset.ToolCall) (any, error) {
		i := index[call.ID]
		mu.Lock()
		if after != nil {
			for _, j := range after[i] {
				if j >= 0 && j < i && paused[j] {
					paused[i] = true
					mu.Unlock()
					return held{}, nil
				}
			}
		}
		mu.Unlock()
		res, err := exec(ctx, call)
		if need := (*toolset.ApprovalRequiredError)(nil); errors.As(err, &need) {
			mu.Lock()
			paused[i], needs[i] = true, err
			mu.Unlock()
			return held{}, nil
		}
		return res, err
	}
	outcomes, err := run(ctx, calls, o.Concurrency, after, pausing)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", pkg, err)
	}
	ran = make([]bool, len(calls))
	var pause error
	for i, oc := range outcomes {
		if paused[i] {
			if pause == nil && needs[i] != nil {
				pause = fmt.Errorf("%s: %w", pkg, &CallError{Call: calls[i], Err: needs[i]})
			}
			continue
		}
		r, err := conv(oc)
		if err != nil {
			return nil, nil, convError(pkg, oc.Call, err)
		}
		results, ran[i] = append(results, r), true
	}
	return results, ran, pause
}
