// Package provider holds what an adapter between a [toolset.ToolList]
// and one model provider's API needs besides that provider's wire types.
// The adapters of this repository (provider/openaitools,
// provider/anthropictools, provider/geminitools) are built on it; so can
// an adapter for another provider, outside the repository.
//
// An adapter does three things each turn: it converts the turn's tools to
// the provider's form, runs the calls the model makes, and converts their
// results to what the provider is sent. This package does the parts of
// each that do not depend on the provider.
//
// # Options
//
// [Options] are the options every adapter takes. An adapter declares an
// Option type of its own, func(*[Options]), so that an option of one
// adapter cannot be passed to another, exports the constructors it
// supports ([WithPreflight], [WithMaxConcurrency], [WithApprover],
// [WithStrict]) under its own name, and reads them with [Apply].
//
// # Converting tools
//
// [ConvertTools] converts each of a turn's tools with the adapter's
// function and reports every tool that cannot be sent, not only the first.
// A [SchemaCache] keeps the provider form of each parameter schema, so
// that a turn over unchanged tools converts nothing again.
//
// # Keeping the prompt cache
//
// A provider caches the prompt it was sent, tools first, and a change to
// the tools loses the cache. [ConvertCatalog] converts a turn's whole
// catalogue, the deferred tools its run has not revealed included, for a
// provider that loads deferred tools itself ([Options.DeferLoading]), so
// that a tool search's reveals do not change the tools sent. [Stable]
// sends the earlier tools again when a turn hides some, for a provider
// that restricts the model to some of the tools by name.
// [Options.Namespaces] group tools for a provider that takes groups.
//
// # Running calls
//
// [RunCalls] runs one turn's calls: concurrently up to
// [Options.Concurrency], calls that depend on each other in the order
// [toolset.ToolList.CallOrder] gives, calls that wait for approval put to
// [Options.Approver]. Each [Outcome] is a result or the text of an error
// the model should see; any other error stops the run as a [*CallError].
// [RunPausing] is the form for an agent loop that pauses for approval
// rather than stopping, and [Result] converts the result of a call the
// application ran itself.
//
// # Results
//
// [Segments] splits a result into the text and media [Segment]s a
// provider is sent in a tool result, keeping the order of a
// [*toolset.Content]'s parts; [JoinText], [HasMedia], [IsImage] and
// [IsWebURL] help an adapter decide what its provider takes.
//
// # Preflight
//
// A preflight checks a turn's tools against a provider's rules before the
// provider is sent them, so that a schema the provider would refuse, or
// accept and then ignore, is reported with its path and a fix.
// [ParseBounded] decodes a parameter schema within bounds on its size and
// depth (schemas come from MCP servers and packages), [Walk] visits its
// subschemas ([ShapeOf] tells which keywords hold them), and a
// [Findings] collects the problems, which a [Report] ties to their tools
// and turns into a [*toolset.PreflightError]. [CheckName], [Word],
// [TypeNames] and [Pointer] are the common checks. Schemas are decoded as
// [Object]s, which keep the order of their members, and written back with
// [Encode].
package provider

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/gotoolset/toolset"
)

// DefaultConcurrency is how many tool calls of one turn run at once unless
// [WithMaxConcurrency] says otherwise.
const DefaultConcurrency = 8

// Options are the options of every adapter. Each adapter has an Option
// type of its own, func(*Options) under its name, so that an option of one
// adapter cannot be passed to another; each function reads the options
// that concern it.
type Options struct {
	// Strict asks for a provider's strict mode (OpenAI's).
	Strict bool
	// Preflight has the conversion of tools check them against the
	// provider's rules first, and apply the adapter's lossless rewrites.
	// (Next to Strict, so that Options stays as small as it was: Apply
	// allocates one per call.)
	Preflight bool
	// DeferLoading sends deferred tools ([toolset.WithDeferred]) through
	// the provider's own deferred loading, where it has one: the turn's
	// whole catalogue ([toolset.ToolList.Catalog]) with deferred tools
	// marked, and a tool search's results as the provider's references
	// to the tools found, so that the tools sent stay the same as searches
	// reveal tools.
	DeferLoading bool
	// Namespaces are groups of tools a provider is sent together under a
	// name (OpenAI's namespaces); nil sends every tool on its own. (A
	// pointer, so that Options stays small.)
	Namespaces *[]Namespace
	// Concurrency is how many calls of one turn run at once.
	Concurrency int
	// Approver asks a human about calls that wait for approval; nil stops
	// the run at such a call.
	Approver toolset.Approver
}

