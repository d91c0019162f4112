package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/jsontext"
)

// Bounds on a preflight. Schemas come from MCP servers and packages, so
// the work spent on one is bounded: a schema larger or deeper than this is
// one problem, found without walking it.
const (
	// PreflightMaxBytes is the largest encoded parameter schema a
	// preflight walks.
	PreflightMaxBytes = 1 << 20
	// PreflightMaxDepth is the deepest nesting of JSON values in a
	// schema a preflight walks.
	PreflightMaxDepth = 100
	// PreflightMaxNodes bounds the subschemas a preflight visits in one
	// schema, and the subschemas a rewrite may produce (inlining
	// references can multiply them).
	PreflightMaxNodes = 20000
	// PreflightMaxProblems is how many problems a preflight keeps for one
	// turn; the rest are counted.
	PreflightMaxProblems = 500
	// PreflightMaxNotes is how many notes it keeps; the rest are left
	// out.
	PreflightMaxNotes = 200
)

// Finding is a problem or a note about one schema, before it is tied to a
// tool: Path is a JSON Pointer into the parameter schema.
type Finding struct {
	Path, Problem, Fix string
	Lowered            bool
}

// Findings collects the findings about one schema, up to
// [PreflightMaxProblems].
type Findings struct {
	List     []Finding
	Omitted  int // problems (not notes) past the bound
	notes    int
	problems int
}

// Problem records a problem at path.
func (f *Findings) Problem(path, problem, fix string) { f.add(Finding{path, problem, fix, false}) }

// Note records a lossless rewrite at path.
func (f *Findings) Note(path, what string) { f.add(Finding{Path: path, Problem: what, Lowered: true}) }

func (f *Findings) add(x Finding) {
	if !keep(x.Lowered, &f.notes, &f.problems, &f.Omitted) {
		return
	}
	f.List = append(f.List, x)
}

// keep counts a problem or a note, and reports whether it is within the
// bounds; a problem past them is counted in omitted.
func keep(lowered bool, notes, problems, omitted *int) bool {
	n, max := problems, PreflightMaxProblems
	if lowered {
		n, max = notes, PreflightMaxNotes
	}
	if *n >= max {
		if !lowered {
			*omitted++
		}
		return false
	}
	*n++
	return true
}

// Failed reports whether a problem (not a note) was recorded.
func (f *Findings) Failed() bool {
	if f.Omitted > 0 {
		return true
	}
	for _, x := range f.List {
		if !x.Lowered {
			return true
		}
	}
	return false
}

// Report gathers the problems of a turn's tools for one provider.
type Report struct {
	Provider  string
	problems  []toolset.PreflightProblem
	omitted   int
	notes     int
	nproblems int
}

// Tool records a problem or a note about a tool's name or description;
// path is "/name" or "/description".
func (r *Report) Tool(tool, path, problem, fix string) {
	r.add(toolset.PreflightProblem{Tool: tool, Path: path, Problem: problem, Fix: fix})
}

// Schema records the findings about a tool's parameter schema.
func (r *Report) Schema(tool string, f *Findings) {
	if f == nil {
		return
	}
	for _, x := range f.List {
		r.add(toolset.PreflightProblem{Tool: tool, Path: "/parameters" + x.Path, Problem: x.Problem, Fix: x.Fix, Lowered: x.Lowered})
	}
	r.omitted += f.Omitted
}

func (r *Report) add(p toolset.PreflightProblem) {
	if keep(p.Lowered, &r.notes, &r.nproblems, &r.omitted) {
		r.problems = append(r.problems, p)
	}
}

// Result returns every problem and note, and a *toolset.PreflightError
// when there is a problem.
func (r *Report) Result() ([]toolset.PreflightProblem, error) {
	return r.problems, toolset.NewPreflightError(r.Provider, r.problems, r.omitted)
}

// ErrTooLarge is the error of [ParseBounded] for a schema past the bounds.
var ErrTooLarge = errors.New("schema too large")

var boundedParser = jsontext.Parser{Limits: jsontext.Limits{MaxDepth: PreflightMaxDepth, MaxBytes: PreflightMaxBytes}}

// ParseBounded decodes an encoded schema as an ordered value (see
// jsontext), within the preflight bounds. A schema past them gives a
// problem at the root of f and ok false.
func ParseBounded(raw json.RawMessage, f *Findings) (v any, ok bool) {
	if len(raw) > PreflightMaxBytes {
		f.Problem("", fmt.Sprintf("the schema is %d bytes, more than the %d a preflight reads", len(raw), PreflightMaxBytes), "shorten the schema (fewer properties, shorter descriptions)")
		return nil, false
	}
	v, err := boundedParser.Parse(raw)
	if err != nil {
		f.Problem("", "the schema cannot be read: "+err.Error(), "flatten the schema")
		return nil, false
	}
	return v, true
}

