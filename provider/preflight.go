package provider

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/jsontext"
	"github.com/gotoolset/toolset/internal/textcut"
)

// Bounds on a preflight. Schemas come from MCP servers and packages, so
// the work spent on one is bounded: a schema larger or deeper than this is
// one problem, found without walking it.
const (
	// preflightMaxBytes is the largest encoded parameter schema a
	// preflight walks.
	preflightMaxBytes = 1 << 20
	// PreflightMaxDepth is the deepest nesting of JSON values in a
	// schema a preflight walks.
	PreflightMaxDepth = 100
	// PreflightMaxNodes bounds the subschemas a preflight visits in one
	// schema, and the subschemas a rewrite may produce (inlining
	// references can multiply them).
	PreflightMaxNodes = 20000
	// preflightMaxProblems is how many problems a preflight keeps for one
	// turn; the rest are counted.
	preflightMaxProblems = 500
	// preflightMaxNotes is how many notes it keeps; the rest are left
	// out.
	preflightMaxNotes = 200

	// MaxShownName bounds the tool name a finding holds: a longer one
	// is cut, marked with an ellipsis. Every provider's names are far
	// shorter.
	MaxShownName = 128
	// MaxShownPath bounds the path a finding holds, and the paths
	// [Walk] gives: a longer one keeps its start and its end around
	// "…". Each token of a path Walk gives is cut to maxShownToken.
	MaxShownPath = 512
	// maxShownText bounds a finding's problem and its fix.
	maxShownText = 1024
	// maxShownToken bounds each token of a path Walk gives.
	maxShownToken = 64
)

// shownPath cuts path to MaxShownPath bytes, keeping its start and end.
func shownPath(path string) string {
	out, _ := textcut.HeadTail(path, MaxShownPath, MaxShownPath/2-2, MaxShownPath/2-2, func(int, int) string { return textcut.Ellipsis })
	return out
}

// bounded returns x with its strings cut to the bounds a finding keeps,
// so that no name, key or value, however long, makes a long message.
func bounded(x finding) finding {
	x.path = shownPath(x.path)
	x.problem = textcut.Clip(x.problem, maxShownText)
	x.fix = textcut.Clip(x.fix, maxShownText)
	return x
}

// finding is a problem or a note about one schema, before it is tied to a
// tool: path is a JSON Pointer into the parameter schema.
type finding struct {
	path, problem, fix string
	lowered            bool
}

// Findings collects the problems with one parameter schema, and the
// notes on the lossless rewrites an adapter made of it, before they are
// tied to a tool ([Report.Schema]). It keeps at most 500 problems, and
// counts the rest; the zero value is empty and ready to use. A Findings
// that a [SchemaCache] holds is shared: it is written to only while the
// schema is checked.
type Findings struct {
	list     []finding
	omitted  int // problems (not notes) past the bound
	notes    int
	problems int
}

// Problem records a problem at path, a JSON Pointer into the schema
// ([Pointer] makes one), with fix, if not empty, saying how to mend it.
// A path longer than [MaxShownPath] is kept cut, and so are a problem and
// a fix of more than a kilobyte.
func (f *Findings) Problem(path, problem, fix string) { f.add(finding{path, problem, fix, false}) }

// Note records a lossless rewrite at path: what the adapter changed, in
// words.
func (f *Findings) Note(path, what string) { f.add(finding{path: path, problem: what, lowered: true}) }

func (f *Findings) add(x finding) {
	if !keep(x.lowered, &f.notes, &f.problems, &f.omitted) {
		return
	}
	f.list = append(f.list, bounded(x))
}

