package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/gotoolset/toolset/internal/schema"
	"github.com/invopop/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// NewTool makes a tool from a typed Go function.
//
// The JSON Schema of the arguments is reflected once, here, from In, which
// must be a struct or a pointer to one; fields follow encoding/json's rules
// (names from `json` tags, fields without omitempty are required). Field
// descriptions may be written `jsonschema:"description=City name"` (invopop)
// or `jsonschema:"City name"` (as in the MCP Go SDK and Google's ADK); other
// invopop keywords (enum=, minimum=, ...) work as usual. The result schema is
// reflected from Out unless Out is an interface type.
//
// Each call validates the model's arguments against the schema, decodes them
// into In and calls fn. For a struct of strings, booleans, numbers, and
// pointers, slices and structs of those, called with no policy between
// validation and the handler (see "The call path" in the package
// documentation), validation and decoding are one pass over the
// arguments. A type that cannot be reflected (a recursive type, a
// channel) makes the tool unusable: [Tool.Err], [NewFunction] and
// [BuildTools] report it.
func NewTool[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...ToolOption) Tool {
	params, err := parametersSchema(reflect.TypeFor[In]())
	if err == nil {
		// A JSONSchema method or a tag such as oneof_ref can put any
		// reference in the schema; refuse an outside one now, not at the
		// first call.
		if err = schemaRefs(params); err != nil {
			err = fmt.Errorf("parameter schema: %w", err)
		}
	}
	if err == nil && fn == nil {
		err = errors.New("nil function")
	}
	if params == nil {
		params = emptyObjectSchema()
	}
	core := newCore(name, params, nil)
	core.err = err
	floats := floatWidth(reflect.TypeFor[In](), nil)
	// checked finishes a call whose arguments are valid and decoded.
	checked := func(ctx context.Context, args json.RawMessage, in In) (any, error) {
		if floats > 0 && floatRisk(args, floats) {
			if problems := floatProblems(args, reflect.TypeFor[In](), core.validatorFor(params)); len(problems) > 0 {
				return nil, &ArgumentError{Problems: problems}
			}
		}
		return fn(ctx, in)
	}
	core.handler = func(ctx context.Context, args json.RawMessage) (any, error) {
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, decodeError(err, args, params)
		}
		return checked(ctx, args, in)
	}
	if plan := schema.NewPlan(reflect.TypeFor[In]()); plan != nil && fn != nil {
		core.fused = func(ctx context.Context, args json.RawMessage) (any, error) {
			var in In
			v := core.validatorFor(params)
			if (*schema.Validator)(v).Decode(args, plan, unsafe.Pointer(&in)) {
				return checked(ctx, args, in)
			}
			if err := v.check(args); err != nil {
				return nil, &refusedArgs{err}
			}
			return core.handler(ctx, args)
		}
	}
	t := newTool(core, description, nil)
	t.Returns = resultSchema(reflect.TypeFor[Out]())
	applyOptions(&t, opts)
	return t
}

// decodeError explains arguments that passed the schema but do not fit the
// Go type, such as 1.5 for an int field, a value that overflows it, or a
// date-time that time.Time cannot parse (the validator does not assert
// formats, so such a value is first refused here).
func decodeError(err error, args json.RawMessage, params *jsonschema.Schema) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &ArgumentError{Problems: []ArgumentProblem{{
			Field:   schema.CutText(te.Field, maxField),
			Message: fmt.Sprintf("cannot use %s as %s", schema.CutText(te.Value, 48), goTypeWords(te.Type)),
		}}}
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		if problems := dateTimeProblems(args, params); len(problems) > 0 {
			return &ArgumentError{Problems: schema.CapProblems(problems)}
		}
	}
	return &ArgumentError{Problems: []ArgumentProblem{{Message: schema.CutText(err.Error(), maxMessage)}}}
}

// floatWidth returns the narrowest float width (32 or 64) of the values t
// decodes numbers into, through fields, elements and interfaces (which
// hold float64), or 0 when it has none.
func floatWidth(t reflect.Type, path []reflect.Type) int {
	switch t.Kind() {
	case reflect.Float32:
		return 32
	case reflect.Float64, reflect.Interface:
		return 64
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return floatWidth(t.Elem(), path)
	case reflect.Struct:
	default:
		return 0
	}
	if slices.Contains(path, t) {
		return 0
	}
	path = append(path, t)
	w := 0
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		if fw := floatWidth(f.Type, path); fw > 0 && (w == 0 || fw < w) {
			w = fw
		}
	}
	return w
}

