package toolset

import (
	"context"
	"errors"
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
// Run fails the call like a panicking handler. The agent builds its own
// tools under its own run context. [Tool.DelegateAgent] returns a from
// the tool and from every renamed, prefixed or wrapped copy of it.
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
	t := NewTool(name, description, func(ctx context.Context, in AgentArgs) (string, error) {
		return a.Run(ctx, in.Prompt)
	}, opts...)
	t.core.delegate = a
	return t
}

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
