package toolset

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// WithMaxFailures gives the tool a budget of failing steps per run: once
// calls of the tool have failed in n steps of a run, the tool is spent for
// that run. A step counts once however many of its calls fail (parallel
// calls, say). A failure is an argument error, a handler error (including
// [NewModelError]), a panic, or a timeout shown to the model; none of them
// is retried by the tool itself, the model decides whether to call again.
// A spent tool leaves the run's later tool lists, or stays in them marked
// unavailable when the run asked for a stable list ([WithStableToolList]),
// and calls of it are refused with an [*UnavailableToolError].
//
// n must be at least 1; [Tool.Err] reports a smaller one. Without this
// option a tool's failures are not counted.
func WithMaxFailures(n int) ToolOption {
	return func(t *Tool) {
		if n < 1 {
			if t.core.err == nil {
				t.core.err = fmt.Errorf("WithMaxFailures(%d): the budget must be at least 1", n)
			}
			return
		}
		t.core.maxFailures = n
	}
}

// unavailablePrefix marks a spent tool's description in a stable list.
const unavailablePrefix = "[UNAVAILABLE] "

// UnavailableToolError reports a call of a tool that exists but may not
// run now: a deferred tool not yet revealed by a tool search, or a tool
// whose failure budget is spent. The model sees it.
type UnavailableToolError struct {
	// Tool is the name the model called.
	Tool string
	// Reason says why.
	Reason string
}

// Error implements error.
func (e *UnavailableToolError) Error() string { return "toolset: " + e.ModelText() }

// ModelText implements [ModelError].
func (e *UnavailableToolError) ModelText() string {
	return fmt.Sprintf("tool %q is not available: %s", e.Tool, e.Reason)
}

type failureCount struct {
	lastStep int
	steps    int
}

// countsAsFailure reports whether err counts against a failure budget. An error whose
// Unwrap or As method panics does.
func countsAsFailure(err error) (yes bool) {
	defer func() {
		if recover() != nil {
			yes = true
		}
	}()
	var (
		ae *ArgumentError
		te *ToolError
		pe *PanicError
		to *TimeoutError
	)
	return errors.As(err, &ae) || errors.As(err, &te) || errors.As(err, &pe) || errors.As(err, &to)
}

// recordFailure counts a failure of t, called as name, in the run's
// current step.
func (rc *RunContext) recordFailure(t Tool, name string) {
	c := t.core
	s := rc.state()
	if s == nil {
		return
	}
	step := rc.currentStep()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended.Load() {
		return
	}
	p := &s.parts.failures
	if p.counts == nil {
		p.counts = make(map[*toolCore]*failureCount)
	}
	s.identify(t, name)
	s.markDirty()
	f, ok := p.counts[c]
	if !ok {
		p.counts[c] = &failureCount{lastStep: step, steps: 1}
		return
	}
	if f.lastStep != step {
		f.lastStep = step
		f.steps++
	}
}

// budgetSpent reports whether c has failed in as many steps of the run as
// its budget allows.
func (rc *RunContext) budgetSpent(c *toolCore) bool {
	s := rc.state()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.parts.failures.counts[c]
	return ok && f.steps >= c.maxFailures
}

// hasFailures reports whether any tool failed in the run, so BuildTools can
// skip the budget checks of a healthy run.
func (rc *RunContext) hasFailures() bool {
	s := rc.state()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.parts.failures.counts) > 0
}

// failuresLeft returns how many failing steps of the run are left of c's
// budget.
func (rc *RunContext) failuresLeft(c *toolCore) int {
	s := rc.state()
	if s == nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	steps := 0
	if f, ok := s.parts.failures.counts[c]; ok {
		steps = f.steps
	}
	return max(c.maxFailures-steps, 0)
}

// WithStableToolList asks BuildTools to keep tools whose failure budget is
// spent in the run's tool lists, marked unavailable, instead of dropping
// them, so the list (and a provider's prompt cache) stays the same across
// turns.
func WithStableToolList() RunOption {
	return func(c *runConfig) { c.stable = true }
}

// stableList reports whether the run asked for a stable tool list.
func (rc *RunContext) stableList() bool {
	s := rc.state()
	return s != nil && s.stable
}

// currentStep is the step a failure under rc counts in: the turn's, or the
// run's latest.
func (rc *RunContext) currentStep() int { return rc.Step() }

// failurePart is the run's part of the failure budget: how many steps of
// the run each tool failed in. Its section of the saved state lists each
// counted tool once, sorted by name and schema hash:
//
//	"failures": [{"tool": "lookup", "schema": "sha256:...", "steps": 2, "last_step": 3}]
type failurePart struct {
	counts map[*toolCore]*failureCount
}

type savedFailure struct {
	Tool     string `json:"tool"`
	Schema   string `json:"schema"`
	Steps    int    `json:"steps"`
	LastStep int    `json:"last_step"`
}

func (*failurePart) key() string { return "failures" }

func (p *failurePart) save(sv saving) any {
	var out []savedFailure
	for c, f := range p.counts {
		if id, ok := sv.name(c); ok {
			out = append(out, savedFailure{Tool: id.name, Schema: id.schema, Steps: f.steps, LastStep: f.lastStep})
		}
	}
	for id, v := range sv.restored(p) {
		f := v.(failureCount)
		out = append(out, savedFailure{Tool: id.name, Schema: id.schema, Steps: f.steps, LastStep: f.lastStep})
	}
	slices.SortFunc(out, func(a, b savedFailure) int {
		return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Schema, b.Schema))
	})
	return out
}

func (*failurePart) section() any { return new([]savedFailure) }

func (p *failurePart) restore(v any, r *restoring) error {
	saved := *v.(*[]savedFailure)
	seen := make(map[toolID]struct{}, len(saved))
	for i, f := range saved {
		if f.Steps < 1 || f.LastStep < -1 || f.LastStep > r.step {
			return fmt.Errorf("failures[%d]: %d steps, the last %d, in a run at step %d", i, f.Steps, f.LastStep, r.step)
		}
		id := toolID{f.Tool, f.Schema}
		if _, dup := seen[id]; dup {
			return fmt.Errorf("failures[%d]: tool %q is counted twice", i, boundName(f.Tool))
		}
		seen[id] = struct{}{}
		r.wait(p, id, failureCount{steps: f.Steps, lastStep: f.LastStep})
	}
	return nil
}

func (p *failurePart) bind(c *toolCore, v any) bool {
	f := v.(failureCount)
	if p.counts == nil {
		p.counts = make(map[*toolCore]*failureCount)
	}
	if old, ok := p.counts[c]; !ok || old.steps < f.steps {
		p.counts[c] = &f
	}
	return true
}
