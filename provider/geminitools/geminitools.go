// Package geminitools connects a turn's tools to Google's Gen AI Go SDK
// (google.golang.org/genai), for the Gemini API and Vertex AI.
//
// Once per turn, build the tools and hand them to the SDK:
//
//	tools, err := toolset.BuildTools(ctx, "assistant", weather, db)
//	decls, err := geminitools.Tools(tools)
//	resp, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents,
//		&genai.GenerateContentConfig{Tools: decls})
//
// then run the model's function calls through the same set and send the
// function responses back:
//
//	reply := resp.Candidates[0].Content
//	contents = append(contents, reply)
//	results, err := geminitools.RunCalls(ctx, tools, reply)
//	if err != nil {
//		return err // an error that should stop the run
//	}
//	contents = append(contents, results)
//
// [RunCalls] runs the calls of one turn concurrently (at most
// [DefaultConcurrency] at a time, see [WithMaxConcurrency]) and returns the
// responses in call order. An error the model should see and can act on
// (bad arguments, an unknown tool, a handler's toolset.NewModelError) becomes a
// function response with an "error" field; any other error stops the run
// and is returned. A call that waits for a human's approval is put to the
// [toolset.Approver] of [WithApprover] and runs again; without one, it
// stops the run with its [*toolset.ApprovalRequiredError].
//
// The Gemini API may send function calls without an ID. Approvals
// ([toolset.WithApprovalRequired]) are recorded by call ID, so such a call
// of a tool that needs approval cannot be approved, even with an approver:
// it stops the run with a [*toolset.ApprovalRequiredError] that says so.
//
// # Keeping the prompt cache
//
// Gemini has no tool search of its own: the library's search tool
// ([toolset.NewToolSearch]) shows the tools it finds from the next step
// on. A turn that hides a tool shown before can keep the declarations the
// same, restricting the model by name instead: see [StableTools].
//
// # Preflight
//
// A schema Gemini refuses is otherwise found when Gemini answers 400, one
// tool at a time. [Check] applies Gemini's rules to a turn's tools and
// reports every problem of every tool at once, as
// [toolset.PreflightProblem]s (tool, JSON Pointer, what is wrong, what to
// do), and a [*toolset.PreflightError] listing them; [WithPreflight] runs
// it as part of [Tools], which then fails with that error rather than send
// the tools. Where a lossless rewrite exists (inlining a non-recursive
// $ref, a type list as an anyOf, const as a one-value enum, merging an
// allOf), Tools with WithPreflight sends the schema rewritten, and Check
// reports the rewrite as a note ([toolset.PreflightProblem.Lowered]); what
// cannot be rewritten without changing which arguments are valid is a
// problem. Schemas come from MCP servers and packages, so the work is
// bounded: a schema over 1 MiB, nested over 100 levels, or with over 20000
// subschemas (references inlined) is one problem, found without walking it,
// and at most 500 problems and 200 notes are kept for a turn (the rest are
// counted). Check remembers its findings for each schema, so a turn over
// unchanged tools walks none again. A conversion without WithPreflight does
// none of this.
package geminitools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"google.golang.org/genai"
)

// DefaultConcurrency (8) is how many tool calls of one turn run at once unless
// [WithMaxConcurrency] says otherwise.
const DefaultConcurrency = provider.DefaultConcurrency

// CallError is a tool call whose error should stop the run. It wraps the
// error the call returned (a *toolset.ToolError, a *toolset.PanicError, a
// *toolset.ApprovalRequiredError, ...).
type CallError = provider.CallError

// pkg names this package in its errors.
const pkg = "geminitools"

// NameError reports a tool name that Gemini does not accept.
type NameError struct {
	// Tool is the tool's name.
	Tool string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *NameError) Error() string {
	return fmt.Sprintf("geminitools: tool name %q is not valid for Gemini: %s", e.Tool, e.Reason)
}

// maxNameLen is the longest function name Gemini accepts.
const maxNameLen = 128

