package openaitools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// CallTypeError reports a tool call of a kind this package does not run,
// such as a call of a custom (free-form) tool the application declared
// itself.
type CallTypeError struct {
	// ID is the call's ID.
	ID string
	// Type is the kind of call, such as "custom".
	Type string
}

// Error implements error.
func (e *CallTypeError) Error() string {
	return fmt.Sprintf("openaitools: tool call %s is of type %q; only function calls are run, handle the others before calling this package", e.ID, e.Type)
}

// ChatCalls returns the function calls of a Chat Completions message as
// tool calls. A call of any other type is an error ([*CallTypeError]),
// never silently dropped.
func ChatCalls(calls []openai.ChatCompletionMessageToolCallUnion) ([]toolset.ToolCall, error) {
	out := make([]toolset.ToolCall, 0, len(calls))
	for _, c := range calls {
		if c.Type != "function" {
			return nil, &CallTypeError{ID: c.ID, Type: c.Type}
		}
		out = append(out, toolset.ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)})
	}
	return out, nil
}

// RunChatCalls runs the tool calls of a Chat Completions message through
// the turn's tools and returns one tool message per call, in call order,
// each carrying its call's ID. Calls run concurrently, at most
// [DefaultConcurrency] at a time (see [WithMaxConcurrency]).
//
// An error the model should see ([toolset.ErrorText] reports true)
// becomes the text of its call's tool message. Any other error stops the
// run: the calls still running are cancelled and the error is returned,
// naming the call. Before a call runs, null values of optional properties
// whose schema does not accept null are removed from its arguments, since
// a model in strict mode sends null for every property it leaves out.
//
// ctx is the turn's context: the one tools was built under, or another
// step of its run (see [toolset.ToolList]). A call whose handler panics or
// calls runtime.Goexit stops the run with a [*toolset.PanicError].
func RunChatCalls(ctx context.Context, tools *toolset.ToolList, calls []openai.ChatCompletionMessageToolCallUnion, opts ...Option) ([]openai.ChatCompletionMessageParamUnion, error) {
	tcs, err := ChatCalls(calls)
	if err != nil {
		return nil, err
	}
	return provider.RunCalls(ctx, pkg, tools, tcs, provider.Apply(opts), execute(tools), chatMessage)
}

// ChatToolMessage returns the tool message for a call that the application
// ran itself: the result as text, or the text of an error the model should
// see. Any other error is returned, since it should stop the run.
func ChatToolMessage(call toolset.ToolCall, result any, err error) (openai.ChatCompletionMessageParamUnion, error) {
	return provider.Result(pkg, call, result, err, chatMessage)
}

func chatMessage(o provider.Outcome) (openai.ChatCompletionMessageParamUnion, error) {
	if o.IsError {
		return openai.ToolMessage(o.Message, o.Call.ID), nil
	}
	// Chat Completions tool messages carry text only: media is described.
	text, err := toolset.ResultText(o.Result)
	if err != nil {
		return openai.ChatCompletionMessageParamUnion{}, err
	}
	return openai.ToolMessage(text, o.Call.ID), nil
}

