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

// AgentArgs are the arguments of a tool made with [AgentTool].
type AgentArgs struct {
	// Prompt is the task the model hands to the agent.
	Prompt string `json:"prompt" jsonschema:"The task for the agent, with everything it needs to know"`
}

// AgentTool makes a tool that delegates to a: the model calls it with a
// prompt and gets the agent's answer. [Tool.DelegateAgent] returns a from
// the tool and from every renamed, prefixed or wrapped copy of it.
func AgentTool(a Agent, opts ...ToolOption) Tool {
	if a == nil {
		t := NewRawTool("", "", nil, nil, opts...)
		t.core.err = errors.New("nil Agent")
		return t
	}
	t := NewTool(a.Name(), a.Description(), func(ctx context.Context, in AgentArgs) (string, error) {
		return a.Run(ctx, in.Prompt)
	}, opts...)
	t.core.delegate = a
	return t
}

// DelegateAgent returns the agent behind a tool made with [AgentTool], or
// nil.
func (t Tool) DelegateAgent() Agent {
	if t.core == nil {
		return nil
	}
	return t.core.delegate
}
