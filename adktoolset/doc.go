// Package adktoolset offers the library's toolsets to agents of Google's
// Agent Development Kit for Go (google.golang.org/adk/v2), as one ADK
// tool.Toolset that keeps the library's per-run policies: tool search
// reveals, filters that read the run's values, approvals, failure budgets,
// call limits, run-scoped caches.
//
//	var Role = toolset.NewKey[string]("role")
//
//	tools := adktoolset.New("support", []toolset.Toolset{orders, refunds, toolset.NewToolSearch(archive), archive},
//		adktoolset.WithStateKeys("role"))
//	defer tools.Close()
//	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Toolsets: []tool.Toolset{tools}})
//
// # Runs and steps
//
// Each ADK invocation has one library run ([toolset.NewRun]), begun by the
// first step that needs it and keyed by the invocation ID; its ID is the
// Toolset's name, "/" and the invocation ID. Each model step of the
// invocation is one turn of that run ([toolset.RunContext.Turn] and
// [toolset.BuildTools], under the agent's name), so a tool that a search
// revealed in one step is offered from the next, and a failure budget
// spent in one step stays spent in the next. ADK asks a toolset for its
// tools once per agent run; the Toolset declares each step's tools itself,
// in ProcessRequest, which ADK calls before every model call, and adds
// the instructions the toolsets give for the turn ([toolset.Instructions])
// to the request's system instruction.
//
// A run outlives its invocation's last event, because ADK resumes an
// invocation paused for a confirmation under the same invocation ID: the
// Toolset keeps at most [DefaultMaxRuns] runs live ([WithMaxRuns]),
// ending the least recently used; [Toolset.End] ends one, [Toolset.Close]
// all. [Toolset.Run] returns an invocation's run. An invocation whose run
// was ended begins a new one at its next step, without the old one's
// reveals, budgets and decisions.
//
// # Values from the session state
//
// [WithStateKeys] carries session state values into the run's values by
// name, so a [toolset.Filtered] predicate reading a [toolset.Key] of that
// name sees them; [WithRunOptions] maps the invocation to any run options
// (typed values, dependencies). Both apply when the run begins.
//
// # Calls, errors and approvals
//
// Each tool is an ADK function tool whose parameters are the tool's JSON
// Schema; its call runs [toolset.ToolList.Execute] of the current turn,
// with the ADK function call ID as the call ID. A result whose text is a
// JSON object is the function response; any other result is
// {"result": text}.
//
// An error the model should see ([toolset.ErrorText]) is the tool's error,
// which ADK sends to the model as {"error": text}. Any other error stops
// the run: ADK records [ErrStopped] as the call's response, the model is
// not called again, and the invocation fails with a [*StopError] wrapping
// the call's error, which the runner yields and [Toolset.Err] returns.
//
// A call that waits for a human's approval ([*toolset.ApprovalRequiredError])
// goes through ADK's own tool confirmation: the tool requests it
// (RequestConfirmation), ADK pauses the invocation with an
// adk_request_confirmation function call, and when the user's answer
// comes back ADK calls the tool again with it. The Toolset then records
// the decision in the run ([toolset.RunContext.RecordApproval] or
// [toolset.RunContext.RecordDenial] with [DeniedReason]) and executes the
// call: an approved call runs once, a rejected one tells the model why.
package adktoolset
