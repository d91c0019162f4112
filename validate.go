package toolset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gotoolset/toolset/internal/argcheck"
	"github.com/invopop/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// validator checks tool-call arguments against a parameter schema.
//
// The JSON Schema validator (santhosh-tekuri/jsonschema) is the authority:
// it decides every argument it sees and words every problem. It needs the
// arguments decoded into Go values first, which costs more than the typed
// decode that follows, so a valid call would pay for decoding twice and for
// the walk. A fast, allocation-free check on the raw bytes comes first: it
// answers only "proven valid" or "not proven", and in the second case the
// full validator runs. The fast check is differentially fuzzed against the
// full one so that "proven valid" never disagrees with it.
type validator struct {
	schema *jsonschema.Schema
	fast   fastChecker // nil when the schema is outside the fast subset

	once sync.Once
	full *sjs.Schema
	err  error // the schema itself is invalid
}

// fastChecker proves raw JSON arguments valid without decoding them.
type fastChecker interface {
	Valid(args []byte) bool
}

// compileFast returns the fast checker of a schema, or nil when the
// schema is outside the subset it can prove.
func compileFast(schemaJSON []byte) fastChecker {
	c, err := argcheck.Compile(schemaJSON)
	if err != nil || !c.Fast() {
		return nil
	}
	return c
}

func newValidator(s *jsonschema.Schema) *validator {
	v := &validator{schema: s}
	if b, err := json.Marshal(s); err == nil {
		v.fast = compileFast(b)
	}
	return v
}

// compile prepares the full validator on first use.
func (v *validator) compile() error {
	v.once.Do(func() {
		b, err := json.Marshal(v.schema)
		if err != nil {
			v.err = fmt.Errorf("encoding the parameter schema: %w", err)
			return
		}
		doc, err := sjs.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			v.err = fmt.Errorf("decoding the parameter schema: %w", err)
			return
		}
		if err := checkValueRefs(doc, nil); err != nil {
			v.err = err
			return
		}
		v.full, v.err = compileDoc(doc)
	})
	return v.err
}

// compileDoc compiles a decoded JSON Schema with a loader that refuses every
// URL: whatever the document refers to, nothing is read.
func compileDoc(doc any) (*sjs.Schema, error) {
	c := sjs.NewCompiler()
	c.DefaultDraft(sjs.Draft2020)
	c.UseLoader(refusingLoader{})
	const url = "mem:///parameters.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("invalid parameter schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("invalid parameter schema: %w", err)
	}
	return s, nil
}

// check validates args. It returns nil when they are valid, the problems
// as an *ArgumentError (without the tool name) when they are not, and any
// other error when the schema itself cannot be compiled.
func (v *validator) check(args []byte) error {
	if v.fast != nil && v.fast.Valid(args) {
		return nil
	}
	if err := v.compile(); err != nil {
		return err
	}
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &ArgumentError{Problems: []ArgumentProblem{{Message: jsonSyntaxMessage(args)}}}
	}
	err = v.full.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *sjs.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	return &ArgumentError{Problems: problemsOf(ve, doc, v.schema)}
}

// jsonSyntaxMessage explains why args is not one JSON value.
func jsonSyntaxMessage(args []byte) string {
	var x any
	err := json.Unmarshal(args, &x)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("the arguments are not valid JSON (%v at byte %d); send a JSON object", se, se.Offset)
	case err != nil:
		return fmt.Sprintf("the arguments are not valid JSON (%v); send a JSON object", err)
	default:
		return "the arguments are not a single JSON value; send one JSON object"
	}
}

var printer = message.NewPrinter(language.English)

