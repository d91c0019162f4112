package openaitools

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
)

// provider names OpenAI in a *toolset.PreflightError.
const providerName = "OpenAI"

const (
	maxNameLen = 64
	nameRule   = "^[a-zA-Z0-9_-]{1,64}$"
)

// WithPreflight has [ChatTools] and [ResponseTools] run [Check] first, with
// the same options, and fail with its *toolset.PreflightError, listing
// every problem of every tool, rather than send a tool OpenAI would
// refuse.
func WithPreflight() Option { return provider.WithPreflight() }

// Check applies OpenAI's rules for function definitions to the turn's
// tools and reports every tool OpenAI would refuse, all at once:
//
//   - a name must match ^[a-zA-Z0-9_-]{1,64}$ (the rule
//     [toolset.BuildTools] enforces too);
//   - the parameter schema must be an object schema with "type":
//     "object" at its root, and no anyOf, oneOf or allOf there;
//   - with [WithStrict], the schema must fit strict mode (see
//     [WithStrict]); the first keyword of each schema that cannot is
//     reported, as [ChatTools] would report it with a [*StrictError].
//
// With [WithDeferLoading], the turn's whole catalogue
// ([toolset.ToolList.Catalog]) is checked, the deferred tools the run has
// not revealed included, as [ResponseTools] sends it; [ChatTools], which
// ignores that option, sends only the turn's tools. Other options are
// ignored. It returns every problem (see [toolset.PreflightProblem]), and
// a *toolset.PreflightError listing them when there is one. A schema is
// walked within bounds (see the package doc, "Preflight"); one past them
// is a problem.
func Check(tools *toolset.ToolList, opts ...Option) ([]toolset.PreflightProblem, error) {
	o := provider.Apply(opts)
	return check(tools, o.Strict, o.DeferLoading)
}

// check is Check, over the turn's catalogue with catalog (every tool sent
// with defer loading).
func check(tools *toolset.ToolList, strict, catalog bool) ([]toolset.PreflightProblem, error) {
	r := &provider.Report{Provider: providerName}
	if catalog {
		for t := range tools.Catalog() {
			checkTool(r, t, strict)
		}
	} else {
		for t := range tools.All() {
			checkTool(r, t, strict)
		}
	}
	return r.Result()
}

func checkTool(r *provider.Report, t toolset.Tool, strict bool) {
	provider.CheckName(r, t.Name, maxNameLen, provider.Word, nil, nameRule)
	cache := checkedPlain
	if strict {
		cache = checkedStrict
	}
	f, err := cache.Of(t)
	if err != nil {
		r.Tool(t.Name, "/parameters", err.Error(), "give the tool a valid parameter schema")
		return
	}
	r.Schema(t.Name, f)
}

// checkedPlain and checkedStrict remember the findings of each parameter
// schema, so that a preflight of unchanged tools walks no schema again.
var (
	checkedPlain  = provider.NewSchemaCache(func(raw json.RawMessage) (*provider.Findings, error) { return checkSchema(raw, false), nil })
	checkedStrict = provider.NewSchemaCache(func(raw json.RawMessage) (*provider.Findings, error) { return checkSchema(raw, true), nil })
)

func checkSchema(raw json.RawMessage, strict bool) *provider.Findings {
	f := &provider.Findings{}
	v, ok := provider.ParseBounded(raw, f)
	if !ok {
		return f
	}
	root, isObject := v.(*provider.Object)
	if !isObject {
		f.Problem("", fmt.Sprintf("the parameter schema is %s, not an object schema", provider.Encode(v)), `make the parameters a JSON object schema with "type": "object"`)
		return f
	}
	types, present, _ := provider.TypeNames(root)
	switch {
	case !present:
		f.Problem("", `the parameter schema has no "type"; OpenAI requires "type": "object" at the root`, `add "type": "object"`)
	case len(types) != 1 || types[0] != "object":
		f.Problem("/type", fmt.Sprintf(`the parameter schema must have "type": "object", not %s`, provider.Encode(root.Get("type"))), "make the parameters one object whose properties are the arguments")
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if _, ok := root.Lookup(k); ok {
			f.Problem("/"+k, "OpenAI does not accept "+k+" at the root of a parameter schema", "merge the alternatives into one object schema, or move them into a property")
		}
	}
	if !strict || f.Failed() {
		return f
	}
	if _, err := strictSchema(raw); err != nil {
		var se *StrictError
		if !errors.As(err, &se) {
			f.Problem("", err.Error(), "")
			return f
		}
		path := se.Path
		if se.Keyword != "" {
			path = provider.Pointer(path, se.Keyword)
		}
		f.Problem(path, se.Reason, "rewrite this part of the schema, or send the tools without WithStrict")
	}
	return f
}