// Namespace is a group of tools a provider is sent under one name: the
// tools whose names begin with Prefix and Separator (the tools of a
// [toolset.Prefixed]), each by the rest of its name.
type Namespace struct {
	// Prefix is the group's name, and the start of its tools' names.
	Prefix string
	// Separator follows Prefix in the tools' names.
	Separator string
	// Description tells the model what the group's tools are for.
	Description string
}

// Apply returns the options opts set over the defaults; nil options are
// skipped.
func Apply[O ~func(*Options)](opts []O) Options {
	if len(opts) == 0 {
		return Options{Concurrency: DefaultConcurrency} // not escaping: no allocation
	}
	o := Options{Concurrency: DefaultConcurrency}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithStrict sets [Options.Strict].
func WithStrict() func(*Options) { return func(o *Options) { o.Strict = true } }

// WithPreflight sets [Options.Preflight].
func WithPreflight() func(*Options) { return func(o *Options) { o.Preflight = true } }

// WithMaxConcurrency sets [Options.Concurrency].
func WithMaxConcurrency(n int) func(*Options) { return func(o *Options) { o.Concurrency = n } }

// WithApprover sets [Options.Approver]: calls that wait for approval are
// put to a, from the goroutines that run them, and run once it answers.
func WithApprover(a toolset.Approver) func(*Options) { return func(o *Options) { o.Approver = a } }

// RunCalls runs one turn's calls of tools with exec (approvals asked of
// o.Approver, see [WithApprover]), at most o.Concurrency at a time, in the
// order tools gives them ([toolset.ToolList.CallOrder]), and converts
// each outcome, in call order, with conv. pkg names the adapter in the
// errors.
func RunCalls[R any](ctx context.Context, pkg string, tools *toolset.ToolList, calls []toolset.ToolCall, o Options, exec Exec, conv func(Outcome) (R, error)) ([]R, error) {
	var after [][]int
	if tools != nil && len(calls) > 1 && o.Concurrency > 1 {
		after = tools.CallOrder(calls)
	}
	outcomes, err := run(ctx, calls, o.Concurrency, after, approving(exec, o.Approver))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	out := make([]R, len(outcomes))
	for i, oc := range outcomes {
		if out[i], err = conv(oc); err != nil {
			return nil, convError(pkg, oc.Call, err)
		}
	}
	return out, nil
}

// Result converts the result of a call the application ran itself with
// conv: the result, or the text of an error the model should see
// ([toolset.ErrorText] reports true). Any other error is returned as a
// [*CallError], since it should stop the run. pkg names the adapter in
// the errors.
func Result[R any](pkg string, call toolset.ToolCall, result any, err error, conv func(Outcome) (R, error)) (R, error) {
	oc := Outcome{Call: call, Result: result}
	if err != nil {
		msg, ok := toolset.ErrorText(err)
		if !ok {
			var zero R
			return zero, fmt.Errorf("%s: %w", pkg, &CallError{Call: call, Err: err})
		}
		oc.Result, oc.IsError, oc.Message = nil, true, msg
	}
	r, err := conv(oc)
	if err != nil {
		var zero R
		return zero, convError(pkg, call, err)
	}
	return r, nil
}

// convError names the call whose result could not be converted (its
// encoding failed or panicked).
func convError(pkg string, call toolset.ToolCall, err error) error {
	return fmt.Errorf("%s: tool call %s of %q: %w", pkg, call.ID, call.Name, err)
}

// ConvertCatalog is [ConvertTools] over the turn's catalogue
// ([toolset.ToolList.Catalog]): its tools and, in their places, the
// deferred tools its run has not revealed, for a provider that is sent
// deferred tools marked as such ([toolset.Tool.Deferred]).
func ConvertCatalog[T any](tools *toolset.ToolList, conv func(toolset.Tool) (T, error)) ([]T, error) {
	return convert(tools.Catalog(), 0, conv)
}

// ConvertTools converts each of the turn's tools with conv, in the order
// the model is sent them, and reports every tool that cannot be sent, the
// errors joined. A turn with no tools gives nil, so that a request leaves
// the tools field out rather than send an empty one, which providers
// refuse.
func ConvertTools[T any](tools *toolset.ToolList, conv func(toolset.Tool) (T, error)) ([]T, error) {
	if tools.Len() == 0 {
		return nil, nil
	}
	return convert(tools.All(), tools.Len(), conv)
}

// convert converts each tool of seq with conv (n, a capacity hint), and
// reports every tool that cannot be converted, the errors joined. No tools
// give nil.
func convert[T any](seq iter.Seq[toolset.Tool], n int, conv func(toolset.Tool) (T, error)) ([]T, error) {
	var out []T
	if n > 0 {
		out = make([]T, 0, n)
	}
	var errs []error
	for t := range seq {
		v, err := conv(t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, v)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