// keptDigits is how many significant decimal digits a float of the given
// width always keeps: a number written with no more is held faithfully
// enough that no bound the schema states in as few digits changes its
// answer.
func keptDigits(width int) int {
	if width == 32 {
		return 6
	}
	return 15
}

// floatRisk reports whether args has a number that a float of the given
// width might not hold faithfully enough to keep the schema's promise:
// one with more significant digits than it keeps, or one so close to zero
// that it may become 0 (1e-400 passes "exclusiveMinimum: 0" and reaches
// the handler as 0). It reads args once; such numbers are rare.
func floatRisk(args []byte, width int) bool {
	keep := keptDigits(width)
	for i := 0; i < len(args); i++ {
		switch c := args[i]; {
		case c == '"':
			i = stringEnd(args, i)
		case c == '-' || ('0' <= c && c <= '9'):
			j, sig, mantissa := i, 0, true
			for ; j < len(args); j++ {
				c := args[j]
				switch {
				case '0' <= c && c <= '9':
					if mantissa && (sig > 0 || c != '0') {
						sig++
					}
				case c == 'e' || c == 'E':
					mantissa = false
				case c == '.' || c == '+' || c == '-':
				default:
					goto end
				}
			}
		end:
			if sig > keep {
				return true
			}
			// Below 1e-30 takes an exponent or thirty zeros.
			if !mantissa || j-i > 31 {
				if e, nz := schema.Magnitude(string(args[i:j])); nz && e <= -30 {
					return true
				}
			}
			i = j - 1
		}
	}
	return false
}

// stringEnd returns the index of the quote that closes the JSON string
// opening at args[i], or len(args).
func stringEnd(args []byte, i int) int {
	for {
		j := bytes.IndexByte(args[i+1:], '"')
		if j < 0 {
			return len(args)
		}
		i += 1 + j
		k := i - 1
		for args[k] == '\\' {
			k--
		}
		if (i-1-k)%2 == 0 { // an even run of backslashes: not escaped
			return i
		}
	}
}

// underflowsTo0 reports whether tok, a nonzero number, becomes zero as a
// float of the given width.
func underflowsTo0(tok string, width int) bool {
	e, nonzero := schema.Magnitude(tok)
	if !nonzero || e > -30 {
		return false
	}
	f, _ := strconv.ParseFloat(tok, width)
	return f == 0
}

// floatProblems checks the numbers of args that decode into the float
// fields of t (or into interfaces, as float64): one that becomes 0 is
// refused; with the others rounded as the fields hold them, the arguments
// must still be valid against the tool's own schema (0.99999999999999999
// becomes 1, which "exclusiveMaximum: 1" forbids).
func floatProblems(args []byte, t reflect.Type, v *validator) []ArgumentProblem {
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return nil
	}
	var out []ArgumentProblem
	rounded := false
	var field schema.FieldPath
	var walk func(v any, t reflect.Type) any
	walk = func(v any, t reflect.Type) any {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil {
			return v
		}
		switch v := v.(type) {
		case json.Number:
			width := 0
			switch t.Kind() {
			case reflect.Float32:
				width = 32
			case reflect.Float64, reflect.Interface:
				width = 64
			}
			if width == 0 {
				return v
			}
			if underflowsTo0(string(v), width) {
				least := map[int]string{32: "1e-45", 64: "5e-324"}[width]
				out = append(out, ArgumentProblem{Field: field.String(), Message: fmt.Sprintf(
					"number %s is too close to zero for this field, which would hold it as 0; send 0 or a number of magnitude at least %s", schema.CutText(string(v), 40), least)})
				return v
			}
			f, err := strconv.ParseFloat(string(v), width)
			if err != nil {
				return v // the decode refused it already
			}
			r := json.Number(strconv.FormatFloat(f, 'g', -1, width))
			if r != v {
				rounded = true
			}
			return r
		case []any:
			var et reflect.Type
			switch t.Kind() {
			case reflect.Slice, reflect.Array:
				et = t.Elem()
			case reflect.Interface:
				et = t
			}
			for i, e := range v {
				field.PushIndex(i)
				v[i] = walk(e, et)
				field.Pop()
			}
		case map[string]any:
			for k, e := range v {
				var et reflect.Type
				switch t.Kind() {
				case reflect.Map:
					et = t.Elem()
				case reflect.Interface:
					et = t
				case reflect.Struct:
					et = jsonFieldType(t, k)
				}
				field.PushKey(k)
				v[k] = walk(e, et)
				field.Pop()
			}
		}
		return v
	}
	doc = walk(doc, t)
	if len(out) > 0 || !rounded {
		slices.SortFunc(out, func(a, b ArgumentProblem) int { return strings.Compare(a.Field, b.Field) })
		return schema.CapProblems(out)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil
	}
	var ae *ArgumentError
	if !errors.As(v.check(b), &ae) {
		return nil
	}
	for _, p := range ae.Problems {
		p.Message = schema.CutText(p.Message+" (after rounding: the field holds the number sent as this; send fewer digits)", maxMessage)
		out = append(out, p)
	}
	return schema.CapProblems(out)
}