// checkName applies Gemini's rule for function names: a letter or an
// underscore first, then letters, digits, '_', '.', ':' and '-', at most
// 128 characters. Unlike other providers, a name may not start with a
// digit or a dash.
func checkName(name string) error {
	switch {
	case name == "":
		return &NameError{Tool: name, Reason: "the name is empty"}
	case len(name) > maxNameLen:
		return &NameError{Tool: name, Reason: fmt.Sprintf("%d characters, at most %d allowed", len(name), maxNameLen)}
	}
	for i, r := range name {
		letter := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '_'
		if i == 0 && !letter {
			return &NameError{Tool: name, Reason: fmt.Sprintf("must start with a letter or '_', not %q", r)}
		}
		if !letter && !('0' <= r && r <= '9' || r == '.' || r == ':' || r == '-') {
			return &NameError{Tool: name, Reason: fmt.Sprintf("character %q not allowed (only letters, digits, '_', '.', ':' and '-')", r)}
		}
	}
	return nil
}

// Tools returns the turn's tools as one genai.Tool of function
// declarations, in the order the model is sent them, ready for
// GenerateContentConfig.Tools; nil when the turn has no tools. Each
// declaration carries the tool's parameter schema as
// [toolset.Tool.ParametersJSON] gives it, in ParametersJsonSchema. Every
// tool that cannot be sent is reported, the errors joined.
//
// With [WithPreflight], the tools are checked against Gemini's rules first
// (see [Check]) and sent with their schemas lowered; other options are
// ignored here.
func Tools(tools *toolset.ToolList, opts ...Option) ([]*genai.Tool, error) {
	conv := declaration
	if len(opts) > 0 && provider.Apply(opts).Preflight {
		if _, err := Check(tools); err != nil {
			return nil, err
		}
		conv = loweredDeclaration
	}
	decls, err := provider.ConvertTools(tools, conv)
	if err != nil || decls == nil {
		return nil, err
	}
	return []*genai.Tool{{FunctionDeclarations: decls}}, nil
}

// declaration is t as a function declaration. The schema is sent as the
// bytes t caches, which the SDK encodes as they are: there is nothing to
// convert, and so nothing to cache.
func declaration(t toolset.Tool) (*genai.FunctionDeclaration, error) {
	if err := checkName(t.Name); err != nil {
		return nil, err
	}
	raw, err := t.ParametersJSON()
	if err != nil {
		return nil, fmt.Errorf("%s: tool %q: %w", pkg, t.Name, err)
	}
	return &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: raw}, nil
}

// loweredDeclaration is t as a function declaration, its schema lowered
// for Gemini (see [Check]), which has passed the preflight.
func loweredDeclaration(t toolset.Tool) (*genai.FunctionDeclaration, error) {
	l, err := lowered.Of(t)
	if err != nil {
		return nil, fmt.Errorf("%s: tool %q: %w", pkg, t.Name, err)
	}
	if l.schema == nil {
		return nil, fmt.Errorf("%s: tool %q: the parameter schema cannot be sent to Gemini", pkg, t.Name)
	}
	return &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: l.schema}, nil
}

// Calls returns the function calls of a model's content as tool calls, in
// order. Other parts (text, thoughts, code) are not calls of this package
// and are skipped. A nil content has no calls.
func Calls(content *genai.Content) ([]toolset.ToolCall, error) {
	if content == nil {
		return nil, nil
	}
	var out []toolset.ToolCall
	for _, p := range content.Parts {
		if p == nil || p.FunctionCall == nil {
			continue
		}
		fc := p.FunctionCall
		args, err := json.Marshal(fc.Args)
		if err != nil {
			return nil, fmt.Errorf("geminitools: arguments of the call of %q: %w", fc.Name, err)
		}
		out = append(out, toolset.ToolCall{ID: fc.ID, Name: fc.Name, Args: args})
	}
	return out, nil
}

// Option configures the conversion of tools ([WithPreflight]) and how
// [RunCalls] runs calls.
type Option func(*provider.Options)

// WithMaxConcurrency sets how many function calls of one turn run at once;
// 1 runs them one after another. Values below 1 make [RunCalls] fail.
func WithMaxConcurrency(n int) Option { return provider.WithMaxConcurrency(n) }

