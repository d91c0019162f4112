package adktoolset

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/gotoolset/toolset"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolutils"
	"google.golang.org/genai"
)

// DefaultMaxRuns (1024) is how many runs a [Toolset] keeps live at once
// unless [WithMaxRuns] says otherwise.
const DefaultMaxRuns = 1024

// DeniedReason is what the model is told of a call the user rejected
// through ADK's confirmation.
const DeniedReason = "the user rejected the call"

// ErrStopped is the error ADK records as the function response of a call
// whose error stopped the run, and of the calls after it; the error
// itself, a [*StopError], is not sent to the model.
var ErrStopped = errors.New("adktoolset: the call failed and stopped the run")

// Option configures a [Toolset].
type Option func(*config)

type config struct {
	stateKeys []string
	runOpts   func(agent.ReadonlyContext) []toolset.RunOption
	maxRuns   int
}

// WithStateKeys carries the session state values under the given keys
// into each run's values by the same name, read in the toolsets with
// [toolset.RunContext.Value] or with a [toolset.Key] of that name and the
// value's type (a string set in the state is read by a Key[string]). The
// values are those of the session when the run begins, at the first step
// of the invocation; a key the state does not have gives no value.
func WithStateKeys(keys ...string) Option {
	return func(c *config) { c.stateKeys = append(c.stateKeys, keys...) }
}

// WithRunOptions gives each new run the options fn returns for the
// invocation that begins it: typed values read from the session state
// ([toolset.WithValue]), the application's dependencies
// ([toolset.WithDeps]), and so on. A panic of fn is an error of the step.
func WithRunOptions(fn func(ctx agent.ReadonlyContext) []toolset.RunOption) Option {
	return func(c *config) { c.runOpts = fn }
}

// WithMaxRuns bounds the number of runs the Toolset keeps live (n < 1
// means [DefaultMaxRuns]). When a new invocation needs a run beyond the
// bound, the run of the invocation least recently used is ended.
func WithMaxRuns(n int) Option {
	return func(c *config) { c.maxRuns = n }
}

// Toolset is an ADK [tool.Toolset] made of the library's toolsets. Give it
// to an agent in llmagent.Config.Toolsets. Its methods are safe for
// concurrent use.
type Toolset struct {
	name    string
	entries []toolset.Toolset
	cfg     config

	mu   sync.Mutex
	runs map[string]*list.Element // invocation ID to *invocation
	lru  list.List                // front: most recently used
}

// invocation is the library run of one ADK invocation and its current
// turn.
type invocation struct {
	id  string
	run *toolset.RunContext

	mu    sync.Mutex
	tools *toolset.ToolList // the current turn's, nil before the first
	turn  context.Context   // the current turn's context
	fresh bool              // tools built by Tools and not yet offered
	err   error             // the error that stopped the run
}

var (
	_ tool.Toolset = (*Toolset)(nil)
	_ interface {
		ProcessRequest(agent.Context, *model.LLMRequest) error
	} = (*Toolset)(nil)
)

// New returns a Toolset named name offering the tools of entries. Each
// model step of an invocation is one turn of a library run that lives as
// long as the invocation (see the package documentation). The name is part
// of the run IDs, so two Toolsets that serve one invocation need names of
// their own: runs of one ID conflict ([*toolset.RunConflictError]).
func New(name string, entries []toolset.Toolset, opts ...Option) *Toolset {
	ts := &Toolset{name: name, entries: entries, runs: make(map[string]*list.Element)}
	for _, o := range opts {
		if o != nil {
			o(&ts.cfg)
		}
	}
	if ts.cfg.maxRuns < 1 {
		ts.cfg.maxRuns = DefaultMaxRuns
	}
	return ts
}

// Name implements [tool.Toolset].
func (ts *Toolset) Name() string { return ts.name }