// ResponseCalls returns the function calls among the output items of a
// Responses API response, in order, and the tool_search_call items the
// application is to execute (sent with [WithDeferLoading]), as calls of a
// tool named "tool_search". A call of a tool of a namespace
// ([WithNamespace]) is named namespace_name. Other items (messages, reasoning, built-in
// tool calls) are not tool calls of this package and are skipped.
func ResponseCalls(items []responses.ResponseOutputItemUnion) []toolset.ToolCall {
	var out []toolset.ToolCall
	for _, it := range items {
		switch it.Type {
		case "function_call":
			fc := it.AsFunctionCall()
			out = append(out, toolset.ToolCall{ID: fc.CallID, Name: fullName(fc, nil), Args: json.RawMessage(fc.Arguments)})
		case "tool_search_call":
			if c, ok := searchCall(it, "tool_search"); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// RunResponseCalls runs the function calls among the output items of a
// Responses API response, as [RunChatCalls] does, and returns one
// function_call_output input item per call, in call order. Images of a
// [*toolset.Content] result are sent as input_image parts; other media are
// described in text.
func RunResponseCalls(ctx context.Context, tools *toolset.ToolList, items []responses.ResponseOutputItemUnion, opts ...Option) ([]responses.ResponseInputItemUnionParam, error) {
	o := provider.Apply(opts)
	if o.DeferLoading || len(namespaces(o)) > 0 || needsMapping(items) {
		return runResponseCalls(ctx, tools, items, o)
	}
	return provider.RunCalls(ctx, pkg, tools, ResponseCalls(items), o, execute(tools), responseOutput)
}

// ResponseOutput returns the function_call_output item for a call that the
// application ran itself; see [ChatToolMessage]. With [WithDeferLoading],
// convert the calls of the turn's tool search with [ResponseOutputFor].
func ResponseOutput(call toolset.ToolCall, result any, err error) (responses.ResponseInputItemUnionParam, error) {
	return provider.Result(pkg, call, result, err, responseOutput)
}

// ResponseOutputFor is [ResponseOutput] for a call of the turn's tools,
// taking the options given to [ResponseTools] and [RunResponseCalls].
// With [WithDeferLoading], a call of the turn's tool search (the
// tool_search_call items [ResponseCalls] returns as calls of
// "tool_search", or a call by the search's own name) is answered as
// RunResponseCalls answers it: with a tool_search_output item holding the
// definitions of the deferred tools found ([WithStrict] as for
// ResponseTools), which loads them; a failed search loads none.
// ResponseOutput, which does not know the turn's catalogue, answers such
// a call with a function_call_output, which OpenAI does not take for a
// tool_search_call. Other calls, and every call without WithDeferLoading,
// are answered as ResponseOutput answers them. A nil tools is a turn
// without tools.
func ResponseOutputFor(tools *toolset.ToolList, call toolset.ToolCall, result any, err error, opts ...Option) (responses.ResponseInputItemUnionParam, error) {
	o := provider.Apply(opts)
	if tools == nil || !o.DeferLoading || !isSearchCall(tools, call.Name) {
		return ResponseOutput(call, result, err)
	}
	return provider.Result(pkg, call, result, err, func(oc provider.Outcome) (responses.ResponseInputItemUnionParam, error) {
		return searchOutput(tools, oc, o.Strict)
	})
}

// isSearchCall reports whether a call named name is one of the turn's
// tool search, sent with defer loading as OpenAI's tool_search: named as
// that search, or as "tool_search" (the name [ResponseCalls] gives) when
// no other tool of the turn has that name.
func isSearchCall(tools *toolset.ToolList, name string) bool {
	var search toolset.Tool
	found := false
	for t := range tools.All() {
		if t.IsToolSearch() {
			search, found = t, true
			break
		}
	}
	if !found {
		return false
	}
	if t, ok := tools.Lookup(name); ok {
		return t.Same(search)
	}
	return name == "tool_search"
}

// responseImage reports whether a function_call_output can carry p as an
// input_image: JPEG, PNG, GIF and WebP, as data or at a web URL.
func responseImage(p toolset.Part) bool {
	return provider.IsImage(p.MIMEType) && (p.Data != nil || provider.IsWebURL(p.URI))
}

func responseOutput(o provider.Outcome) (responses.ResponseInputItemUnionParam, error) {
	item := &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String(o.Call.ID)}
	if o.IsError {
		item.Output.OfString = openai.String(o.Message)
		return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: item}, nil
	}
	segs, err := provider.Segments(o.Result, responseImage)
	if err != nil {
		return responses.ResponseInputItemUnionParam{}, err
	}
	if !provider.HasMedia(segs) {
		item.Output.OfString = openai.String(provider.JoinText(segs))
		return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: item}, nil
	}
	list := make(responses.ResponseFunctionCallOutputItemListParam, 0, len(segs))
	for _, s := range segs {
		if s.Media == nil {
			list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: s.Text}})
			continue
		}
		url := s.Media.URI
		if s.Media.Data != nil {
			url = "data:" + s.Media.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(s.Media.Data)
		}
		list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: openai.String(url)}})
	}
	item.Output.OfResponseFunctionCallOutputItemArray = list
	return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: item}, nil
}

// pkg names this package in its errors.
const pkg = "openaitools"

// execute runs a call through tools, after removing the null values a
// model in strict mode sends for the optional properties it leaves out.
func execute(tools *toolset.ToolList) provider.Exec {
	return func(ctx context.Context, call toolset.ToolCall) (any, error) {
		if t, ok := tools.Lookup(call.Name); ok {
			if params, err := t.ParametersJSON(); err == nil {
				call.Args = dropNulls(params, call.Args)
			}
		}
		return tools.Execute(ctx, call)
	}
}
