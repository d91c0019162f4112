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
	core     *toolCore // the tool it was last counted or restored for, whose name saving uses
}

// budgetKey is what a failure budget belongs to in a run: the tool's
// name and origin when it has an origin (see [WithOrigin]), so that a tool
// made again (an MCP server's, announced anew) keeps the budget of the one
// before, and otherwise its core, so that copies share it.
type budgetKey struct {
	core         *toolCore
	origin, name string
}

func (c *toolCore) budgetKey() budgetKey {
	if c.origin != "" {
		return budgetKey{origin: c.origin, name: c.name}
	}
	return budgetKey{core: c}
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
		ar *ApprovalRequiredError
	)
	if errors.As(err, &ar) {
		return false // a call waiting for a human, as a remote tool's may, has not failed
	}
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
		p.counts = make(map[budgetKey]*failureCount)
	}
	s.identify(t, name)
	s.markDirty()
	k := c.budgetKey()
	f, ok := p.counts[k]
	if !ok {
		p.counts[k] = &failureCount{lastStep: step, steps: 1, core: c}
		return
	}
	if f.core != c && (s.durable == nil || s.durable.ids[c] != (toolID{})) {
		f.core = c // named as the tool that failed last
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
	f, ok := s.parts.failures.counts[c.budgetKey()]
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
	if f, ok := s.parts.failures.counts[c.budgetKey()]; ok {
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
// the run each tool failed in, by its budget key. Its section of the
// saved state lists each counted tool once, sorted by name, schema hash
// and origin:
//
//	"failures": [{"tool": "lookup", "schema": "sha256:...", "steps": 2, "last_step": 3},
//	             {"tool": "search", "schema": "sha256:...", "origin": "mcp:web", "steps": 1, "last_step": 0}]
//
// An entry of a tool with no origin is keyed by its name and schema, and
// binds to a tool of that name and schema. One of a tool with an origin
// ([WithOrigin]) is keyed by its name and origin, and binds to a tool of
// that name and origin whatever its schema: a server that announced the
// tool again with another schema has not given it a fresh budget; its
// "schema" is that of the tool last counted. Two tools of one key (a tool
// made anew each turn, say) are saved as one entry, the one with the most
// failing steps; a state that lists a key twice is refused, as no version
// saves it.
type failurePart struct {
	counts map[budgetKey]*failureCount
}

type savedFailure struct {
	Tool     string `json:"tool"`
	Schema   string `json:"schema"`
	Origin   string `json:"origin,omitempty"`
	Steps    int    `json:"steps"`
	LastStep int    `json:"last_step"`
}

// id is the key of the entry in saved state.
func (f savedFailure) id() toolID {
	if f.Origin != "" {
		return toolID{name: f.Tool, origin: f.Origin}
	}
	return toolID{name: f.Tool, schema: f.Schema}
}

// restoredFailure is a saved count waiting for its tool.
type restoredFailure struct {
	steps, lastStep int
	schema          string
}

// outweighs reports whether a, rather than b, stands for their key: it
// counts more failing steps, or as many and a later one, or is first by
// schema, so that the choice does not depend on an order.
func (a savedFailure) outweighs(b savedFailure) bool {
	return cmp.Or(cmp.Compare(a.Steps, b.Steps), cmp.Compare(a.LastStep, b.LastStep), cmp.Compare(b.Schema, a.Schema)) > 0
}

func (*failurePart) key() string { return "failures" }

func (p *failurePart) save(sv saving) any {
	byID := make(map[toolID]savedFailure)
	add := func(f savedFailure) {
		if old, ok := byID[f.id()]; !ok || f.outweighs(old) {
			byID[f.id()] = f
		}
	}
	for _, f := range p.counts {
		if id, ok := sv.name(f.core); ok {
			add(savedFailure{Tool: id.name, Schema: id.schema, Origin: f.core.origin, Steps: f.steps, LastStep: f.lastStep})
		}
	}
	for id, v := range sv.restored(p) {
		f := v.(restoredFailure)
		add(savedFailure{Tool: id.name, Schema: f.schema, Origin: id.origin, Steps: f.steps, LastStep: f.lastStep})
	}
	if len(byID) == 0 {
		return nil
	}
	out := make([]savedFailure, 0, len(byID))
	for _, f := range byID {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b savedFailure) int {
		return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Schema, b.Schema), cmp.Compare(a.Origin, b.Origin))
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
		id := f.id()
		if _, dup := seen[id]; dup {
			return fmt.Errorf("failures[%d]: tool %q is counted twice", i, boundName(f.Tool))
		}
		seen[id] = struct{}{}
		r.wait(p, id, restoredFailure{steps: f.Steps, lastStep: f.LastStep, schema: f.Schema})
	}
	return nil
}

func (p *failurePart) bind(c *toolCore, v any) bool {
	f := v.(restoredFailure)
	if p.counts == nil {
		p.counts = make(map[budgetKey]*failureCount)
	}
	k := c.budgetKey()
	if old, ok := p.counts[k]; !ok || old.steps < f.steps {
		p.counts[k] = &failureCount{steps: f.steps, lastStep: f.lastStep, core: c}
	}
	return true
}