// keep counts a problem or a note, and reports whether it is within the
// bounds; a problem past them is counted in omitted.
func keep(lowered bool, notes, problems, omitted *int) bool {
	n, max := problems, preflightMaxProblems
	if lowered {
		n, max = notes, preflightMaxNotes
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
	if f.omitted > 0 {
		return true
	}
	for _, x := range f.list {
		if !x.lowered {
			return true
		}
	}
	return false
}

// Report gathers the problems of a turn's tools for one provider.
type Report struct {
	// Provider names the provider the tools are checked for, as the
	// *toolset.PreflightError of Result names it.
	Provider  string
	problems  []toolset.PreflightProblem
	omitted   int
	notes     int
	nproblems int
}

// Tool records a problem or a note about a tool's name or description;
// path is "/name" or "/description". A tool name longer than
// [MaxShownName] is kept cut, as are long paths, problems and fixes
// (see [Findings.Problem]).
func (r *Report) Tool(tool, path, problem, fix string) {
	r.add(toolset.PreflightProblem{Tool: tool, Path: path, Problem: problem, Fix: fix})
}

// Schema records the findings about a tool's parameter schema.
func (r *Report) Schema(tool string, f *Findings) {
	if f == nil {
		return
	}
	for _, x := range f.list {
		r.add(toolset.PreflightProblem{Tool: tool, Path: "/parameters" + x.path, Problem: x.problem, Fix: x.fix, Lowered: x.lowered})
	}
	r.omitted += f.omitted
}

func (r *Report) add(p toolset.PreflightProblem) {
	if keep(p.Lowered, &r.notes, &r.nproblems, &r.omitted) {
		x := bounded(finding{p.Path, p.Problem, p.Fix, p.Lowered})
		p.Tool, p.Path, p.Problem, p.Fix = textcut.Clip(p.Tool, MaxShownName), x.path, x.problem, x.fix
		r.problems = append(r.problems, p)
	}
}

// Result returns every problem and note, and a *toolset.PreflightError
// when there is a problem.
func (r *Report) Result() ([]toolset.PreflightProblem, error) {
	return r.problems, toolset.NewPreflightError(r.Provider, r.problems, r.omitted)
}

var boundedParser = jsontext.Parser{Limits: jsontext.Limits{MaxDepth: PreflightMaxDepth, MaxBytes: preflightMaxBytes}}

// ParseBounded decodes an encoded schema as an ordered value (see
// jsontext), within the preflight bounds. A schema past them gives a
// problem at the root of f and ok false.
func ParseBounded(raw json.RawMessage, f *Findings) (v any, ok bool) {
	if len(raw) > preflightMaxBytes {
		f.Problem("", fmt.Sprintf("the schema is %d bytes, more than the %d a preflight reads", len(raw), preflightMaxBytes), "shorten the schema (fewer properties, shorter descriptions)")
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
func TypeNames(o *Object) (types []string, present, ok bool) {
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

// Shape is the shape of the value of a JSON Schema keyword, as far as
// subschemas go: [Walk] visits the subschemas of every keyword whose
// shape is not [NoSubschema].
type Shape int

// The shapes of keywords' values.
const (
	// NoSubschema is the shape of a keyword that holds no subschema
	// ("type", "enum", "description", ...), and of a key that is no
	// keyword.
	NoSubschema Shape = iota
	// OneSubschema is the shape of a keyword that holds one subschema:
	// "additionalProperties", "items", "not", "if", "then", "else",
	// "contains", "propertyNames", "unevaluatedItems",
	// "unevaluatedProperties", "additionalItems", "contentSchema".
	OneSubschema
	// SubschemaList is the shape of a keyword that holds an array of
	// subschemas: "allOf", "anyOf", "oneOf", "prefixItems".
	SubschemaList
	// SubschemaMap is the shape of a keyword that holds an object whose
	// members are subschemas: "properties", "patternProperties", "$defs",
	// "definitions", "dependentSchemas".
	SubschemaMap
)

// ShapeOf returns the shape of keyword's value.
func ShapeOf(keyword string) Shape {
	switch keyword {
	case "additionalProperties", "items", "not", "if", "then", "else", "contains",
		"propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema":
		return OneSubschema
	case "allOf", "anyOf", "oneOf", "prefixItems":
		return SubschemaList
	case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
		return SubschemaMap
	}
	return NoSubschema
}

// Walk calls visit for every object subschema of the schema v (v
// included), depth first, each with its JSON Pointer, for messages: each
// token cut to 64 bytes and the whole to [MaxShownPath], so that a long
// key costs its descendants nothing. It stops, with a problem in f,
// after [PreflightMaxNodes] subschemas. Values that are not
// schemas where a schema belongs are left to visit's checks of their
// parent.
func Walk(v any, f *Findings, visit func(o *Object, path string)) {
	n := 0
	var walk func(v any, path string) bool
	walk = func(v any, path string) bool {
		o, ok := v.(*Object)
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
			case ShapeOf(m.Key) == OneSubschema:
				if list, isList := m.Value.([]any); isList { // items as a tuple, in older drafts
					for i, e := range list {
						if !walk(e, walkPointer(path, m.Key, fmt.Sprint(i))) {
							return false
						}
					}
				} else if !walk(m.Value, walkPointer(path, m.Key)) {
					return false
				}
			case ShapeOf(m.Key) == SubschemaList:
				list, _ := m.Value.([]any)
				for i, e := range list {
					if !walk(e, walkPointer(path, m.Key, fmt.Sprint(i))) {
						return false
					}
				}
			case ShapeOf(m.Key) == SubschemaMap:
				mo, _ := m.Value.(*Object)
				if mo == nil {
					continue
				}
				for _, e := range mo.Members() {
					if !walk(e.Value, walkPointer(path, m.Key, e.Key)) {
						return false
					}
				}
			}
		}
		return true
	}
	walk(v, "")
}

// walkPointer is [Pointer] for the paths [Walk] gives: each token cut to
// maxShownToken bytes, the whole to [MaxShownPath].
func walkPointer(path string, tokens ...string) string {
	for i, t := range tokens {
		tokens[i] = textcut.Clip(t, maxShownToken)
	}
	return shownPath(Pointer(path, tokens...))
}
