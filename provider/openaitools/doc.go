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
package openaitools
