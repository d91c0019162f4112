package openaitools

import (
	"errors"
	"fmt"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// DefaultConcurrency (8) is how many tool calls of one turn run at once unless
// [WithMaxConcurrency] says otherwise.
const DefaultConcurrency = provider.DefaultConcurrency

// CallError is a tool call whose error should stop the run. It wraps the
// error the call returned (a *toolset.ToolError, a *toolset.PanicError, a
// *toolset.ApprovalRequiredError, ...).
type CallError = provider.CallError

// Option configures the conversion of tools and the running of calls. Each
// function of this package reads the options that concern it, so one list
// of options can be passed to all of them.
type Option func(*provider.Options)

// WithStrict sends every tool in OpenAI's strict mode, with its parameter
// schema rewritten to the subset strict mode accepts: every property
// required, the optional ones made nullable, additionalProperties false on
// every object, unsupported keywords that only narrow what is valid removed
// (the tool still checks them). A schema that cannot be made strict makes
// [ChatTools] and [ResponseTools] fail with a [*StrictError].
func WithStrict() Option { return provider.WithStrict() }

// WithMaxConcurrency sets how many tool calls of one turn run at once; 1
// runs them one after another. Values below 1 make the run functions fail.
func WithMaxConcurrency(n int) Option { return provider.WithMaxConcurrency(n) }

// WithApprover has each call that waits for a human's approval (see
// [toolset.WithApprovalRequired]) put to approver: the run records the
// answer and the call runs again, or the model is told it was denied, with
// the reason. Without an approver, such a call stops the run: the run
// functions return a [*CallError] wrapping the
// [*toolset.ApprovalRequiredError], and the results of the other calls are
// lost. Approvals need call IDs and a run context.
func WithApprover(approver toolset.Approver) Option { return provider.WithApprover(approver) }

// function is one tool as OpenAI is sent it.
type function struct {
	name, description string
	params            map[string]any
	strict            bool
	// deferred and search mark, with defer loading (Responses only), a
	// deferred tool and the tool search.
	deferred, search bool
}

// functions converts the turn's tools, reporting every tool that cannot be
// sent. With catalog, the turn's whole catalogue is converted, deferred
// tools and the first tool search marked.
func functions(tools *toolset.ToolList, o provider.Options, catalog bool) ([]function, error) {
	if o.Preflight {
		if _, err := check(tools, o.Strict, catalog); err != nil {
			return nil, err
		}
	}
	if !catalog {
		return provider.ConvertTools(tools, func(t toolset.Tool) (function, error) { return convert(t, o.Strict) })
	}
	searched := false
	return provider.ConvertCatalog(tools, func(t toolset.Tool) (function, error) {
		f, err := convert(t, o.Strict)
		f.deferred = t.Deferred()
		if t.IsToolSearch() && !searched {
			f.search, searched = true, true
		}
		return f, err
	})
}

func convert(t toolset.Tool, strict bool) (function, error) {
	cache := plainSchemas
	if strict {
		cache = strictSchemas
	}
	fs, err := cache.Of(t)
	if err != nil {
		var se *StrictError
		if errors.As(err, &se) {
			named := *se
			named.Tool = t.Name
			return function{}, &named
		}
		return function{}, fmt.Errorf("openaitools: tool %q: %w", t.Name, err)
	}
	params := make(map[string]any, len(fs))
	for _, f := range fs {
		params[f.key] = f.val
	}
	return function{name: t.Name, description: t.Description, params: params, strict: strict}, nil
}

func optString(s string) param.Opt[string] {
	if s == "" {
		return param.Opt[string]{}
	}
	return openai.String(s)
}

// ChatTools returns the turn's tools as Chat Completions tool params, in the
// order the model is sent them. Each parameter schema is sent as
// [toolset.Tool.ParametersJSON] gives it, or in its strict form with
// [WithStrict]. Every tool that cannot be sent is reported, the errors joined.
// Tool names need no check here: OpenAI's rule is the one
// [toolset.BuildTools] enforces. With [WithPreflight], the tools are
// checked against OpenAI's rules first (see [Check]).
//
// A turn with no tools (every tool hidden from this user, say) gives nil,
// which the SDK leaves out of the request: OpenAI rejects an empty tools
// array with status 400. Leave ToolChoice and ParallelToolCalls unset in
// that turn too, since OpenAI rejects them without tools.
func ChatTools(tools *toolset.ToolList, opts ...Option) ([]openai.ChatCompletionToolUnionParam, error) {
	fs, err := functions(tools, provider.Apply(opts), false)
	if err != nil || len(fs) == 0 {
		return nil, err
	}
	out := make([]openai.ChatCompletionToolUnionParam, len(fs))
	for i, f := range fs {
		def := openai.FunctionDefinitionParam{
			Name:        f.name,
			Description: optString(f.description),
			Parameters:  f.params,
		}
		if f.strict {
			def.Strict = openai.Bool(true)
		}
		out[i] = openai.ChatCompletionFunctionTool(def)
	}
	return out, nil
}

// ResponseTools returns the turn's tools as Responses API function tools, in
// the order the model is sent them; see [ChatTools]. The Responses API
// requires the strict flag, which is false unless [WithStrict] is given. A
// turn with no tools gives nil, as for ChatTools, so that the request has
// no tools field. With [WithDeferLoading], the turn's whole catalogue is
// sent, deferred tools with defer_loading, and the tool search as
// OpenAI's client-executed tool_search.
func ResponseTools(tools *toolset.ToolList, opts ...Option) ([]responses.ToolUnionParam, error) {
	o := provider.Apply(opts)
	fs, err := functions(tools, o, o.DeferLoading)
	if err != nil || len(fs) == 0 {
		return nil, err
	}
	out := make([]responses.ToolUnionParam, len(fs))
	for i, f := range fs {
		if f.search {
			out[i] = responses.ToolUnionParam{OfToolSearch: &responses.ToolSearchToolParam{
				Description: optString(f.description),
				Parameters:  f.params,
				Execution:   responses.ToolSearchToolExecutionClient,
			}}
			continue
		}
		out[i] = responses.ToolUnionParam{OfFunction: f.responseTool()}
	}
	if ns := namespaces(o); len(ns) > 0 {
		out = group(out, fs, ns)
	}
	return out, nil
}

// responseTool is f as a Responses API function tool.
func (f function) responseTool() *responses.FunctionToolParam {
	p := &responses.FunctionToolParam{
		Name:        f.name,
		Description: optString(f.description),
		Parameters:  f.params,
		Strict:      openai.Bool(f.strict),
	}
	if f.deferred {
		p.DeferLoading = openai.Bool(true)
	}
	return p
}