// WithApprover has each call that waits for a human's approval (see
// [toolset.WithApprovalRequired]) put to approver: the run records the
// answer and the call runs again, or the model is told it was denied, with
// the reason. Without an approver, such a call stops the run: [RunCalls]
// returns a [*CallError] wrapping the [*toolset.ApprovalRequiredError], and
// the results of the other calls are lost. Approvals need call IDs (which
// the Gemini API does not always send) and a run context.
func WithApprover(approver toolset.Approver) Option { return provider.WithApprover(approver) }

// RunCalls runs the function calls of a model's content through the turn's
// tools and returns a user content with one function response per call, in
// call order, each with its call's ID and name; nil when there are no
// calls. Calls run concurrently, at most [DefaultConcurrency] at a time
// (see [WithMaxConcurrency]).
//
// A result is sent as {"output": ...}: a string as itself, any other value
// as its JSON. An error the model should see ([toolset.ErrorText]
// reports true) is sent as {"error": "..."}. Any other error stops the run:
// the calls still running are cancelled and a [*CallError] is returned.
// Images and PDFs of a [*toolset.Content] result are sent as function
// response parts; other media are described in the output text.
//
// ctx is the turn's context: the one tools was built under, or another
// step of its run (see [toolset.ToolList]). A call whose handler panics or
// calls runtime.Goexit stops the run with a [*toolset.PanicError].
func RunCalls(ctx context.Context, tools *toolset.ToolList, content *genai.Content, opts ...Option) (*genai.Content, error) {
	calls, err := Calls(content)
	if err != nil || len(calls) == 0 {
		return nil, err
	}
	parts, err := provider.RunCalls(ctx, pkg, tools, calls, provider.Apply(opts), tools.Execute, responsePart)
	if err != nil {
		return nil, err
	}
	return &genai.Content{Role: genai.RoleUser, Parts: parts}, nil
}

// ResponsePart returns the function response part for a call that the
// application ran itself: the result, or the text of an error the model
// should see. Any other error is returned, since it should stop the run.
func ResponsePart(call toolset.ToolCall, result any, err error) (*genai.Part, error) {
	return provider.Result(pkg, call, result, err, responsePart)
}

// supported reports whether a function response can carry p as a part.
func supported(p toolset.Part) bool {
	media := strings.HasPrefix(p.MIMEType, "image/") || p.MIMEType == "application/pdf"
	return media && (p.Data != nil || p.URI != "")
}

func responsePart(oc provider.Outcome) (*genai.Part, error) {
	fr := &genai.FunctionResponse{ID: oc.Call.ID, Name: oc.Call.Name}
	if oc.IsError {
		fr.Response = map[string]any{"error": oc.Message}
		return &genai.Part{FunctionResponse: fr}, nil
	}
	var output any
	if c, ok := oc.Result.(*toolset.Content); ok && c != nil {
		segs, err := provider.Segments(c, supported)
		if err != nil {
			return nil, err
		}
		output = provider.JoinText(segs)
		for _, s := range segs {
			switch {
			case s.Media == nil:
			case s.Media.Data != nil:
				fr.Parts = append(fr.Parts, genai.NewFunctionResponsePartFromBytes(s.Media.Data, s.Media.MIMEType))
			default:
				fr.Parts = append(fr.Parts, genai.NewFunctionResponsePartFromURI(s.Media.URI, s.Media.MIMEType))
			}
		}
	} else {
		var err error
		if output, err = outputValue(oc.Result); err != nil {
			return nil, err
		}
	}
	fr.Response = map[string]any{"output": output}
	return &genai.Part{FunctionResponse: fr}, nil
}

// outputValue returns a result as the value of the "output" field: a
// string as itself, anything else as the JSON value toolset.ResultText
// renders it to (or that text, if it is not JSON).
func outputValue(result any) (any, error) {
	text, err := toolset.ResultText(result)
	if err != nil {
		return nil, err
	}
	if _, isString := result.(string); isString {
		return text, nil
	}
	var v any
	if json.Unmarshal([]byte(text), &v) == nil {
		return v, nil
	}
	return text, nil
}
