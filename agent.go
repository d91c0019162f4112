package toolset

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
)

// Agent is another agent a tool can delegate to: a sub-agent with its own
// model, instructions and tools.
type Agent interface {
	// Name is the tool name the agent is offered under.
	Name() string
	// Description tells the calling model what the agent is good at.
	Description() string
	// Run gives the agent a task and returns its answer.
	Run(ctx context.Context, prompt string) (string, error)
}

// AgentArgs are the arguments of a tool made with [NewAgentTool].
type AgentArgs struct {
	// Prompt is the task the model hands to the agent.
	Prompt string `json:"prompt" jsonschema:"The task for the agent, with everything it needs to know"`
}

// NewAgentTool makes a tool that delegates to a: the model calls it with a
// prompt and gets the agent's answer. A panic of a's Name or Description
// makes the tool unusable ([Tool.Err] reports a [*PanicError]); a panic of
// Run fails the call like a panicking handler. [Tool.DelegateAgent] returns
// a from the tool and from every renamed, prefixed or wrapped copy of it.
//
// Each call runs the agent under a child run of the calling run
// ([RunContext.NewChild]), whose ID is the caller's run ID, "/", the
// agent's name, "/" and the call's ID (or a counter, for a call without
// one). The child is attached to Run's context with [NewContext], without a
// turn: the agent's own loop begins each of its turns with
// toolset.FromContext(ctx).Turn(ctx). The child inherits the caller's
// values and dependencies, has its own steps, failure budgets, reveals,
// approvals and run-scoped caches, and knows the caller's ID
// ([RunContext.ParentID]); it is ended when Run returns. Called without a
// run, the agent gets a fresh run of its own, ended when Run returns too.
//
// A call of the agent's tools that waits for a human's approval stops the
// agent's run, and so should stop the calling one: the error of the call,
// whatever Run wraps it in, holds the sub-agent's [*ApprovalRequiredError],
// whose RunID is the child run's. The child run has ended by then, so the
// decision cannot be recorded in it: an agent whose tools need approvals
// asks for them in its own loop.
func NewAgentTool(a Agent, opts ...ToolOption) Tool {
	if a == nil {
		t := NewRawTool("", "", nil, nil, opts...)
		t.core.err = errors.New("nil Agent")
		return t
	}
	name, description, err := describeAgent(a)
	if err != nil {
		t := NewRawTool(name, "", nil, nil, opts...)
		t.core.err = err
		return t
	}
	var calls atomic.Uint64
	t := NewTool(name, description, func(ctx context.Context, in AgentArgs) (string, error) {
		child := childRun(ctx, name, &calls)
		defer child.End()
		return a.Run(NewContext(ctx, child), in.Prompt)
	}, opts...)
	t.core.delegate = a
	return t
}

// childRun makes the run of one call of the agent named name: a child of
// the run ctx carries, or a run of its own without one.
func childRun(ctx context.Context, name string, calls *atomic.Uint64) *RunContext {
	parent := FromContext(ctx)
	if parent.state() == nil {
		return NewRun("")
	}
	callID, _ := ctx.Value(agentCallKey{}).(string)
	if callID == "" {
		callID = "#" + strconv.FormatUint(calls.Add(1), 10)
	}
	return parent.NewChild(parent.ID() + "/" + name + "/" + callID)
}

// agentCallKey carries the call ID to the handler of an agent tool.
type agentCallKey struct{}

// describeAgent returns a's name and description; a panic of either
// becomes a *PanicError.
func describeAgent(a Agent) (name, description string, err error) {
	callback := "agent Name"
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError(callback, name, typeName(a), p)
		}
	}()
	name = a.Name()
	callback = "agent Description"
	description = a.Description()
	return name, description, nil
}

// DelegateAgent returns the agent behind a tool made with [NewAgentTool], or
// nil.
func (t Tool) DelegateAgent() Agent {
	if t.core == nil {
		return nil
	}
	return t.core.delegate
}
