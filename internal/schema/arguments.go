package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gotoolset/toolset/internal/jsontext"
	"github.com/invopop/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Validator checks tool-call arguments against a parameter schema. A
// Validator is safe for concurrent use; the full validator is compiled on
// first use.
//
// The JSON Schema validator (santhosh-tekuri/jsonschema) is the authority:
// it decides every argument it sees and words every problem. It needs the
// arguments decoded into Go values first, which costs more than the typed
// decode that follows, so a valid call would pay for decoding twice and for
// the walk. A fast, allocation-free check on the raw bytes comes first: it
// answers only "proven valid" or "not proven", and in the second case the
// full validator runs. The fast check is differentially fuzzed against the
// full one so that "proven valid" never disagrees with it.
type Validator struct {
	schema *jsonschema.Schema
	fast   *fastChecker // nil when the schema is outside the fast subset

	once sync.Once
	full *sjs.Schema
	cost *costGraph
	err  error // the schema itself is invalid
}

// Problem is one problem with a tool call's arguments, worded for a model.
type Problem struct {
	// Field is the path of the offending value, such as "stops[2].name";
	// it is empty when the problem concerns the arguments as a whole.
	Field string
	// Message says what was expected and what was found.
	Message string
}

// NewValidator returns the validator of the parameter schema s. It does
// not compile the full validator: see [Validator.Compile].
func NewValidator(s *jsonschema.Schema) *Validator {
	v := &Validator{schema: s}
	if b, err := json.Marshal(s); err == nil {
		if c, err := compileFast(b); err == nil && c.Fast() {
			v.fast = c
		}
	}
	return v
}

// Compile compiles the full validator, once, within the bounds a schema
// must keep (nesting, number sizes, cost, references). It returns a
// *[RefError] for a reference out of the schema and another error for any
// other reason the schema cannot be used.
func (v *Validator) Compile() error {
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
		if err := checkValueRefs(doc); err != nil {
			v.err = err
			return
		}
		if problems := hugeNumbers(doc); len(problems) > 0 {
			v.err = fmt.Errorf("invalid parameter schema: at %q: %s", CutText(problems[0].Field, MaxQuoted), problems[0].Message)
			return
		}
		if d := nesting(doc); d > maxSchemaNesting {
			v.err = fmt.Errorf("invalid parameter schema: nested %d levels deep, more than the %d allowed", d, maxSchemaNesting)
			return
		}
		if v.full, v.err = compileDoc(doc); v.err != nil {
			return
		}
		if v.cost, v.err = newCostGraph(v.full); v.err != nil {
			v.full, v.err = nil, fmt.Errorf("invalid parameter schema: %w", v.err)
		}
	})
	return v.err
}

// maxSchemaNesting bounds the nesting of a parameter schema's JSON
// document. Compiling a schema costs time cubic in its depth (600 levels of
// "not" took 8 seconds); real schemas nest a few levels.
const maxSchemaNesting = 128

// nesting returns the depth of arrays and objects of doc, a decoded JSON
// document, counting only up to maxSchemaNesting+1.
func nesting(doc any) int {
	var depth func(v any, d int) int
	depth = func(v any, d int) int {
		if d > maxSchemaNesting {
			return d
		}
		deepest := d
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				deepest = max(deepest, depth(e, d+1))
			}
		case []any:
			for _, e := range v {
				deepest = max(deepest, depth(e, d+1))
			}
		default:
			return d - 1
		}
		return deepest
	}
	return depth(doc, 1)
}

// compileDoc compiles a decoded JSON Schema with a loader that refuses every
// URL: whatever the document refers to, nothing is read. Regular
// expressions go through [CompilePattern], which refuses those
// costly to compile.
func compileDoc(doc any) (*sjs.Schema, error) {
	if n := countObjects(doc, MaxSchemaObjects); n > MaxSchemaObjects {
		return nil, &schemaCompileError{fmt.Errorf("the schema holds more than %d objects, the most the validator compiles (its cost grows with the square of their number)", MaxSchemaObjects)}
	}
	if err := checkDocSizes(doc); err != nil {
		return nil, &schemaCompileError{err}
	}
	c := sjs.NewCompiler()
	c.DefaultDraft(sjs.Draft2020)
	c.UseLoader(refusingLoader{})
	c.UseRegexpEngine(boundedRegexp)
	const url = "mem:///parameters.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, &schemaCompileError{err}
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, &schemaCompileError{err}
	}
	return s, nil
}

