// Package anthropictools connects a turn's tools to the official Anthropic
// Go SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// Once per turn, build the tools and hand them to the SDK:
//
//	tools, err := toolset.BuildTools(ctx, "assistant", weather, db)
//	params, err := anthropictools.Tools(tools)
//	msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
//		Model: anthropic.ModelClaudeSonnet4_5, MaxTokens: 1024, Messages: messages, Tools: params,
//	})
//
// then run the model's tool_use blocks through the same set and send the
// tool_result blocks back in a user message:
//
//	messages = append(messages, msg.ToParam())
//	results, err := anthropictools.RunCalls(ctx, tools, msg.Content)
//	if err != nil {
//		return err // an error that should stop the run
//	}
//	messages = append(messages, anthropic.NewUserMessage(results...))
//
// [RunCalls] runs the calls of one turn concurrently (at most
// [DefaultConcurrency] at a time, see [WithMaxConcurrency]) and returns the
// results in call order. An error the model should see and can act on (bad
// arguments, an unknown tool, a handler's toolset.NewModelError) becomes a
// tool_result with is_error set; any other error stops the run and is
// returned. A call that waits for a human's approval is put to the
// [toolset.Approver] of [WithApprover] and runs again; without one, it
// stops the run with its [*toolset.ApprovalRequiredError].
//
// # Agent loop
//
// [RunLoop] is that loop, written once: each step begins a turn of the
// run, builds the turn's tools, asks the model with the conversation so
// far, and runs its calls, until the model answers without calling tools.
//
//	res, err := anthropictools.RunLoop(ctx, client, anthropic.MessageNewParams{
//		Model: anthropic.ModelClaudeSonnet4_5, MaxTokens: 1024, Messages: messages,
//	}, run, "assistant", []toolset.Toolset{weather, db},
//		anthropictools.WithMaxSteps(10),
//		anthropictools.WithStream(func(delta string) { fmt.Print(delta) }),
//		anthropictools.WithCallOptions(anthropictools.WithApprover(askUser)))
//
// [WithStream] asks for a stream and hands each piece of the model's text
// to a function as it arrives. The result holds the conversation whatever
// the outcome. The loop stops
// at the step limit with a [*StepLimitError], at a failed request with a
// [*ModelError] (wrapping the SDK's *anthropic.Error for an HTTP status),
// and at a call's error that should stop the run with a [*CallError].
// Without an approver, a call waiting for approval pauses the loop with
// the [*toolset.ApprovalRequiredError]; record the decisions on the run
// (or on the run resumed with [toolset.ResumeRun]) and call RunLoop again
// with the conversation, which runs the calls still without a result,
// then asks the model; the calls that ran before the pause do not run
// again.
//
// # Deferred tools
//
// A deferred tool ([toolset.WithDeferred]) is found by the library's tool
// search ([toolset.NewToolSearch]) and shown from the next step on, which
// changes the tools array and so loses Anthropic's prompt cache. With
// [WithDeferLoading], the array holds every deferred tool from the first
// step, with defer_loading, and the search's results go back as
// tool_reference blocks, which load the tools found: the array stays the
// same, byte for byte. Anthropic has no restriction of the model to some
// of the tools sent, so a turn that hides a tool sends a shorter array.
// An application that runs the search itself converts its result with
// [ResultBlockFor], which takes the turn's tools, not [ResultBlock].
//
// # Preflight
//
// A schema Anthropic refuses is otherwise found when Anthropic answers 400,
// one tool at a time. [Check] applies Anthropic's rules to a turn's tools
// and reports every problem of every tool at once, as
// [toolset.PreflightProblem]s (tool, JSON Pointer, what is wrong, what to
// do), and a [*toolset.PreflightError] listing them; [WithPreflight] runs
// it as part of [Tools], which then fails with that error rather than send
// the tools. Schemas come from MCP servers and packages, so the work is
// bounded: a schema over 1 MiB, nested over 100 levels, or with over 20000
// subschemas is one problem, found without walking it, and at most 500
// problems and 200 notes are kept for a turn (the rest are counted). Check
// remembers its findings for each schema, so a turn over unchanged tools
// walks none again. A conversion without WithPreflight does none of this.
package anthropictools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
)

// DefaultConcurrency (8) is how many tool calls of one turn run at once unless
// [WithMaxConcurrency] says otherwise.
const DefaultConcurrency = provider.DefaultConcurrency