// Tools implements [tool.Toolset]. ADK asks once per agent run of an
// invocation; Tools begins a turn of the invocation's run and returns its
// tools, which the first model step offers. The tools it returns declare
// nothing to the model themselves: every step's tools are declared by the
// Toolset's ProcessRequest.
func (ts *Toolset) Tools(ctx agent.ReadonlyContext) ([]tool.Tool, error) {
	inv, err := ts.invocation(ctx)
	if err != nil {
		return nil, err
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	tl, err := inv.begin(ctx, ctx.AgentName(), ts.entries)
	if err != nil {
		return nil, ts.stepError(err)
	}
	inv.fresh = true
	out := make([]tool.Tool, 0, tl.Len())
	for t := range tl.All() {
		out = append(out, &adkTool{ts: ts, t: t})
	}
	return out, nil
}

// ProcessRequest declares the tools of the step about to call the model.
// ADK calls it once per model step; each step but the one that follows
// Tools begins a new turn of the invocation's run, so that a tool a search
// revealed is offered from the next step on.
func (ts *Toolset) ProcessRequest(ctx agent.Context, req *model.LLMRequest) error {
	inv, err := ts.invocation(ctx)
	if err != nil {
		return err
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	tl := inv.tools
	if !inv.fresh || tl == nil {
		tl, err = inv.begin(ctx, ctx.AgentName(), ts.entries)
		if err != nil {
			return ts.stepError(err)
		}
	}
	inv.fresh = false
	text, err := toolset.Instructions(inv.turn, ts.entries...)
	if err != nil {
		return ts.stepError(err)
	}
	appendInstructions(req, text)
	var errs []error
	for t := range tl.All() {
		at := &adkTool{ts: ts, t: t}
		if _, err := at.declaration(); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := toolutils.PackTool(req, at); err != nil {
			errs = append(errs, fmt.Errorf("adktoolset: toolset %q: tool %q: %w", ts.name, t.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (ts *Toolset) stepError(err error) error {
	var se *StopError
	if errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("adktoolset: toolset %q: %w", ts.name, err)
}

// begin begins a turn of the run and builds its tools; inv.mu is held.
func (inv *invocation) begin(ctx context.Context, agentName string, entries []toolset.Toolset) (*toolset.ToolList, error) {
	if inv.err != nil {
		return nil, inv.err
	}
	if err := inv.run.Err(); err != nil {
		return nil, err
	}
	tc := inv.run.Turn(ctx)
	tl, err := toolset.BuildTools(tc, agentName, entries...)
	if err != nil {
		return nil, err
	}
	inv.tools, inv.turn = tl, tc
	return tl, nil
}

// invocation returns the run of ctx's invocation, beginning it if need be.
func (ts *Toolset) invocation(ctx agent.ReadonlyContext) (*invocation, error) {
	id := ctx.InvocationID()
	ts.mu.Lock()
	if e, ok := ts.runs[id]; ok {
		ts.lru.MoveToFront(e)
		ts.mu.Unlock()
		return e.Value.(*invocation), nil
	}
	ts.mu.Unlock()

	opts, err := ts.runOptions(ctx)
	if err != nil {
		return nil, err
	}

	ts.mu.Lock()
	defer ts.mu.Unlock()
	if e, ok := ts.runs[id]; ok { // begun meanwhile
		ts.lru.MoveToFront(e)
		return e.Value.(*invocation), nil
	}
	inv := &invocation{id: id, run: toolset.NewRun(ts.name+"/"+id, opts...)}
	ts.runs[id] = ts.lru.PushFront(inv)
	for ts.lru.Len() > ts.cfg.maxRuns {
		old := ts.lru.Back()
		ts.lru.Remove(old)
		o := old.Value.(*invocation)
		delete(ts.runs, o.id)
		o.run.End()
	}
	return inv, nil
}

// runOptions returns the options of a new run for ctx's invocation.
func (ts *Toolset) runOptions(ctx agent.ReadonlyContext) (opts []toolset.RunOption, err error) {
	if len(ts.cfg.stateKeys) > 0 {
		if st := ctx.ReadonlyState(); st != nil {
			vals := make(map[string]any, len(ts.cfg.stateKeys))
			for _, k := range ts.cfg.stateKeys {
				if v, err := st.Get(k); err == nil {
					vals[k] = v
				}
			}
			opts = append(opts, toolset.WithValues(vals))
		}
	}
	if ts.cfg.runOpts != nil {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("adktoolset: toolset %q: the run options function panicked: %v", ts.name, p)
			}
		}()
		opts = append(opts, ts.cfg.runOpts(ctx)...)
	}
	return opts, nil
}

// lookup returns the live run of the invocation id, or nil.
func (ts *Toolset) lookup(id string) *invocation {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if e, ok := ts.runs[id]; ok {
		return e.Value.(*invocation)
	}
	return nil
}

// Run returns the library run of the invocation id, or nil when the
// Toolset has no live run for it. Use it to read what the run recorded, or
// to record an approval decision ([toolset.RunContext.RecordApproval])
// outside ADK's confirmation.
func (ts *Toolset) Run(invocationID string) *toolset.RunContext {
	if inv := ts.lookup(invocationID); inv != nil {
		return inv.run
	}
	return nil
}

// Err returns the [*StopError] that stopped the run of the invocation id,
// or nil when no call stopped it or the Toolset has no live run for it.
func (ts *Toolset) Err(invocationID string) error {
	inv := ts.lookup(invocationID)
	if inv == nil {
		return nil
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.err
}

// End ends the run of the invocation id, if the Toolset has one. Call it
// when the invocation is over for good: a run paused for a confirmation
// should stay live until the confirmation's answer resumes it.
func (ts *Toolset) End(invocationID string) {
	ts.mu.Lock()
	e, ok := ts.runs[invocationID]
	if ok {
		ts.lru.Remove(e)
		delete(ts.runs, invocationID)
	}
	ts.mu.Unlock()
	if ok {
		e.Value.(*invocation).run.End()
	}
}

// Close ends every run of the Toolset. The Toolset stays usable: a later
// invocation begins a new run. Close does not close the library toolsets,
// which belong to whoever made them.
func (ts *Toolset) Close() error {
	ts.mu.Lock()
	var runs []*toolset.RunContext
	for e := ts.lru.Front(); e != nil; e = e.Next() {
		runs = append(runs, e.Value.(*invocation).run)
	}
	ts.runs = make(map[string]*list.Element)
	ts.lru.Init()
	ts.mu.Unlock()
	for _, r := range runs {
		r.End()
	}
	return nil
}

// adkTool is one library tool offered to ADK. Its calls run through the
// current turn of the invocation they are made in.
type adkTool struct {
	ts *Toolset
	t  toolset.Tool
}

// Name implements [tool.Tool].
func (a *adkTool) Name() string { return a.t.Name }

// Description implements [tool.Tool].
func (a *adkTool) Description() string { return a.t.Description }

// IsLongRunning implements [tool.Tool]: false.
func (a *adkTool) IsLongRunning() bool { return false }

// Declaration returns the function declaration the model is sent, with
// the tool's parameter schema as JSON Schema.
func (a *adkTool) Declaration() *genai.FunctionDeclaration {
	d, _ := a.declaration()
	return d
}

func (a *adkTool) declaration() (*genai.FunctionDeclaration, error) {
	raw, err := a.t.ParametersJSON()
	if err != nil {
		return nil, fmt.Errorf("adktoolset: tool %q: parameter schema: %w", a.t.Name, err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, fmt.Errorf("adktoolset: tool %q: parameter schema: %w", a.t.Name, err)
	}
	return &genai.FunctionDeclaration{Name: a.t.Name, Description: a.t.Description, ParametersJsonSchema: schema}, nil
}

// ProcessRequest does nothing: the Toolset declares every step's tools.
func (a *adkTool) ProcessRequest(agent.Context, *model.LLMRequest) error { return nil }

// Run runs the model's call through the current turn of the invocation's
// run. An approval the call waits for goes through ADK's confirmation; the
// answer is recorded in the run when ADK calls the tool again with it.
func (a *adkTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	inv, err := a.ts.invocation(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("adktoolset: tool %q: encoding the arguments: %w", a.t.Name, err)
	}
	if string(raw) == "null" {
		raw = []byte("{}")
	}
	call := toolset.ToolCall{ID: ctx.FunctionCallID(), Name: a.t.Name, Args: raw}

	inv.mu.Lock()
	tl, stopped := inv.tools, inv.err != nil
	if tl == nil && !stopped {
		tl, err = inv.begin(ctx, ctx.AgentName(), a.ts.entries)
	}
	inv.mu.Unlock()
	if stopped {
		return nil, ErrStopped
	}
	if err != nil {
		return nil, a.stop(inv, call, a.ts.stepError(err))
	}

	if c := ctx.ToolConfirmation(); c != nil {
		if c.Confirmed {
			inv.run.RecordApproval(call)
		} else {
			inv.run.RecordDenial(call, DeniedReason)
		}
	}
	res, err := tl.Execute(toolset.NewContext(ctx, inv.run), call)
	if err != nil {
		if msg, ok := toolset.ErrorText(err); ok {
			return nil, errors.New(msg)
		}
		var ar *toolset.ApprovalRequiredError
		if errors.As(err, &ar) && call.ID != "" {
			hint := fmt.Sprintf("The tool %s needs your approval to run with arguments %s.", a.t.Name, raw)
			if cerr := ctx.RequestConfirmation(hint, map[string]any{"run": ar.RunID, "tool": a.t.Name}); cerr != nil {
				return nil, a.stop(inv, call, fmt.Errorf("adktoolset: requesting confirmation: %w", cerr))
			}
			ctx.Actions().SkipSummarization = true
			return nil, fmt.Errorf("tool %q: %w", a.t.Name, tool.ErrConfirmationRequired)
		}
		return nil, a.stop(inv, call, err)
	}
	m, err := resultMap(res)
	if err != nil {
		return nil, a.stop(inv, call, err)
	}
	return m, nil
}

// stop records err, the error of call, as the error that stopped the
// run: the next step fails with it.
func (a *adkTool) stop(inv *invocation, call toolset.ToolCall, err error) error {
	inv.mu.Lock()
	if inv.err == nil {
		inv.err = &StopError{Toolset: a.ts.name, Call: call, Err: err}
	}
	inv.mu.Unlock()
	return ErrStopped
}

// StopError is the error that stopped a run: a call's error that the
// model should not see ([toolset.ErrorText] reports false), such as a
// handler's failure, a panic, or an approval requested of a call without
// an ID. The next step of the invocation fails with it, so ADK's runner
// yields it, and [Toolset.Err] returns it.
type StopError struct {
	// Toolset is the name of the Toolset.
	Toolset string
	// Call is the call that failed.
	Call toolset.ToolCall
	// Err is the call's error.
	Err error
}

// Error implements error.
func (e *StopError) Error() string {
	return fmt.Sprintf("adktoolset: toolset %q: call %q of tool %q stopped the run: %v", e.Toolset, e.Call.ID, e.Call.Name, e.Err)
}

// Unwrap returns the call's error.
func (e *StopError) Unwrap() error { return e.Err }

// appendInstructions adds text to the system instruction of req.
func appendInstructions(req *model.LLMRequest, text string) {
	if text == "" {
		return
	}
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	if req.Config.SystemInstruction == nil {
		req.Config.SystemInstruction = &genai.Content{Role: genai.RoleUser}
	}
	si := req.Config.SystemInstruction
	si.Parts = append(si.Parts, genai.NewPartFromText(text))
}

// resultMap renders a tool's result as an ADK function response: a
// result whose text is a JSON object is that object, any other is
// {"result": text}.
func resultMap(res any) (map[string]any, error) {
	text, err := toolset.ResultText(res)
	if err != nil {
		return nil, fmt.Errorf("adktoolset: encoding the result: %w", err)
	}
	var m map[string]any
	if len(text) > 0 && text[0] == '{' && json.Unmarshal([]byte(text), &m) == nil && m != nil {
		return m, nil
	}
	return map[string]any{"result": text}, nil
}
