// Package adapter is what the provider adapters (provider/openaitools,
// provider/anthropictools, provider/geminitools) share, so that each of
// them holds only its provider's wire types: the options, the error that
// stops a run ([CallError]), the running of one turn's calls (concurrently
// up to a bound, results in call order, errors the model should see kept
// apart from errors that stop the run, approvals asked of an
// [toolset.Approver]), the splitting of results into text and media, and
// the cache of the provider form of parameter schemas ([SchemaCache]).
package adapter

import (
	"context"
	"errors"
	"fmt"

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
	// Concurrency is how many calls of one turn run at once.
	Concurrency int
	// Approver asks a human about calls that wait for approval; nil stops
	// the run at such a call.
	Approver toolset.Approver
}

// Apply returns the options opts set over the defaults; nil options are
// skipped.
func Apply[O ~func(*Options)](opts []O) Options {
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

// WithApprover sets [Options.Approver].
func WithApprover(a toolset.Approver) func(*Options) { return func(o *Options) { o.Approver = a } }

// RunCalls runs one turn's calls of tools with exec (approvals asked of
// o.Approver, see [Approving]), at most o.Concurrency at a time, in the
// order tools gives them ([toolset.ToolList.CallOrder]), and converts
// each outcome, in call order, with conv. pkg names the adapter in the
// errors.
func RunCalls[R any](ctx context.Context, pkg string, tools *toolset.ToolList, calls []toolset.ToolCall, o Options, exec Exec, conv func(Outcome) (R, error)) ([]R, error) {
	var after [][]int
	if tools != nil && len(calls) > 1 && o.Concurrency > 1 {
		after = tools.CallOrder(calls)
	}
	outcomes, err := Run(ctx, calls, o.Concurrency, after, Approving(exec, o.Approver))
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

// ConvertTools converts each of the turn's tools with conv, in the order
// the model is sent them, and reports every tool that cannot be sent, the
// errors joined. A turn with no tools gives nil, so that a request leaves
// the tools field out rather than send an empty one, which providers
// refuse.
func ConvertTools[T any](tools *toolset.ToolList, conv func(toolset.Tool) (T, error)) ([]T, error) {
	if tools.Len() == 0 {
		return nil, nil
	}
	out := make([]T, 0, tools.Len())
	var errs []error
	for t := range tools.All() {
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