// CallError is a tool call whose error should stop the run. It wraps the
// error the call returned (a *toolset.ToolError, a *toolset.PanicError, a
// *toolset.ApprovalRequiredError, ...).
type CallError = provider.CallError

// Tools returns the turn's tools as Anthropic tool params, in the order the
// model is sent them. Each input schema is the tool's parameter schema as
// [toolset.Tool.ParametersJSON] gives it; its root must be an object
// schema. Every tool that cannot be sent is reported, the errors joined.
// With [WithPreflight], the tools are checked against Anthropic's rules
// first (see [Check]); other options are ignored here.
//
// A turn with no tools (every tool hidden from this user, say) gives nil,
// which the SDK leaves out of the request rather than sending an empty
// tools array; leave ToolChoice unset in that turn too.
func Tools(tools *toolset.ToolList, opts ...Option) ([]anthropic.ToolUnionParam, error) {
	if len(opts) > 0 {
		o := provider.Apply(opts)
		if o.Preflight {
			if _, err := check(tools, o.DeferLoading); err != nil { // every tool sent
				return nil, err
			}
		}
		if o.DeferLoading {
			return provider.ConvertCatalog(tools, convertDeferred)
		}
	}
	return provider.ConvertTools(tools, convert)
}

func convert(t toolset.Tool) (anthropic.ToolUnionParam, error) {
	sp, err := schemas.Of(t)
	if err != nil {
		return anthropic.ToolUnionParam{}, fmt.Errorf("%s: tool %q: %w", pkg, t.Name, err)
	}
	schema := anthropic.ToolInputSchemaParam{
		Properties:  sp.properties,
		Required:    slices.Clone(sp.required),
		ExtraFields: maps.Clone(sp.extra),
	}
	p := &anthropic.ToolParam{Name: t.Name, InputSchema: schema}
	if t.Description != "" {
		p.Description = anthropic.String(t.Description)
	}
	return anthropic.ToolUnionParam{OfTool: p}, nil
}

// splitSchema is a parameter schema split the way the SDK's input schema
// takes it; values stay encoded so the order of properties survives.
type splitSchema struct {
	properties json.RawMessage
	required   []string
	extra      map[string]any
}

func split(raw json.RawMessage) (splitSchema, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return splitSchema{}, fmt.Errorf("parameter schema is not a JSON object: %w", err)
	}
	sp := splitSchema{extra: map[string]any{}}
	for k, v := range fields {
		switch k {
		case "type":
			var typ any
			if err := json.Unmarshal(v, &typ); err != nil || typ != "object" {
				return splitSchema{}, fmt.Errorf("the input schema must have type \"object\", not %s", v)
			}
		case "properties":
			sp.properties = v
		case "required":
			if err := json.Unmarshal(v, &sp.required); err != nil {
				return splitSchema{}, fmt.Errorf("required must be a list of property names: %w", err)
			}
		default:
			sp.extra[k] = v
		}
	}
	return sp, nil
}

// schemas remembers split schemas, so that a turn over unchanged tools
// does not parse their schemas again.
var schemas = provider.NewSchemaCache(split)

// pkg names this package in its errors.
const pkg = "anthropictools"

// Calls returns the tool_use blocks of a message's content as tool calls,
// in order. Other blocks (text, thinking, server tool use) are not calls of
// this package and are skipped.
func Calls(content []anthropic.ContentBlockUnion) []toolset.ToolCall {
	var out []toolset.ToolCall
	for _, b := range content {
		if b.Type != "tool_use" {
			continue
		}
		u := b.AsToolUse()
		out = append(out, toolset.ToolCall{ID: u.ID, Name: u.Name, Args: u.Input})
	}
	return out
}

// Option configures the conversion of tools ([WithPreflight]) and how
// [RunCalls] runs calls.
type Option func(*provider.Options)

// WithMaxConcurrency sets how many tool calls of one turn run at once; 1
// runs them one after another. Values below 1 make [RunCalls] fail.
func WithMaxConcurrency(n int) Option { return provider.WithMaxConcurrency(n) }

// WithApprover has each call that waits for a human's approval (see
// [toolset.WithApprovalRequired]) put to approver: the run records the
// answer and the call runs again, or the model is told it was denied, with
// the reason. Without an approver, such a call stops the run: [RunCalls]
// returns a [*CallError] wrapping the [*toolset.ApprovalRequiredError], and
// the results of the other calls are lost. Approvals need call IDs and a
// run context.
func WithApprover(approver toolset.Approver) Option { return provider.WithApprover(approver) }

