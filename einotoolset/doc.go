// Package einotoolset offers the library's toolsets to CloudWeGo Eino
// (github.com/cloudwego/eino) graphs as Eino tools, keeping the library's
// per-run policies: tool search reveals, filters that read the run's
// values, approvals, failure budgets, call limits, run-scoped caches.
//
// # One turn
//
// [Tools] converts one turn's [*toolset.ToolList] into tool.InvokableTool
// values for a compose.ToolsNode; [ToolInfos] gives their infos for a chat
// model's WithTools. Each tool's parameters are its JSON Schema
// (schema.NewParamsOneOfByJSONSchema); its calls run
// [toolset.ToolList.Execute] with the Eino tool call ID.
//
// # A run over the steps of a graph
//
// A run is the application's: it makes one with [toolset.NewRun] for a
// graph invocation, carries it in the invocation's context
// ([toolset.NewContext]) and ends it when the request is answered. A
// [Toolset] ([New]) maps each model step of the graph to one turn of that
// run: the node that calls the model calls [Toolset.Step] and binds the
// step's Infos (and sends its Instructions, the toolsets' system-prompt
// text for the turn), and the tools node is [Toolset.RunTools], which runs the
// model's calls through a compose.ToolsNode over the step's tools. So a
// tool a search revealed in one step is offered from the next, and a
// failure budget spent in one step stays spent.
//
//	ts := einotoolset.New("assistant", orders, archive, toolset.NewToolSearch(archive))
//	g.AddLambdaNode("model", compose.InvokableLambda(func(ctx context.Context, in []*schema.Message) (*schema.Message, error) {
//		step, err := ts.Step(ctx)
//		if err != nil {
//			return nil, err
//		}
//		bound, err := chat.WithTools(step.Infos)
//		if err != nil {
//			return nil, err
//		}
//		return bound.Generate(ctx, in)
//	}))
//	g.AddLambdaNode("tools", compose.InvokableLambda(ts.RunTools))
//
//	run := toolset.NewRun(requestID, toolset.WithValue(Role, "staff"))
//	defer run.End()
//	ctx = toolset.NewContext(ctx, run)
//	defer ts.Forget(ctx)
//	answer, err := r.Invoke(ctx, messages)
//
// # Errors and approvals
//
// An error the model should see ([toolset.ErrorText]) is the call's
// result, and a name that is not in the step's set gets the list's own
// error, with its suggestions. Any other error is the tool's error, which
// stops the graph; errors.As finds the library's error in it.
//
// A call that waits for a human's approval ([*toolset.ApprovalRequiredError])
// interrupts the graph with Eino's own mechanism (compose.StatefulInterrupt),
// the interrupt's info an [*ApprovalInfo]; compile the graph with a
// checkpoint store and invoke it with a checkpoint ID. Resume it with
// compose.ResumeWithData(ctx, interruptID, &Decision{Approved: ...}) and
// the same checkpoint ID, under the same run: the tool records the
// decision in the run ([toolset.RunContext.RecordApproval] or
// [toolset.RunContext.RecordDenial]) and executes the call, which runs
// once if approved and tells the model the reason if not.
package einotoolset