// MaxSchemaObjects bounds the JSON objects of a schema the validator
// compiles. The compiler's work grows with the square of a schema's
// subschemas: 2,500 properties take 0.3 s and 10,000 take 1.7 s, so a
// server's tool list of such schemas would cost minutes of CPU. 4,096 is
// far above what a tool's parameters need.
const MaxSchemaObjects = 4096

// countObjects counts the JSON objects of a decoded document, stopping
// once past limit.
func countObjects(doc any, limit int) int {
	n := 0
	stack := []any{doc}
	for len(stack) > 0 && n <= limit {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch v := v.(type) {
		case map[string]any:
			n++
			for _, e := range v {
				switch e.(type) {
				case map[string]any, []any:
					stack = append(stack, e)
				}
			}
		case []any:
			for _, e := range v {
				switch e.(type) {
				case map[string]any, []any:
					stack = append(stack, e)
				}
			}
		}
	}
	return n
}

// schemaCompileError is the validator's reason for refusing a schema, its
// message cut short: it may quote any part of the schema.
type schemaCompileError struct{ err error }

func (e *schemaCompileError) Error() string {
	return "invalid parameter schema: " + CutText(e.err.Error(), MaxMessage)
}

func (e *schemaCompileError) Unwrap() error { return e.err }

// boundedRegexp is the validator's regular expression engine. It parses an
// expression (for "pattern", "patternProperties" and "format": "regex",
// which older drafts assert on the arguments) and refuses one whose
// program would be large: compiling 1 KB of "x{1000}" takes half a
// second. It compiles an expression only when it is first matched, so
// checking that a string argument is a regular expression costs a parse.
//
// Matching costs up to the program's size per byte of the string; a string
// too long for the pattern (see [maxMatchCost]) is taken as not
// matching, so it is refused.
func boundedRegexp(expr string) (sjs.Regexp, error) {
	size, err := patternSize(expr)
	if err != nil {
		return nil, err
	}
	return &lazyRegexp{expr: expr, size: size}, nil
}

type lazyRegexp struct {
	expr string
	size int
	once sync.Once
	re   *regexp.Regexp
}

func (l *lazyRegexp) MatchString(s string) bool {
	if !matchAffordable(l.size, len(s)) {
		return false
	}
	l.once.Do(func() { l.re, _ = regexp.Compile(l.expr) })
	return l.re != nil && l.re.MatchString(s) // patternSize parsed it: it compiles
}

func (l *lazyRegexp) String() string { return l.expr }

// Check validates args. It returns no problems and no error when they are
// valid, the problems, in a deterministic order, when they are not, and an
// error (as [Validator.Compile] does) when the schema itself cannot be
// used.
func (v *Validator) Check(args []byte) ([]Problem, error) {
	if v.fast != nil && v.fast.Valid(args) {
		return nil, nil
	}
	if err := v.Compile(); err != nil {
		return nil, err
	}
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return []Problem{{Message: jsonSyntaxMessage(args)}}, nil
	}
	if problems := repeatedKeys(args); len(problems) > 0 {
		return CapProblems(problems), nil
	}
	if problems := hugeNumbers(doc); len(problems) > 0 {
		return CapProblems(problems), nil
	}
	if problems := v.cost.longStrings(doc); len(problems) > 0 {
		return CapProblems(problems), nil
	}
	if !v.cost.withinBudget(doc) {
		_, values := instanceTree(doc)
		return []Problem{tooCostlyProblem(values)}, nil
	}
	err = v.full.Validate(doc)
	if err == nil {
		return nil, nil
	}
	var ve *sjs.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	if ps := problemsOf(ve, doc, v.schema); len(ps) > 0 {
		return ps, nil
	}
	return []Problem{{Message: "the arguments do not match the tool's schema"}}, nil
}

