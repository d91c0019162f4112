package anthropictools

import (
	"encoding/json"
	"fmt"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
)

// provider names Anthropic in a *toolset.PreflightError.
const providerName = "Anthropic"

// maxNameLen is the longest tool name Anthropic accepts: its tool use
// documentation gives the rule ^[a-zA-Z0-9_-]{1,64}$.
const maxNameLen = 64

const nameRule = "^[a-zA-Z0-9_-]{1,64}$"

// WithPreflight has [Tools] run [Check] first and fail with its
// *toolset.PreflightError, listing every problem of every tool, rather
// than send a tool Anthropic would refuse.
func WithPreflight() Option { return provider.WithPreflight() }

// Check applies Anthropic's rules for tool definitions to the turn's
// tools and reports every tool Anthropic would refuse, all at once:
//
//   - a name must match ^[a-zA-Z0-9_-]{1,64}$;
//   - the input schema must be an object schema: a JSON object whose
//     "type", if given, is "object" (the adapter sends "object" when it is
//     left out, which is noted), with no anyOf, oneOf or allOf at its
//     root;
//   - the schema must be valid JSON Schema draft 2020-12, which Anthropic
//     checks it against: forms of older drafts (an array "items", a
//     boolean "exclusiveMinimum"), a "type" that names no JSON type, a
//     "required" that is not a list of names, and the like, are refused.
//
// It returns every problem and note (see [toolset.PreflightProblem]), and
// a *toolset.PreflightError listing the problems when there is one. A
// schema is walked within bounds (see the package doc, "Preflight"); one
// past them is a problem.
//
// With [WithDeferLoading], the turn's whole catalogue
// ([toolset.ToolList.Catalog]) is checked, the deferred tools the run has
// not revealed included, since [Tools] sends every one of them; other
// options are ignored. Given the options given to Tools, Check checks
// what Tools sends.
func Check(tools *toolset.ToolList, opts ...Option) ([]toolset.PreflightProblem, error) {
	return check(tools, provider.Apply(opts).DeferLoading)
}

// check is Check, over the turn's catalogue with catalog (every tool sent
// with defer loading).
func check(tools *toolset.ToolList, catalog bool) ([]toolset.PreflightProblem, error) {
	r := &provider.Report{Provider: providerName}
	if catalog {
		for t := range tools.Catalog() {
			checkTool(r, t)
		}
	} else {
		for t := range tools.All() {
			checkTool(r, t)
		}
	}
	return r.Result()
}

func checkTool(r *provider.Report, t toolset.Tool) {
	provider.CheckName(r, t.Name, maxNameLen, provider.Word, nil, nameRule)
	f, err := checked.Of(t)
	if err != nil {
		r.Tool(t.Name, "/parameters", err.Error(), "give the tool a valid parameter schema")
		return
	}
	r.Schema(t.Name, f)
}

// checked remembers the findings of each parameter schema, so that a
// preflight of unchanged tools, turn after turn, walks no schema again.
var checked = provider.NewSchemaCache(func(raw json.RawMessage) (*provider.Findings, error) {
	return checkSchema(raw), nil
})

// checkSchema applies Anthropic's rules to one parameter schema.
func checkSchema(raw json.RawMessage) *provider.Findings {
	f := &provider.Findings{}
	v, ok := provider.ParseBounded(raw, f)
	if !ok {
		return f
	}
	root, isObject := v.(*provider.Object)
	if !isObject {
		f.Problem("", fmt.Sprintf("the input schema is %s, not an object schema", provider.Encode(v)), `make the parameters a JSON object schema with "type": "object"`)
		return f
	}
	switch types, present, _ := provider.TypeNames(root); {
	case !present:
		f.Note("", `the input schema has no "type"; it is sent with "type": "object"`)
	case len(types) != 1 || types[0] != "object":
		t, _ := root.Lookup("type")
		f.Problem("/type", fmt.Sprintf(`the input schema must have "type": "object", not %s`, provider.Encode(t)), "make the parameters one object whose properties are the arguments")
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if _, ok := root.Lookup(k); ok {
			f.Problem("/"+k, "Anthropic does not accept "+k+" at the root of an input schema", "merge the alternatives into one object schema, or move them into a property")
		}
	}
	provider.Walk(root, f, func(o *provider.Object, path string) { draft2020(o, path, f) })
	return f
}

// draft2020 reports the keywords of o that draft 2020-12's meta-schema
// refuses.
func draft2020(o *provider.Object, path string, f *provider.Findings) {
	if _, present, ok := provider.TypeNames(o); present && !ok {
		f.Problem(provider.Pointer(path, "type"), fmt.Sprintf("%s names no JSON type", provider.Encode(o.Get("type"))), `use "string", "number", "integer", "boolean", "object", "array" or "null", or an array of them`)
	}
	if r, ok := o.Lookup("required"); ok && !stringList(r) {
		f.Problem(provider.Pointer(path, "required"), "required must be an array of property names", "list the required properties' names as strings")
	}
	if e, ok := o.Lookup("enum"); ok {
		if _, isArray := e.([]any); !isArray {
			f.Problem(provider.Pointer(path, "enum"), "enum must be an array", "list the allowed values in an array")
		}
	}
	if it, ok := o.Lookup("items"); ok {
		if _, isArray := it.([]any); isArray {
			f.Problem(provider.Pointer(path, "items"), "an array \"items\" (a tuple, in drafts before 2020-12) is not valid in draft 2020-12", `use "prefixItems" for the tuple, and "items" for what follows it`)
		}
	}
	for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
		if b, ok := o.Lookup(k); ok {
			if _, isBool := b.(bool); isBool {
				f.Problem(provider.Pointer(path, k), "a boolean "+k+" (draft-04) is not valid in draft 2020-12", "give "+k+" the bound itself, as a number, in place of minimum/maximum")
			}
		}
	}
	for _, m := range o.Members() {
		switch provider.ShapeOf(m.Key) {
		case provider.SubschemaMap:
			if _, isObject := m.Value.(*provider.Object); !isObject {
				f.Problem(provider.Pointer(path, m.Key), m.Key+" must be an object of schemas", "")
			}
		case provider.SubschemaList:
			if list, isArray := m.Value.([]any); !isArray || len(list) == 0 && m.Key != "prefixItems" {
				f.Problem(provider.Pointer(path, m.Key), m.Key+" must be a non-empty array of schemas", "")
			}
		}
	}
}

func stringList(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, e := range list {
		if _, isString := e.(string); !isString {
			return false
		}
	}
	return true
}
