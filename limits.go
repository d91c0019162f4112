package toolset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"
)

// CallLimits bound the tool calls of a run, hard: a model that loops, or
// a prompt that makes it, cannot run a tool more often than the program
// allows. A zero field sets no bound.
//
// Every call of a tool counts, whatever its outcome, under the name it was
// called by; a call of a name the turn does not offer does not. Once a
// bound is reached, further calls it covers are not run: in the step in
// which the bound was reached, each is refused with a [*CallLimitError]
// the model sees ([ModelError]), which tells it to answer without them;
// in any later step, with the same error as one that stops the run (see
// [CallLimitError.Stop]), since the model was told and called again.
//
// The counts are the run's: a child run ([RunContext.NewChild]) has the
// same bounds and counts of its own, and a run made with [ResumeRun]
// saves them with its state (in "limits").
type CallLimits struct {
	// Calls bounds the calls of the run, all tools together.
	Calls int
	// PerTool bounds the calls of each tool in the run; a tool's own
	// bound ([WithCallLimit]) applies as well.
	PerTool int
	// Failures bounds the calls of the run that fail, for any reason.
	Failures int
}

// WithCallLimits bounds the run's tool calls; see [CallLimits]. Negative
// fields count as zero.
func WithCallLimits(l CallLimits) RunOption {
	return func(c *runConfig) {
		l.Calls, l.PerTool, l.Failures = max(l.Calls, 0), max(l.PerTool, 0), max(l.Failures, 0)
		if l == (CallLimits{}) {
			c.limits = nil
			return
		}
		c.limits = &l
	}
}

// WithCallLimit bounds the tool's calls in each run to n, as
// [CallLimits.PerTool] does for every tool of a run; n ≤ 0 sets no bound.
// Every copy of the tool shares it; the count is by the name the tool is
// called by.
func WithCallLimit(n int) ToolOption {
	return func(t *Tool) { t.core.callLimit = max(n, 0) }
}

// CallLimitError reports a call not run because a bound of the run's calls
// was reached ([CallLimits], [WithCallLimit]). In the step in which the
// bound was reached it is for the model: its ModelText tells the model to
// go on without the call. In a later step, Stop is true and the error
// should stop the run: [ErrorText] reports false for it.
type CallLimitError struct {
	// Tool is the name the model called.
	Tool string
	// Limit names the bound: "calls" (of the run), "tool calls" (of
	// this tool) or "failures" (of the run).
	Limit string
	// Max is the bound.
	Max int
	// Stop reports a call made after the model was told of the bound, in
	// a later step: the run should stop.
	Stop bool
}

// Error implements error.
func (e *CallLimitError) Error() string {
	if e.Stop {
		return fmt.Sprintf("toolset: tool %q called after the run's %s: the run must stop", e.Tool, e.bound())
	}
	return "toolset: " + e.text()
}

func (e *CallLimitError) bound() string {
	switch e.Limit {
	case "tool calls":
		return fmt.Sprintf("limit of %d calls of this tool was reached", e.Max)
	case "failures":
		return fmt.Sprintf("limit of %d failed tool calls was reached", e.Max)
	default:
		return fmt.Sprintf("limit of %d tool calls was reached", e.Max)
	}
}

func (e *CallLimitError) text() string {
	if e.Limit == "tool calls" {
		return fmt.Sprintf("tool %q was not called: the %s; do without it", e.Tool, e.bound())
	}
	return fmt.Sprintf("tool %q was not called: the %s; answer with what you have, without calling tools", e.Tool, e.bound())
}

// As lets errors.As find a [ModelError] in the error only while it is
// for the model, so that [ErrorText] reports false once Stop is set.
func (e *CallLimitError) As(target any) bool {
	if me, ok := target.(*ModelError); ok && !e.Stop {
		*me = callLimitText{e}
		return true
	}
	return false
}

// callLimitText is a CallLimitError for the model.
type callLimitText struct{ *CallLimitError }

// ModelText implements [ModelError].
func (e callLimitText) ModelText() string { return e.text() }

// limited reports whether calls under rc or of c are bounded.
func (c *toolCore) limited(rc *RunContext) bool {
	return c.callLimit > 0 || rc != nil && rc.st != nil && rc.st.limits != nil
}

// admitCall counts a call of the tool c by name in the run, or returns the
// *CallLimitError that refuses it. A call made without a run is not
// bounded.
func (rc *RunContext) admitCall(c *toolCore, name string) error {
	s := rc.state()
	if s == nil {
		return nil
	}
	name = bound(name, maxLimitName)
	step := rc.currentStep()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended.Load() {
		return nil // the call fails as a call of an ended run
	}
	p := &s.parts.limits
	refuse := func(limit string, bound int) error {
		at, ok := p.reached[limit]
		if !ok {
			if p.reached == nil {
				p.reached = make(map[string]int)
			}
			p.reached[limit], at = step, step
			s.markDirty()
		}
		return &CallLimitError{Tool: name, Limit: limit, Max: bound, Stop: at != step}
	}
	if l := s.limits; l != nil {
		if l.Calls > 0 && p.calls >= l.Calls {
			return refuse("calls", l.Calls)
		}
		if l.Failures > 0 && p.failures >= l.Failures {
			return refuse("failures", l.Failures)
		}
	}
	perTool := c.callLimit
	if l := s.limits; l != nil && l.PerTool > 0 && (perTool == 0 || l.PerTool < perTool) {
		perTool = l.PerTool
	}
	if perTool > 0 && p.tools[name] >= perTool {
		return refuseTool(p, s, name, perTool, step)
	}
	p.calls++
	if perTool > 0 {
		if p.tools == nil {
			p.tools = make(map[string]int)
		}
		if len(p.tools) < maxLimitedTools || p.tools[name] > 0 {
			p.tools[name]++
		}
	}
	s.markDirty()
	return nil
}