// repeatedKeys reports each object member of args, which is one JSON
// value, whose key an earlier member of the same object has. JSON leaves
// the meaning of a repeated key open: the validator, like encoding/json,
// reads the last value, while a reader of the raw arguments (a raw tool,
// a package, a server in another language) may act on the first, one that
// nobody validated or approved. So a repeated key is refused, never passed
// on.
func repeatedKeys(args []byte) []Problem {
	l := jsontext.NewLexer(args, jsontext.Limits{})
	var field FieldPath
	var out []Problem
	var walk func(t jsontext.Token) error
	walk = func(t jsontext.Token) error {
		switch t.Kind {
		case jsontext.ArrayStart:
			for i := 0; ; i++ {
				t, err := l.Next()
				if err != nil || t.Kind == jsontext.ArrayEnd {
					return err
				}
				field.PushIndex(i)
				err = walk(t)
				field.Pop()
				if err != nil {
					return err
				}
			}
		case jsontext.ObjectStart:
			var keys objectKeys
			for {
				t, err := l.Next()
				if err != nil || t.Kind == jsontext.ObjectEnd {
					return err
				}
				key := jsontext.Unquote(args[t.Start+1:t.End-1], t.Flags)
				field.PushKey(key)
				if !keys.add(key) && len(out) <= maxProblems {
					out = append(out, Problem{Field: field.String(), Message: repeatedKeyMessage})
				}
				if t, err = l.Next(); err == nil {
					err = walk(t)
				}
				field.Pop()
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	t, err := l.Next()
	if err == nil {
		err = walk(t)
	}
	if err != nil {
		return []Problem{{Message: fmt.Sprintf("the arguments cannot be read (%v); send a JSON object", err)}}
	}
	return out
}

// repeatedKeyMessage is the problem of a key given twice in one object.
const repeatedKeyMessage = "is given more than once; the keys of an object must be unique, send each field once"

// objectKeys is the set of the keys of one object read so far: a few in
// an array, compared in turn, more in a map, so that an object of many
// keys costs linear time and one of a few allocates no map.
type objectKeys struct {
	few  [8]string
	n    int
	many map[string]struct{}
}

// add adds key, and reports whether it is new.
func (k *objectKeys) add(key string) bool {
	if k.many == nil {
		for _, old := range k.few[:k.n] {
			if old == key {
				return false
			}
		}
		if k.n < len(k.few) {
			k.few[k.n] = key
			k.n++
			return true
		}
		k.many = make(map[string]struct{}, 2*len(k.few))
		for _, old := range k.few {
			k.many[old] = struct{}{}
		}
	}
	if _, dup := k.many[key]; dup {
		return false
	}
	k.many[key] = struct{}{}
	return true
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
func problemsOf(ve *sjs.ValidationError, doc any, root *jsonschema.Schema) []Problem {
	var out []Problem
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
	for i := range out {
		out[i].Field = CutText(out[i].Field, MaxField)
		out[i].Message = CutText(out[i].Message, MaxMessage)
	}
	slices.SortStableFunc(out, func(a, b Problem) int {
		if c := strings.Compare(a.Field, b.Field); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return CapProblems(slices.Compact(out))
}

// Bounds on what an argument error says, whatever the arguments: the
// bytes of a field path and of a message, and the number of problems.
const (
	MaxField    = 200
	MaxMessage  = 500
	maxProblems = 20
	maxListed   = 20 // values or names listed in one message
)

// CapProblems keeps the first maxProblems problems and counts the rest. It
// takes any type of problem shaped like [Problem], so that the root's
// public problems are cut as the engine's are.
func CapProblems[P ~struct {
	Field   string
	Message string
}](ps []P) []P {
	if len(ps) <= maxProblems {
		return ps
	}
	more := len(ps) - maxProblems
	ps = append(ps[:maxProblems:maxProblems], P{Message: fmt.Sprintf("and %d more problems; fix the ones above first", more)})
	return ps
}

// maxMagnitude bounds the numbers the full validator weighs: a nonzero
// number must lie between 1e-400 and 1e400 in magnitude. Any number a Go
// type can hold is well inside; beyond, the validator's exact arithmetic
// would cost time exponential in the length of the exponent (1e999999 is
// a million-digit integer).
const maxMagnitude = 400

// Magnitude returns the decimal exponent E of a JSON number token, as in
// |x| = 0.d… × 10^E with a nonzero first digit d, and whether x is
// nonzero. Exponents too long to matter saturate. It reads tok once.
func Magnitude(tok string) (e int, nonzero bool) {
	i := 0
	if i < len(tok) && tok[i] == '-' {
		i++
	}
	intDigits, pos, first := 0, 0, -1
	point := false
	for ; i < len(tok); i++ {
		c := tok[i]
		if c == '.' {
			point = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		if !point {
			intDigits++
		}
		if c != '0' && first < 0 {
			first = pos
		}
		pos++
	}
	if first < 0 {
		return 0, false
	}
	exp := 0
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		neg := false
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			neg = tok[i] == '-'
			i++
		}
		for ; i < len(tok); i++ {
			if exp < 1<<30 {
				exp = exp*10 + int(tok[i]-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	return intDigits - first + exp, true
}

// hugeNumbers returns a problem for each number of doc (decoded with
// json.Number) beyond maxMagnitude.
func hugeNumbers(doc any) []Problem {
	var out []Problem
	walkDoc(doc, func(field *FieldPath, v any) {
		n, ok := v.(json.Number)
		if !ok {
			return
		}
		if e, nz := Magnitude(string(n)); nz && (e > maxMagnitude || e < -maxMagnitude) {
			out = append(out, Problem{Field: field.String(), Message: fmt.Sprintf(
				"number %s is out of range; send 0 or a number of magnitude between 1e-%d and 1e%d", CutText(string(n), 40), maxMagnitude, maxMagnitude)})
		}
	}, nil)
	slices.SortFunc(out, func(a, b Problem) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// alternativesProblem words a failed anyOf or oneOf as one problem: "expected
// integer or null, got string" rather than one line per branch.
func alternativesProblem(e *sjs.ValidationError, doc any, root *jsonschema.Schema) (Problem, bool) {
	field := fieldPath(e.InstanceLocation, doc)
	if k, ok := e.ErrorKind.(*kind.OneOf); ok && len(k.Subschemas) > 1 {
		return Problem{Field: field, Message: "matches more than one of the allowed forms; make it match exactly one"}, true
	}
	s := schemaAt(root, e.InstanceLocation, doc)
	if s == nil {
		return Problem{}, false
	}
	got := jsonTypeOf(valueAt(doc, e.InstanceLocation))
	return Problem{Field: field, Message: fmt.Sprintf("expected %s, got %s", describeSchema(s), got)}, true
}

// leafProblems words one validator error.
func leafProblems(e *sjs.ValidationError, doc any, root *jsonschema.Schema) []Problem {
	field := fieldPath(e.InstanceLocation, doc)
	one := func(msg string) []Problem { return []Problem{{Field: field, Message: msg}} }
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		obj := schemaAt(root, e.InstanceLocation, doc)
		var out []Problem
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
			out = append(out, Problem{Field: JoinField(field, name), Message: msg})
		}
		return out
	case *kind.AdditionalProperties:
		obj := schemaAt(root, e.InstanceLocation, doc)
		allowed := "none"
		if obj != nil && obj.Properties != nil && obj.Properties.Len() > 0 {
			var names []string
			for p := obj.Properties.Oldest(); p != nil; p = p.Next() {
				if len(names) == maxListed {
					names = append(names, fmt.Sprintf("and %d more", obj.Properties.Len()-maxListed))
					break
				}
				names = append(names, strconv.Quote(CutText(p.Key, MaxQuoted)))
			}
			allowed = strings.Join(names, ", ")
		}
		var out []Problem
		for _, name := range k.Properties {
			out = append(out, Problem{Field: JoinField(field, name), Message: "unknown field; allowed fields: " + allowed})
		}
		return out
	case *kind.Type:
		return one(fmt.Sprintf("expected %s, got %s", strings.Join(k.Want, " or "), k.Got))
	case *kind.Enum:
		return one(fmt.Sprintf("must be one of %s; got %s", quoteValues(k.Want), quoteValue(k.Got)))
	case *kind.Const:
		return one(fmt.Sprintf("must be %s; got %s", quoteValue(k.Want), quoteValue(k.Got)))
	case *kind.Minimum:
		return one(fmt.Sprintf("must be at least %s; got %s", ratString(k.Want), gotNumber(e, doc, k.Got)))
	case *kind.Maximum:
		return one(fmt.Sprintf("must be at most %s; got %s", ratString(k.Want), gotNumber(e, doc, k.Got)))
	case *kind.ExclusiveMinimum:
		return one(fmt.Sprintf("must be greater than %s; got %s", ratString(k.Want), gotNumber(e, doc, k.Got)))
	case *kind.ExclusiveMaximum:
		return one(fmt.Sprintf("must be less than %s; got %s", ratString(k.Want), gotNumber(e, doc, k.Got)))
	case *kind.MultipleOf:
		return one(fmt.Sprintf("must be a multiple of %s; got %s", ratString(k.Want), gotNumber(e, doc, k.Got)))
	case *kind.MinLength:
		return one(fmt.Sprintf("must be at least %d characters long; got %d", k.Want, k.Got))
	case *kind.MaxLength:
		return one(fmt.Sprintf("must be at most %d characters long; got %d", k.Want, k.Got))
	case *kind.Pattern:
		return one(fmt.Sprintf("must match the pattern %s; got %q", CutText(k.Want, MaxQuoted), CutText(k.Got, MaxQuoted)))
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
		return one(CutText(e.ErrorKind.LocalizedString(printer), MaxMessage))
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

// walkDoc calls value for every value of doc (decoded JSON: maps, slices
// and scalars) and key, when not nil, for every member name, each with
// the field path that leads to it.
func walkDoc(doc any, value func(*FieldPath, any), key func(*FieldPath, string)) {
	var field FieldPath
	var walk func(v any)
	walk = func(v any) {
		value(&field, v)
		switch v := v.(type) {
		case []any:
			for i, e := range v {
				field.PushIndex(i)
				walk(e)
				field.Pop()
			}
		case map[string]any:
			for k, e := range v {
				field.PushKey(k)
				if key != nil {
					key(&field, k)
				}
				walk(e)
				field.Pop()
			}
		}
	}
	walk(doc)
}

// FieldPath is the field path of a value during a walk of the
// arguments, rendered only when a problem names it: building the path of
// every value costs time quadratic in the nesting.
type FieldPath struct {
	segs []string
	size int // bytes of the rendered path
}

// PushKey enters the member k of an object.
func (f *FieldPath) PushKey(k string) {
	if len(f.segs) > 0 {
		k = "." + k
	}
	f.segs = append(f.segs, k)
	f.size += len(k)
}

// PushIndex enters the element i of an array.
func (f *FieldPath) PushIndex(i int) {
	seg := "[" + strconv.Itoa(i) + "]"
	f.segs = append(f.segs, seg)
	f.size += len(seg)
}

// Pop leaves the innermost member or element.
func (f *FieldPath) Pop() {
	f.size -= len(f.segs[len(f.segs)-1])
	f.segs = f.segs[:len(f.segs)-1]
}

// String renders the path as fieldPath does, cut as CutText(path,
// MaxField) would, in time bounded by MaxField.
func (f *FieldPath) String() string {
	if f.size <= MaxField {
		return strings.Join(f.segs, "")
	}
	var b strings.Builder
	for _, seg := range f.segs {
		b.WriteString(seg)
		if b.Len() > MaxField {
			break
		}
	}
	s := b.String()
	cut := MaxField
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(f.size) + " bytes)"
}

// JoinField returns the path of the member name of the object at parent.
func JoinField(parent, name string) string {
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
		s = Structural(s)
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

// Structural returns s, or the first branch of its anyOf/oneOf that has
// properties or items.
func Structural(s *jsonschema.Schema) *jsonschema.Schema {
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

// quoteValues quotes the first maxListed values of vs.
func quoteValues(vs []any) string {
	parts := make([]string, 0, min(len(vs), maxListed+1))
	for i, v := range vs {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(vs)-maxListed))
			break
		}
		parts = append(parts, quoteValue(v))
	}
	return strings.Join(parts, ", ")
}

// quoteValue renders v as JSON, cut to MaxQuoted bytes.
func quoteValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return CutText(fmt.Sprint(v), MaxQuoted)
	}
	return CutText(string(b), MaxQuoted)
}

// gotNumber renders the number a problem is about as the arguments wrote
// it, cut short, or r when it cannot find it.
func gotNumber(e *sjs.ValidationError, doc any, r *big.Rat) string {
	if n, ok := valueAt(doc, e.InstanceLocation).(json.Number); ok {
		return CutText(string(n), 40)
	}
	return ratString(r)
}

// ratString renders r briefly: exactly when it is a small integer, else
// to 17 significant digits.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() && r.Num().BitLen() <= 64 {
		return r.Num().String()
	}
	return new(big.Float).SetPrec(64).SetRat(r).Text('g', 17)
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