// Pointer appends JSON Pointer tokens to path.
func Pointer(path string, tokens ...string) string {
	for _, t := range tokens {
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
		path += "/" + t
	}
	return path
}

// CheckName reports a name that breaks a provider's rule: at most maxLen
// bytes, every byte accepted by allowed, the first also by first (nil
// accepts any allowed byte). rule describes the rule for the message.
func CheckName(r *Report, name string, maxLen int, allowed, first func(byte) bool, rule string) {
	switch {
	case name == "":
		r.Tool(name, "/name", "the name is empty", "give the tool a name matching "+rule)
		return
	case len(name) > maxLen:
		r.Tool(name, "/name", fmt.Sprintf("the name is %d characters long, at most %d are allowed", len(name), maxLen), "shorten the name, or a prefix added to it, to match "+rule)
		return
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !allowed(c) {
			r.Tool(name, "/name", fmt.Sprintf("character %q at byte %d is not allowed", c, i), "rename the tool (toolset.Renamed) to match "+rule)
			return
		}
		if i == 0 && first != nil && !first(c) {
			r.Tool(name, "/name", fmt.Sprintf("the name may not start with %q", c), "rename the tool (toolset.Renamed) to match "+rule)
			return
		}
	}
}

// Word reports whether c is an ASCII letter, digit, '_' or '-', the bytes
// every provider accepts in a tool name.
func Word(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// TypeNames returns the JSON types a schema's "type" names, and false if
// "type" is neither a type name nor an array of them.
func TypeNames(o *jsontext.Object) (types []string, present, ok bool) {
	t, present := o.Lookup("type")
	if !present {
		return nil, false, true
	}
	switch t := t.(type) {
	case string:
		return []string{t}, true, jsonTypes[t]
	case []any:
		for _, e := range t {
			s, isString := e.(string)
			if !isString || !jsonTypes[s] {
				return nil, true, false
			}
			types = append(types, s)
		}
		return types, true, len(types) > 0
	}
	return nil, true, false
}

var jsonTypes = map[string]bool{
	"string": true, "number": true, "integer": true, "boolean": true,
	"object": true, "array": true, "null": true,
}

// Encode writes v compactly, object members in their order.
func Encode(v any) []byte { return jsontext.Append(nil, v) }

// Subschema keywords, by the shape of their value.
var (
	// SingleKeywords hold one subschema.
	SingleKeywords = []string{"additionalProperties", "items", "not", "if", "then", "else", "contains",
		"propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema"}
	// ListKeywords hold an array of subschemas.
	ListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	// MapKeywords hold an object of subschemas.
	MapKeywords = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

// Walk calls visit for every object subschema of the schema v (v
// included), depth first, each with its JSON Pointer. It stops, with a
// problem in f, after [PreflightMaxNodes] subschemas. Values that are not
// schemas where a schema belongs are left to visit's checks of their
// parent.
func Walk(v any, f *Findings, visit func(o *jsontext.Object, path string)) {
	n := 0
	var walk func(v any, path string) bool
	walk = func(v any, path string) bool {
		o, ok := v.(*jsontext.Object)
		if !ok {
			return true
		}
		if n++; n > PreflightMaxNodes {
			f.Problem(path, fmt.Sprintf("the schema has more than %d subschemas, more than a preflight walks", PreflightMaxNodes), "split the tool, or simplify its schema")
			return false
		}
		visit(o, path)
		for _, m := range o.Members() {
			switch {
			case contains(SingleKeywords, m.Key):
				if list, isList := m.Value.([]any); isList { // items as a tuple, in older drafts
					for i, e := range list {
						if !walk(e, Pointer(path, m.Key, fmt.Sprint(i))) {
							return false
						}
					}
				} else if !walk(m.Value, Pointer(path, m.Key)) {
					return false
				}
			case contains(ListKeywords, m.Key):
				list, _ := m.Value.([]any)
				for i, e := range list {
					if !walk(e, Pointer(path, m.Key, fmt.Sprint(i))) {
						return false
					}
				}
			case contains(MapKeywords, m.Key):
				mo, _ := m.Value.(*jsontext.Object)
				if mo == nil {
					continue
				}
				for _, e := range mo.Members() {
					if !walk(e.Value, Pointer(path, m.Key, e.Key)) {
						return false
					}
				}
			}
		}
		return true
	}
	walk(v, "")
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