// jsonFieldType returns the type of the field of struct t that
// encoding/json decodes the member key into (an exact name first, then
// one equal under case folding, through embedded structs), or nil.
func jsonFieldType(t reflect.Type, key string) reflect.Type {
	var fold reflect.Type
	var visit func(t reflect.Type, depth int) reflect.Type
	visit = func(t reflect.Type, depth int) reflect.Type {
		if depth > 8 {
			return nil
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				if r := visit(ft, depth+1); r != nil {
					return r
				}
				continue
			}
			if name == "" {
				name = f.Name
			}
			if name == key {
				return f.Type
			}
			if fold == nil && strings.EqualFold(name, key) {
				fold = f.Type
			}
		}
		return nil
	}
	if r := visit(t, 0); r != nil {
		return r
	}
	return fold
}

// dateTimeProblems finds the strings of args that the schema says are
// date-times and that are not in RFC 3339 form, naming their fields.
func dateTimeProblems(args json.RawMessage, params *jsonschema.Schema) []ArgumentProblem {
	var doc any
	if json.Unmarshal(args, &doc) != nil {
		return nil
	}
	var out []ArgumentProblem
	var walk func(s *jsonschema.Schema, v any, field string)
	walk = func(s *jsonschema.Schema, v any, field string) {
		if s == nil {
			return
		}
		switch v := v.(type) {
		case string:
			if isDateTime(s) {
				if _, err := time.Parse(time.RFC3339, v); err != nil {
					out = append(out, ArgumentProblem{Field: schema.CutText(field, maxField), Message: fmt.Sprintf(
						"expected a date-time in RFC 3339 format, such as \"2026-01-02T15:04:05Z\"; got %q", schema.CutText(v, maxQuoted))})
				}
			}
		case map[string]any:
			s = schema.Structural(s)
			if s.Properties == nil {
				return
			}
			for p := s.Properties.Oldest(); p != nil; p = p.Next() {
				if pv, ok := v[p.Key]; ok {
					walk(p.Value, pv, schema.JoinField(field, p.Key))
				}
			}
		case []any:
			s = schema.Structural(s)
			for i, e := range v {
				walk(s.Items, e, fmt.Sprintf("%s[%d]", field, i))
			}
		}
	}
	walk(params, doc, "")
	return out
}

// isDateTime reports whether s, or one of its anyOf/oneOf branches (as a
// nullable field has), is a date-time string.
func isDateTime(s *jsonschema.Schema) bool {
	if s.Format == "date-time" {
		return true
	}
	for _, b := range append(slices.Clone(s.AnyOf), s.OneOf...) {
		if b != nil && b.Format == "date-time" {
			return true
		}
	}
	return false
}

// goTypeWords names a Go type in JSON terms for a model.
func goTypeWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer in the range of " + t.String()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer in the range of " + t.String()
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	default:
		return "a value of type " + t.String()
	}
}