// RunCalls runs the tool_use blocks of a message's content through the
// turn's tools and returns one tool_result block per call, in call order,
// for the next user message. Calls run concurrently, at most
// [DefaultConcurrency] at a time (see [WithMaxConcurrency]).
//
// An error the model should see ([toolset.ErrorText] reports true)
// becomes a tool_result with is_error set and the error's text. Any other
// error stops the run: the calls still running are cancelled and a
// [*CallError] is returned. Images (JPEG, PNG, GIF, WebP) and PDFs of a
// [*toolset.Content] result are sent as image and document blocks; other
// media are described in text.
//
// ctx is the turn's context: the one tools was built under, or another
// step of its run (see [toolset.ToolList]). A call whose handler panics or
// calls runtime.Goexit stops the run with a [*toolset.PanicError].
func RunCalls(ctx context.Context, tools *toolset.ToolList, content []anthropic.ContentBlockUnion, opts ...Option) ([]anthropic.ContentBlockParamUnion, error) {
	o := provider.Apply(opts)
	return provider.RunCalls(ctx, pkg, tools, Calls(content), o, tools.Execute, resultsFor(tools, o))
}

// ResultBlock returns the tool_result block for a call that the
// application ran itself: the result, or the text of an error the model
// should see with is_error set. Any other error is returned, since it
// should stop the run. With [WithDeferLoading], convert a tool search's
// result with [ResultBlockFor].
func ResultBlock(call toolset.ToolCall, result any, err error) (anthropic.ContentBlockParamUnion, error) {
	return provider.Result(pkg, call, result, err, resultBlock)
}

// ResultBlockFor is [ResultBlock] for a call of the turn's tools, taking
// the options given to [RunCalls]. With [WithDeferLoading], the result of
// the turn's tool search ([toolset.NewToolSearch]) becomes tool_reference
// blocks naming the deferred tools it found, as RunCalls sends it, which
// loads them; ResultBlock, which does not know the turn's catalogue,
// sends the search's result as JSON text, which loads nothing. Other
// results, and every result without WithDeferLoading, are as ResultBlock
// gives them. A nil tools is a turn without tools.
func ResultBlockFor(tools *toolset.ToolList, call toolset.ToolCall, result any, err error, opts ...Option) (anthropic.ContentBlockParamUnion, error) {
	if tools == nil {
		return ResultBlock(call, result, err)
	}
	return provider.Result(pkg, call, result, err, resultsFor(tools, provider.Apply(opts)))
}

// supported reports whether a tool_result can carry p as a block: an image
// or a PDF, as data or at a web URL.
func supported(p toolset.Part) bool {
	media := provider.IsImage(p.MIMEType) || p.MIMEType == "application/pdf"
	return media && (p.Data != nil || provider.IsWebURL(p.URI))
}

func resultBlock(oc provider.Outcome) (anthropic.ContentBlockParamUnion, error) {
	r := &anthropic.ToolResultBlockParam{ToolUseID: oc.Call.ID}
	if oc.IsError {
		r.IsError = anthropic.Bool(true)
		r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: oc.Message}}}
		return anthropic.ContentBlockParamUnion{OfToolResult: r}, nil
	}
	segs, err := provider.Segments(oc.Result, supported)
	if err != nil {
		return anthropic.ContentBlockParamUnion{}, err
	}
	for _, s := range segs {
		switch {
		case s.Media == nil:
			if s.Text != "" { // Anthropic refuses empty text blocks
				r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: s.Text}})
			}
		case s.Media.MIMEType == "application/pdf":
			d := &anthropic.DocumentBlockParam{}
			if s.Media.Data != nil {
				d.Source.OfBase64 = &anthropic.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(s.Media.Data)}
			} else {
				d.Source.OfURL = &anthropic.URLPDFSourceParam{URL: s.Media.URI}
			}
			r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfDocument: d})
		default:
			img := &anthropic.ImageBlockParam{}
			if s.Media.Data != nil {
				img.Source.OfBase64 = &anthropic.Base64ImageSourceParam{
					Data:      base64.StdEncoding.EncodeToString(s.Media.Data),
					MediaType: anthropic.Base64ImageSourceMediaType(s.Media.MIMEType),
				}
			} else {
				img.Source.OfURL = &anthropic.URLImageSourceParam{URL: s.Media.URI}
			}
			r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: img})
		}
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: r}, nil
}
