// Package openaitools connects a turn's tools to the official OpenAI Go SDK
// (github.com/openai/openai-go/v3), for the Chat Completions API and for
// the Responses API.
//
// Once per turn, build the tools and hand them to the SDK:
//
//	tools, err := toolset.BuildTools(ctx, "assistant", weather, db)
//	params, err := openaitools.ChatTools(tools)
//	completion, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
//		Model: openai.ChatModelGPT4_1Mini, Messages: messages, Tools: params,
//	})
//
// then run the model's tool calls through the same set and send the results
// back:
//
//	msg := completion.Choices[0].Message
//	messages = append(messages, msg.ToParam())
//	results, err := openaitools.RunChatCalls(ctx, tools, msg.ToolCalls)
//	if err != nil {
//		return err // an error that should stop the run
//	}
//	messages = append(messages, results...)
//
// [RunChatCalls] and [RunResponseCalls] run the calls of one turn
// concurrently (at most [DefaultConcurrency] at a time, see
// [WithMaxConcurrency]) and return the results in call order. An error the
// model should see and can act on (bad arguments, an unknown tool, a
// handler's toolset.NewModelError) becomes the text of that call's result; any
// other error stops the run and is returned.
//
// Options are functional options named With..., and one list of them can
// be passed to every function: [WithStrict] asks for OpenAI's strict mode
// (each tool's schema is rewritten to the subset strict mode accepts, or
// the conversion fails with a [*StrictError] naming the tool and the
// keyword at fault); [WithMaxConcurrency] bounds the calls run at once;
// [WithApprover] names the [toolset.Approver] that asks a human about each
// call waiting for approval, which then runs again. Without an approver,
// such a call stops the run with its [*toolset.ApprovalRequiredError].
//
// # Agent loop
//
// [RunChatLoop] is that loop, written once: each step begins a turn of the
// run, builds the turn's tools, asks the model with the conversation so
// far, and runs its calls, until the model answers without calling tools.
//
//	run := toolset.NewRun("run-1")
//	defer run.End()
//	res, err := openaitools.RunChatLoop(ctx, client, openai.ChatCompletionNewParams{
//		Model: openai.ChatModelGPT4_1Mini, Messages: messages,
//	}, run, "assistant", []toolset.Toolset{weather, db},
//		openaitools.WithMaxSteps(10),
//		openaitools.WithStream(func(delta string) { fmt.Print(delta) }),
//		openaitools.WithCallOptions(openaitools.WithApprover(askUser)))
//	fmt.Println(res.Text)
//
// The result holds the conversation (the request's messages and those the
// loop added) whatever the outcome. The loop stops at the step limit with
// a [*StepLimitError], at a failed request to the model with a
// [*ModelError] (wrapping the SDK's *openai.Error for an HTTP status), and
// at a call's error that should stop the run with a [*CallError].
// [WithStream] asks for a stream and hands each piece of the model's text
// to a function as it arrives. The adapter's options reach each step
// through [WithCallOptions].
//
// Without an approver, a call waiting for approval pauses the loop: the
// error wraps the [*toolset.ApprovalRequiredError], the calls that need
// no approval (and are not ordered after one that does) have run, and the
// conversation ends with the model's message and their tool messages.
// Record the decisions on the run (or on the run resumed from its store
// with [toolset.ResumeRun], in another process, say) and call RunChatLoop
// again with that conversation: it runs the calls still without a result
// first, then asks the model. No call runs twice.
//
// # Keeping the prompt cache
//
// OpenAI caches the prompt it was sent, tools first. Three things change
// the tools array of a conversation, and each has a way around it on the
// Responses API:
//
//   - a deferred tool ([toolset.WithDeferred]) that the library's tool
//     search reveals joins the list from the next step on. With
//     [WithDeferLoading], the array holds every deferred tool from the
//     first step, with defer_loading, the search is sent as a
//     client-executed tool_search, and its results go back as a
//     tool_search_output that loads the tools found;
//   - a turn that hides a tool shown before sends a shorter array.
//     [StableTools] sends the earlier array again and restricts the model
//     to the turn's tools with tool_choice allowed_tools;
//   - many tools under a common prefix crowd the top level.
//     [WithNamespace] sends a [toolset.Prefixed] as one namespace tool.
//
// Chat Completions takes the restriction too: [StableTools.ChatTools]
// sends the earlier array again with its tool_choice allowed_tools. It
// has no tool search nor namespaces: [WithDeferLoading] and
// [WithNamespace] are ignored there.
//
// # Preflight
//
// A schema OpenAI refuses is otherwise found when OpenAI answers 400, one
// tool at a time. [Check] applies OpenAI's rules to a turn's tools and
// reports every problem of every tool at once, as
// [toolset.PreflightProblem]s (tool, JSON Pointer, what is wrong, what to
// do), and a [*toolset.PreflightError] listing them; [WithPreflight] runs
// it as part of [ChatTools] and [ResponseTools], which then fails with that
// error rather than send the tools. With [WithStrict], Check also reports
// the first keyword of each schema that strict mode cannot take, as the
// conversion would. Schemas come from MCP servers and packages, so the work
// is bounded: a schema over 1 MiB, nested over 100 levels, or with over
// 20000 subschemas is one problem, found without walking it, and at most
// 500 problems and 200 notes are kept for a turn (the rest are counted).
// Check remembers its findings for each schema, so a turn over unchanged
// tools walks none again. A conversion without WithPreflight does none of this.
package openaitools
