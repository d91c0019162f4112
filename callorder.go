package toolset

import "slices"

// WithSequential makes the tool's calls run in the model's order, each
// alone: when one model turn asks for several calls at once, a call of
// the tool waits for every call the model asked for before it, and every
// call after it waits for it. Give it to tools whose effects depend on
// what ran before them, or that must not overlap anything (a deploy, a
// payment). [ToolList.CallOrder] says what waits for what, and the
// provider adapters follow it.
func WithSequential() ToolOption {
	return func(t *Tool) { t.core.sequential, t.core.sequentialBy = true, "" }
}

// WithResource declares the resources the tool's calls use (a file, an
// account, a database table; names of the program's choosing): of one
// model turn's calls, those that share a resource run one at a time, in
// the model's order, and the others at once. See [ToolList.CallOrder].
func WithResource(names ...string) ToolOption {
	return func(t *Tool) {
		for _, n := range names {
			if n != "" && !slices.Contains(t.core.resources, n) {
				t.core.resources = append(t.core.resources, n)
			}
		}
	}
}

// CallOrder returns what each of calls, one model turn's calls in the
// model's order, must wait for before it runs: after[i] lists the indexes
// of earlier calls that must have finished, in increasing order. A call of
// a tool made [WithSequential] waits for every earlier call, and every
// later call waits for it; a call that shares a resource ([WithResource])
// with an earlier one waits for the latest such call. Calls of names the
// list does not offer wait for nothing but a sequential call before them.
// CallOrder returns nil when every call may run at once.
//
// The provider adapters run a turn's calls in this order, at most their
// concurrency at a time; a program that runs calls itself can do the same.
func (ts *ToolList) CallOrder(calls []ToolCall) (after [][]int) {
	lastSeq := -1
	var lastRes map[string]int
	for i, call := range calls {
		t, ok := ts.Lookup(call.Name)
		var c *toolCore
		if ok {
			c = t.core
		}
		var deps []int
		switch {
		case c != nil && c.sequential:
			for j := max(lastSeq, 0); j < i; j++ {
				deps = append(deps, j)
			}
			lastSeq = i
		default:
			if lastSeq >= 0 {
				deps = append(deps, lastSeq)
			}
			if c != nil {
				for _, r := range c.resources {
					if j, ok := lastRes[r]; ok && j > lastSeq && !slices.Contains(deps, j) {
						deps = append(deps, j)
					}
				}
			}
			slices.Sort(deps)
		}
		if c != nil && len(c.resources) > 0 {
			if lastRes == nil {
				lastRes = make(map[string]int)
			}
			for _, r := range c.resources {
				lastRes[r] = i
			}
		}
		if len(deps) > 0 {
			if after == nil {
				after = make([][]int, len(calls))
			}
			after[i] = deps
		}
	}
	return after
}