// problemsOf turns the validator's error tree into problems a model can act
// on, one per failing value, sorted by field.
func problemsOf(ve *sjs.ValidationError, doc any, root *jsonschema.Schema) []ArgumentProblem {
	var out []ArgumentProblem
	var walk func(e *sjs.ValidationError)
	walk = func(e *sjs.ValidationError) {
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			if p, ok := alternativesProblem(e, doc, root); ok {
				out = append(out, p)
				return
			}
		}
		if len(e.Causes) == 0 {
			out = append(out, leafProblems(e, doc, root)...)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortStableFunc(out, func(a, b ArgumentProblem) int {
		if c := strings.Compare(a.Field, b.Field); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out)
}

// alternativesProblem words a failed anyOf or oneOf as one problem: "expected
// integer or null, got string" rather than one line per branch.
func alternativesProblem(e *sjs.ValidationError, doc any, root *jsonschema.Schema) (ArgumentProblem, bool) {
	field := fieldPath(e.InstanceLocation, doc)
	if k, ok := e.ErrorKind.(*kind.OneOf); ok && len(k.Subschemas) > 1 {
		return ArgumentProblem{Field: field, Message: "matches more than one of the allowed forms; make it match exactly one"}, true
	}
	s := schemaAt(root, e.InstanceLocation, doc)
	if s == nil {
		return ArgumentProblem{}, false
	}
	got := jsonTypeOf(valueAt(doc, e.InstanceLocation))
	return ArgumentProblem{Field: field, Message: fmt.Sprintf("expected %s, got %s", describeSchema(s), got)}, true
}

// leafProblems words one validator error.
func leafProblems(e *sjs.ValidationError, doc any, root *jsonschema.Schema) []ArgumentProblem {
	field := fieldPath(e.InstanceLocation, doc)
	one := func(msg string) []ArgumentProblem { return []ArgumentProblem{{Field: field, Message: msg}} }
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		obj := schemaAt(root, e.InstanceLocation, doc)
		var out []ArgumentProblem
		for _, name := range k.Missing {
			msg := "required field is missing"
			if obj != nil && obj.Properties != nil {
				if p, ok := obj.Properties.Get(name); ok {
					msg += "; expected " + describeSchema(p)
					if p.Description != "" {
						msg += " (" + p.Description + ")"
					}
				}
			}
			out = append(out, ArgumentProblem{Field: joinField(field, name), Message: msg})
		}
		return out
	case *kind.AdditionalProperties:
		obj := schemaAt(root, e.InstanceLocation, doc)
		allowed := "none"
		if obj != nil && obj.Properties != nil && obj.Properties.Len() > 0 {
			var names []string
			for p := obj.Properties.Oldest(); p != nil; p = p.Next() {
				names = append(names, strconv.Quote(p.Key))
			}
			allowed = strings.Join(names, ", ")
		}
		var out []ArgumentProblem
		for _, name := range k.Properties {
			out = append(out, ArgumentProblem{Field: joinField(field, name), Message: "unknown field; allowed fields: " + allowed})
		}
		return out
	case *kind.Type:
		return one(fmt.Sprintf("expected %s, got %s", strings.Join(k.Want, " or "), k.Got))
	case *kind.Enum:
		return one(fmt.Sprintf("must be one of %s; got %s", quoteValues(k.Want), quoteValue(k.Got)))
	case *kind.Const:
		return one(fmt.Sprintf("must be %s; got %s", quoteValue(k.Want), quoteValue(k.Got)))
	case *kind.Minimum:
		return one(fmt.Sprintf("must be at least %s; got %s", ratString(k.Want), ratString(k.Got)))
	case *kind.Maximum:
		return one(fmt.Sprintf("must be at most %s; got %s", ratString(k.Want), ratString(k.Got)))
	case *kind.ExclusiveMinimum:
		return one(fmt.Sprintf("must be greater than %s; got %s", ratString(k.Want), ratString(k.Got)))
	case *kind.ExclusiveMaximum:
		return one(fmt.Sprintf("must be less than %s; got %s", ratString(k.Want), ratString(k.Got)))
	case *kind.MultipleOf:
		return one(fmt.Sprintf("must be a multiple of %s; got %s", ratString(k.Want), ratString(k.Got)))
	case *kind.MinLength:
		return one(fmt.Sprintf("must be at least %d characters long; got %d", k.Want, k.Got))
	case *kind.MaxLength:
		return one(fmt.Sprintf("must be at most %d characters long; got %d", k.Want, k.Got))
	case *kind.Pattern:
		return one(fmt.Sprintf("must match the pattern %s; got %q", k.Want, k.Got))
	case *kind.MinItems:
		return one(fmt.Sprintf("must have at least %d items; got %d", k.Want, k.Got))
	case *kind.MaxItems:
		return one(fmt.Sprintf("must have at most %d items; got %d", k.Want, k.Got))
	case *kind.UniqueItems:
		return one(fmt.Sprintf("items must be unique; items %d and %d are equal", k.Duplicates[0], k.Duplicates[1]))
	case *kind.MinProperties:
		return one(fmt.Sprintf("must have at least %d fields; got %d", k.Want, k.Got))
	case *kind.MaxProperties:
		return one(fmt.Sprintf("must have at most %d fields; got %d", k.Want, k.Got))
	case *kind.FalseSchema:
		return one("no value is allowed here; remove it")
	default:
		return one(e.ErrorKind.LocalizedString(printer))
	}
}

// fieldPath renders an instance location as "stops[2].name", using the
// decoded document to tell array indexes from property names.
func fieldPath(loc []string, doc any) string {
	var b strings.Builder
	cur := doc
	for _, seg := range loc {
		switch c := cur.(type) {
		case []any:
			b.WriteString("[" + seg + "]")
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(c) {
				cur = c[i]
			} else {
				cur = nil
			}
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(seg)
			if m, ok := cur.(map[string]any); ok {
				cur = m[seg]
			} else {
				cur = nil
			}
		}
	}
	return b.String()
}

func joinField(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// valueAt returns the value at loc in doc, or nil.
func valueAt(doc any, loc []string) any {
	cur := doc
	for _, seg := range loc {
		switch c := cur.(type) {
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		case map[string]any:
			cur = c[seg]
		default:
			return nil
		}
	}
	return cur
}

// schemaAt follows loc through properties and items of root, looking
// through the branches of anyOf and oneOf (as nullable fields use them). It
// returns nil when the path leaves what it can follow.
func schemaAt(root *jsonschema.Schema, loc []string, doc any) *jsonschema.Schema {
	s := root
	cur := doc
	for _, seg := range loc {
		s = structural(s)
		if s == nil {
			return nil
		}
		switch c := cur.(type) {
		case []any:
			i, _ := strconv.Atoi(seg)
			if i >= 0 && i < len(c) {
				cur = c[i]
			} else {
				cur = nil
			}
			s = s.Items
		default:
			if m, ok := cur.(map[string]any); ok {
				cur = m[seg]
			} else {
				cur = nil
			}
			if s.Properties == nil {
				return nil
			}
			p, ok := s.Properties.Get(seg)
			if !ok {
				return nil
			}
			s = p
		}
	}
	return s
}

// structural returns s, or the first branch of its anyOf/oneOf that has
// properties or items.
func structural(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil || s.Properties != nil || s.Items != nil {
		return s
	}
	for _, b := range append(slices.Clone(s.AnyOf), s.OneOf...) {
		if b != nil && (b.Properties != nil || b.Items != nil) {
			return b
		}
	}
	return s
}

// describeSchema words what a schema expects, for a model: "integer between
// 1 and 14", "one of "metric", "imperial"", "array of string".
func describeSchema(s *jsonschema.Schema) string {
	if s == nil {
		return "any value"
	}
	if len(s.Enum) > 0 {
		return "one of " + quoteValues(s.Enum)
	}
	if s.Const != nil {
		return quoteValue(s.Const)
	}
	if alts := append(slices.Clone(s.AnyOf), s.OneOf...); len(alts) > 0 && s.Type == "" {
		parts := make([]string, 0, len(alts))
		for _, a := range alts {
			parts = append(parts, describeSchema(a))
		}
		return strings.Join(parts, " or ")
	}
	var d string
	switch s.Type {
	case "":
		return "any value"
	case "integer", "number":
		d = s.Type
		lo, hi := string(s.Minimum), string(s.Maximum)
		switch {
		case lo != "" && hi != "":
			d += " between " + lo + " and " + hi
		case lo != "":
			d += " >= " + lo
		case hi != "":
			d += " <= " + hi
		}
		if s.ExclusiveMinimum != "" {
			d += " > " + string(s.ExclusiveMinimum)
		}
		if s.ExclusiveMaximum != "" {
			d += " < " + string(s.ExclusiveMaximum)
		}
	case "string":
		d = "string"
		if s.Format != "" {
			d += " in " + s.Format + " format"
		}
		if s.Pattern != "" {
			d += " matching " + s.Pattern
		}
	case "array":
		d = "array"
		if s.Items != nil {
			d += " of " + describeSchema(s.Items)
		}
	default:
		d = s.Type
	}
	return d
}

func quoteValues(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = quoteValue(v)
	}
	return strings.Join(parts, ", ")
}

func quoteValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// jsonTypeOf names the JSON type of a decoded value.
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