// refuseTool refuses a call of the tool name over its bound; each tool's
// bound is reached in a step of its own.
func refuseTool(p *limitPart, s *runState, name string, bound, step int) error {
	at, ok := p.toolReached[name]
	if !ok {
		if p.toolReached == nil {
			p.toolReached = make(map[string]int)
		}
		if len(p.toolReached) < maxLimitedTools {
			p.toolReached[name] = step
		}
		at = step
		s.markDirty()
	}
	return &CallLimitError{Tool: name, Limit: "tool calls", Max: bound, Stop: at != step}
}

// callFailed counts a failed call in the run, when its calls are bounded.
func (rc *RunContext) callFailed() {
	s := rc.state()
	if s == nil || s.limits == nil || s.limits.Failures == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parts.limits.failures++
	s.markDirty()
}

// maxLimitedTools bounds the tools a run counts the calls of by name, and
// maxLimitName the bytes of a name it counts them by.
const (
	maxLimitedTools = 4096
	maxLimitName    = 256
)

// limitPart is the run's counts of calls for its bounds. Its section of
// the saved state:
//
//	"limits": {"calls": 12, "failures": 1, "tools": {"lookup": 3},
//	           "reached": {"calls": 4}, "tool_reached": {"lookup": 4}}
//
// where reached and tool_reached give the step in which a bound was
// reached.
type limitPart struct {
	calls, failures int
	tools           map[string]int
	reached         map[string]int // by the bound's name, the step it was reached in
	toolReached     map[string]int // by tool name
}

type limitSection struct {
	Calls       int            `json:"calls,omitempty"`
	Failures    int            `json:"failures,omitempty"`
	Tools       map[string]int `json:"tools,omitempty"`
	Reached     map[string]int `json:"reached,omitempty"`
	ToolReached map[string]int `json:"tool_reached,omitempty"`
}

func (*limitPart) key() string { return "limits" }

func (p *limitPart) save(saving) any {
	if p.calls == 0 && p.failures == 0 && len(p.tools) == 0 && len(p.reached) == 0 && len(p.toolReached) == 0 {
		return nil
	}
	return &limitSection{Calls: p.calls, Failures: p.failures, Tools: maps.Clone(p.tools),
		Reached: maps.Clone(p.reached), ToolReached: maps.Clone(p.toolReached)}
}

func (*limitPart) section() any { return new(limitSection) }

// restore checks the counts of a saved state and keeps them.
func (p *limitPart) restore(v any, r *restoring) error {
	sec := v.(*limitSection)
	if sec.Calls < 0 || sec.Failures < 0 {
		return fmt.Errorf("limits: negative counts")
	}
	for _, m := range []struct {
		what string
		m    map[string]int
	}{{"tools", sec.Tools}, {"tool_reached", sec.ToolReached}, {"reached", sec.Reached}} {
		if len(m.m) > maxLimitedTools {
			return fmt.Errorf("limits: %s: %d entries, more than the %d a run keeps", m.what, len(m.m), maxLimitedTools)
		}
		for _, k := range slices.Sorted(maps.Keys(m.m)) {
			n := m.m[k]
			switch {
			case k == "" || len(k) > maxLimitName || !utf8.ValidString(k):
				return fmt.Errorf("limits: %s: %q is not a name", m.what, boundName(k))
			case n < 0 || m.what != "tools" && n > r.step:
				return fmt.Errorf("limits: %s[%q]: %d is out of range", m.what, boundName(k), n)
			}
		}
	}
	for k := range sec.Reached {
		if k != "calls" && k != "failures" {
			return fmt.Errorf("limits: reached: %q is not a bound", boundName(k))
		}
	}
	p.calls, p.failures, p.tools, p.reached, p.toolReached = sec.Calls, sec.Failures, sec.Tools, sec.Reached, sec.ToolReached
	return nil
}

// executeRecorded is execute for a call whose run or tool bounds its
// calls, or whose run keeps a journal: a call the journal holds returns
// what it returned before; another is counted, or refused, before it
// runs, its failure counted after and its outcome journaled.
func (t Tool) executeRecorded(ctx context.Context, call ToolCall, rc *RunContext, ob *callObs) (any, error) {
	if err := runUsable(call.Name, rc); err != nil {
		return nil, err
	}
	var ticket *journalTicket
	if rc.journaling() {
		res, replay, tk, err := rc.journalBegin(ctx, t, call)
		if replay {
			if rc.hasStore() {
				return rc.saveAfterCall(ctx, call.Name, res, err)
			}
			return res, err
		}
		ticket = tk
	}
	if t.core.limited(rc) {
		if err := rc.admitCall(t.core, call.Name); err != nil {
			if ticket != nil {
				rc.journalForget(ticket.id, ticket.e)
			}
			if rc.hasStore() {
				return rc.saveAfterCall(ctx, call.Name, nil, err)
			}
			return nil, err
		}
	}
	if ticket != nil {
		// A handler that ends its goroutine (runtime.Goexit) unwinds past
		// journalEnd: the call is forgotten, not left running.
		defer rc.journalAbandon(ticket)
	}
	res, err := t.executeIn(ctx, call, rc, ob)
	if err != nil && rc.state().limits != nil {
		rc.callFailed()
	}
	rc.journalEnd(ticket, res, err)
	if rc.hasStore() {
		return rc.saveAfterCall(ctx, call.Name, res, err)
	}
	return res, err
}
