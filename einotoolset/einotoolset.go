package einotoolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
	"github.com/gotoolset/toolset"
)

// DeniedReason is what the model is told of a call a human rejected
// when resuming with [Decision] Approved false and no Reason.
const DeniedReason = "the user rejected the call"

// ApprovalInfo is the information of the interrupt a call that waits for
// approval raises: the call and the run it was made in. Read it from
// the InterruptContexts of compose.ExtractInterruptInfo; resume the
// interrupt with a [Decision].
type ApprovalInfo struct {
	// Call is the call waiting for approval.
	Call toolset.ToolCall
	// RunID is the ID of the library run.
	RunID string
}

// String describes the call that waits.
func (i *ApprovalInfo) String() string {
	return fmt.Sprintf("call %q of tool %q needs a human's approval", i.Call.ID, i.Call.Name)
}

// Decision is the data to resume an approval interrupt with
// (compose.ResumeWithData with the interrupt's ID): a human's answer.
type Decision struct {
	// Approved lets the call run.
	Approved bool
	// Reason is what the model is told of a rejected call
	// ([DeniedReason] when empty).
	Reason string
}

// Tools returns the tools of one turn as Eino tools, in the order the
// model is sent them, for a compose.ToolsNode: each is a
// tool.InvokableTool whose calls run [toolset.ToolList.Execute] of list,
// with the Eino tool call ID (compose.GetToolCallID) as the call ID. Every
// tool that cannot be converted is reported, the errors joined. Run the
// ToolsNode under a context of list's run (the context of its turn, or
// toolset.NewContext).
//
// An error the model should see ([toolset.ErrorText]) is the call's
// result; any other error is the tool's error, which stops the graph. A
// call that waits for approval interrupts the graph (see the package
// documentation).
func Tools(list *toolset.ToolList) ([]tool.BaseTool, error) {
	out := make([]tool.BaseTool, 0, list.Len())
	var errs []error
	for t := range list.All() {
		info, err := toolInfo(t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, &einoTool{list: list, t: t, info: info})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// ToolInfos returns the Eino tool infos of tools made by [Tools] or a
// [Step], for a chat model's WithTools.
func ToolInfos(ctx context.Context, tools []tool.BaseTool) ([]*schema.ToolInfo, error) {
	out := make([]*schema.ToolInfo, 0, len(tools))
	for _, t := range tools {
		info, err := t.Info(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func toolInfo(t toolset.Tool) (*schema.ToolInfo, error) {
	raw, err := t.ParametersJSON()
	if err != nil {
		return nil, fmt.Errorf("einotoolset: tool %q: parameter schema: %w", t.Name, err)
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("einotoolset: tool %q: parameter schema: %w", t.Name, err)
	}
	return &schema.ToolInfo{Name: t.Name, Desc: t.Description, ParamsOneOf: schema.NewParamsOneOfByJSONSchema(s)}, nil
}

// einoTool is one library tool offered to Eino.
type einoTool struct {
	list *toolset.ToolList
	t    toolset.Tool
	info *schema.ToolInfo
}

// Info implements tool.BaseTool.
func (e *einoTool) Info(context.Context) (*schema.ToolInfo, error) { return e.info, nil }

// InvokableRun implements tool.InvokableTool.
func (e *einoTool) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	if args == "" {
		args = "{}"
	}
	call := toolset.ToolCall{ID: compose.GetToolCallID(ctx), Name: e.t.Name, Args: json.RawMessage(args)}
	if was, _, _ := compose.GetInterruptState[any](ctx); was {
		resumed, hasData, d := compose.GetResumeContext[*Decision](ctx)
		if !resumed {
			// Another interrupt is resumed: this call still waits.
			return "", compose.StatefulInterrupt(ctx, e.approvalInfo(ctx, call), call.ID)
		}
		rc := toolset.FromContext(ctx)
		switch {
		case hasData && d != nil && d.Approved:
			rc.RecordApproval(call)
		default:
			reason := DeniedReason
			if hasData && d != nil && d.Reason != "" {
				reason = d.Reason
			}
			rc.RecordDenial(call, reason)
		}
	}
	res, err := e.list.Execute(ctx, call)
	if err != nil {
		if msg, ok := toolset.ErrorText(err); ok {
			return msg, nil
		}
		var ar *toolset.ApprovalRequiredError
		if errors.As(err, &ar) && call.ID != "" {
			return "", compose.StatefulInterrupt(ctx, &ApprovalInfo{Call: call, RunID: ar.RunID}, call.ID)
		}
		return "", fmt.Errorf("einotoolset: %w", err)
	}
	text, err := toolset.ResultText(res)
	if err != nil {
		return "", fmt.Errorf("einotoolset: tool %q: encoding the result: %w", e.t.Name, err)
	}
	return text, nil
}

func (e *einoTool) approvalInfo(ctx context.Context, call toolset.ToolCall) *ApprovalInfo {
	return &ApprovalInfo{Call: call, RunID: toolset.FromContext(ctx).ID()}
}

// Toolset builds a turn of the library's toolsets at each step of an Eino
// graph: call [Toolset.Step] at the step that calls the model, and run the
// model's calls with [Toolset.RunTools] (or a compose.ToolsNode over the
// step's tools). The run is the one ctx carries ([toolset.NewContext]),
// made by the application for one graph invocation and ended when it is
// answered, so that reveals, failure budgets and approvals last across
// the steps of the invocation, and across an interrupt and its resume.
type Toolset struct {
	agent   string
	entries []toolset.Toolset

	mu    sync.Mutex
	steps map[string]*Step
}

// Step is one turn's tools.
type Step struct {
	// List is the turn's tools.
	List *toolset.ToolList
	// Tools are the Eino tools of List, for a compose.ToolsNode.
	Tools []tool.BaseTool
	// Infos are their infos, for a chat model's WithTools.
	Infos []*schema.ToolInfo
	// Instructions is the system-prompt text the toolsets give for the
	// turn ([toolset.Instructions]), empty when they give none.
	Instructions string
	// Context is the turn's context.
	Context context.Context

	run *toolset.RunContext
}

// sweepAt is how many runs' steps a Toolset keeps before it drops those
// of runs that have ended.
const sweepAt = 1024

// New returns a Toolset that offers the tools of entries to the agent
// named agent.
func New(agent string, entries ...toolset.Toolset) *Toolset {
	return &Toolset{agent: agent, entries: entries, steps: make(map[string]*Step)}
}

// ErrNoRun is the error of a step under a context that carries no run.
var ErrNoRun = errors.New("einotoolset: the context carries no run: begin one with toolset.NewRun and carry it with toolset.NewContext")

// Step begins the next turn of the run ctx carries and builds its tools.
// Call it once per model step; the step's tools are those [Toolset.RunTools]
// runs until the next Step of the run.
func (ts *Toolset) Step(ctx context.Context) (*Step, error) {
	rc := toolset.FromContext(ctx)
	if rc == nil {
		return nil, ErrNoRun
	}
	tc := rc.Turn(ctx)
	list, err := toolset.BuildTools(tc, ts.agent, ts.entries...)
	if err != nil {
		return nil, fmt.Errorf("einotoolset: %w", err)
	}
	tools, err := Tools(list)
	if err != nil {
		return nil, err
	}
	infos, err := ToolInfos(ctx, tools)
	if err != nil {
		return nil, err
	}
	text, err := toolset.Instructions(tc, ts.entries...)
	if err != nil {
		return nil, fmt.Errorf("einotoolset: %w", err)
	}
	st := &Step{List: list, Tools: tools, Infos: infos, Instructions: text, Context: tc, run: rc}
	ts.mu.Lock()
	ts.steps[rc.ID()] = st
	if len(ts.steps) > sweepAt {
		for id, s := range ts.steps {
			if errors.Is(s.run.Err(), toolset.ErrRunEnded) {
				delete(ts.steps, id)
			}
		}
	}
	ts.mu.Unlock()
	return st, nil
}

// Current returns the latest step of the run ctx carries, or nil.
func (ts *Toolset) Current(ctx context.Context) *Step {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.steps[toolset.FromContext(ctx).ID()]
}

// Forget drops what the Toolset keeps of the run ctx carries (its latest
// step); call it when the run ends. A Toolset that keeps the steps of
// more than a thousand runs drops those of the runs that have ended.
func (ts *Toolset) Forget(ctx context.Context) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.steps, toolset.FromContext(ctx).ID())
}

// RunTools runs the tool calls of msg, the model's message of the current
// step, through a compose.ToolsNode over the step's tools, and returns
// their tool messages. Use it as the tools node of a graph
// (compose.InvokableLambda(ts.RunTools)). A step before any [Toolset.Step]
// of the run begins one.
func (ts *Toolset) RunTools(ctx context.Context, msg *schema.Message) ([]*schema.Message, error) {
	st := ts.Current(ctx)
	if st == nil {
		var err error
		if st, err = ts.Step(ctx); err != nil {
			return nil, err
		}
	}
	tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools: st.Tools,
		UnknownToolsHandler: func(ctx context.Context, name, input string) (string, error) {
			// The list's own error for a name not in the turn: suggestions and the names to call.
			_, err := st.List.Execute(ctx, toolset.ToolCall{ID: compose.GetToolCallID(ctx), Name: name, Args: json.RawMessage(input)})
			if msg, ok := toolset.ErrorText(err); ok {
				return msg, nil
			}
			return "", fmt.Errorf("einotoolset: unknown tool %q: %w", name, err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("einotoolset: %w", err)
	}
	return tn.Invoke(ctx, msg)
}
