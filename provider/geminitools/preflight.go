package geminitools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
)

// provider names Gemini in a *toolset.PreflightError.
const providerName = "Gemini"

const nameRule = "a letter or '_' first, then letters, digits, '_', '.', ':' or '-', at most 128 characters"

// WithPreflight has [Tools] run [Check] first and fail with its
// *toolset.PreflightError, listing every problem of every tool, rather
// than send a tool Gemini would refuse or misread; the tools it passes are
// sent with their schemas lowered as Check describes.
func WithPreflight() Option { return provider.WithPreflight() }

// Check applies Gemini's rules for function declarations to the turn's
// tools and reports every tool Gemini would refuse or misread, all at
// once, with the rewrites [WithPreflight] makes noted. The schema is sent
// as parametersJsonSchema, whose documented subset is: $id, $defs, $ref,
// $anchor, type, format, title, description, enum (of strings and
// numbers), items, prefixItems, minItems, maxItems, minimum, maximum,
// anyOf, oneOf (read as anyOf), properties, additionalProperties,
// required; a $ref may have no siblings other than $-keywords, and a
// recursive reference is unrolled to a limited depth, so it may only be
// used within properties that are not required.
//
// Lossless rewrites, made by [Tools] with [WithPreflight] and reported as
// notes ([toolset.PreflightProblem.Lowered]):
//
//   - every non-recursive "$ref" is replaced by the schema it names (its
//     siblings merged in when they set keywords the target leaves
//     unset), and "$defs" and "definitions" are dropped once nothing
//     refers to them;
//   - "$schema" and "$comment" are dropped;
//   - "type": ["string", "null"] (any list of types) becomes an anyOf of
//     one branch per type, each keeping the keywords that apply to it;
//   - "const" of a string or a number becomes a one-value "enum", "const":
//     null becomes "type": "null";
//   - an allOf whose branches set different keywords is merged into one
//     schema (properties and required lists are joined);
//   - a format Gemini does not know is dropped (the library does not
//     check formats either: in draft 2020-12 they are annotations).
//
// Problems: a name that breaks Gemini's rule (a letter or '_' first, then
// letters, digits, '_', '.', ':' or '-', at most 128 characters); a
// parameter schema that is not an object schema; a "$ref" with siblings
// that cannot be merged; a recursive reference on a path of required
// properties; an enum or const of booleans, objects or arrays; a oneOf
// whose branches are not provably exclusive (Gemini would accept a value
// that matches two); an allOf that cannot be merged; keywords outside the
// subset that change what is valid (not, if/then/else, patternProperties,
// dependentSchemas, unevaluatedProperties, ...), which the model would
// never see.
//
// It returns every problem and note, and a *toolset.PreflightError
// listing the problems when there is one. A schema is walked within
// bounds (see the package doc, "Preflight"); one past them is a problem.
func Check(tools *toolset.ToolList) ([]toolset.PreflightProblem, error) {
	r := &provider.Report{Provider: providerName}
	for t := range tools.All() {
		provider.CheckName(r, t.Name, maxNameLen, nameByte, nameStart, nameRule)
		l, err := lowered.Of(t)
		if err != nil {
			r.Tool(t.Name, "/parameters", err.Error(), "give the tool a valid parameter schema")
			continue
		}
		r.Schema(t.Name, l.findings)
	}
	return r.Result()
}

func nameByte(c byte) bool  { return provider.Word(c) || c == '.' || c == ':' }
func nameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// lowering is a parameter schema rewritten for Gemini, with what the
// rewrite found.
type lowering struct {
	schema   json.RawMessage // nil when the schema has problems
	findings *provider.Findings
}

// lowered remembers the lowering of each parameter schema, so that a turn
// over unchanged tools rewrites no schema again.
var lowered = provider.NewSchemaCache(func(raw json.RawMessage) (*lowering, error) {
	s, f := lower(raw)
	return &lowering{schema: s, findings: f}, nil
})

// lower rewrites the parameter schema raw for Gemini, see [Check].
func lower(raw json.RawMessage) (json.RawMessage, *provider.Findings) {
	f := &provider.Findings{}
	v, ok := provider.ParseBounded(raw, f)
	if !ok {
		return nil, f
	}
	root, isObject := v.(*provider.Object)
	if !isObject {
		if v == true {
			root = &provider.Object{}
		} else {
			f.Problem("", fmt.Sprintf("the parameter schema is %s, not an object schema", provider.Encode(v)), `make the parameters a JSON object schema with "type": "object"`)
			return nil, f
		}
	}
	switch types, present, _ := provider.TypeNames(root); {
	case !present:
		// Arguments are always an object; saying so changes nothing.
		f.Note("", `the parameter schema has no "type"; it is sent with "type": "object"`)
	case len(types) != 1 || types[0] != "object":
		f.Problem("/type", fmt.Sprintf(`the parameter schema must have "type": "object", not %s`, provider.Encode(root.Get("type"))), "make the parameters one object whose properties are the arguments")
		return nil, f
	}
	l := &lowerer{doc: root, f: f, nested: nestedID(root)}
	out := l.schema(root, "", 0, []string{"#"}, false)
	o, _ := out.(*provider.Object)
	if o == nil {
		o = &provider.Object{}
	}
	if _, ok := o.Lookup("type"); !ok {
		if l.rootRef {
			// "type": "object" would reach the values the reference
			// checks too, which need not be objects.
			f.Problem("/type", `the parameter schema has no "type", and a recursive "$ref": "#" refers to it, so "type": "object" cannot be added without changing what the reference accepts`, `add "type": "object" to the root, or refer to a definition instead`)
		}
		o.Set("type", "object")
	}
	for _, k := range []string{"$defs", "definitions"} {
		// The root's own definitions: the lowered root may be the
		// target of a root "$ref", which has none.
		defs, ok := root.Lookup(k)
		switch {
		case !ok:
		case !l.keptRefs:
			o.Delete(k)
			f.Note(provider.Pointer("", k), k+" dropped: every reference into it is inlined")
		default:
			// A reference into them is sent as it is: they are sent
			// too, lowered, each with itself on the stack.
			do, isObject := defs.(*provider.Object)
			if !isObject || l.nested {
				o.Set(k, defs)
				continue
			}
			nd := &provider.Object{}
			for _, dm := range do.Members() {
				p := provider.Pointer("", k, dm.Key)
				nd.Set(dm.Key, l.schema(dm.Value, p, 1, []string{"#", "#" + p}, true))
			}
			o.Set(k, nd)
		}
	}
	if f.Failed() {
		return nil, f
	}
	return provider.Encode(o), f
}

// nestedID reports whether a subschema other than the root has an "$id",
// which would make "#/..." references inside it resolve against it, not
// against the root.
func nestedID(root *provider.Object) bool {
	found := false
	provider.Walk(root, &provider.Findings{}, func(o *provider.Object, path string) {
		if _, ok := o.Lookup("$id"); ok && path != "" {
			found = true
		}
	})
	return found
}

type lowerer struct {
	doc      *provider.Object
	f        *provider.Findings
	nested   bool // a nested $id: references are not inlined
	nodes    int
	stopped  bool
	keptRefs bool // a reference is sent as it is, so $defs must stay
	rootRef  bool // a "$ref": "#" is sent as it is
}

// maxLoweredDepth bounds the nesting of the lowered schema, which
// inlining references can deepen.
const maxLoweredDepth = 2 * provider.PreflightMaxDepth

// Keyword classes for Gemini.
var (
	// annotations do not change what is valid; a $ref's sibling
	// annotation may override its target's.
	annotations = map[string]bool{"title": true, "description": true, "default": true, "examples": true,
		"deprecated": true, "readOnly": true, "writeOnly": true, "example": true}
	// unsupported change what is valid, and are outside Gemini's subset.
	unsupported = map[string]bool{"not": true, "if": true, "then": true, "else": true,
		"dependentSchemas": true, "dependentRequired": true, "dependencies": true,
		"patternProperties": true, "propertyNames": true, "unevaluatedProperties": true,
		"unevaluatedItems": true, "contains": true, "minContains": true, "maxContains": true,
		"$dynamicRef": true, "$recursiveRef": true, "additionalItems": true}
	// formats Gemini documents.
	formats = map[string]bool{"date-time": true, "date": true, "time": true,
		"int32": true, "int64": true, "float": true, "double": true}
	// forType lists the keywords that apply to one JSON type only.
	forType = map[string]string{
		"minLength": "string", "maxLength": "string", "pattern": "string",
		"contentEncoding": "string", "contentMediaType": "string",
		"minimum": "number", "maximum": "number", "exclusiveMinimum": "number", "exclusiveMaximum": "number", "multipleOf": "number",
		"items": "array", "prefixItems": "array", "minItems": "array", "maxItems": "array", "uniqueItems": "array",
		"properties": "object", "required": "object", "additionalProperties": "object",
		"minProperties": "object", "maxProperties": "object", "propertyOrdering": "object",
	}
)

// schema returns the lowering of the subschema v at path. stack holds the
// references being inlined; optional reports that the path passes through
// a property that is not required, array items or a union branch, so
// that a cycle there can end.
func (l *lowerer) schema(v any, path string, depth int, stack []string, optional bool) any {
	if l.stopped {
		return v
	}
	if l.nodes++; l.nodes > provider.PreflightMaxNodes || depth > maxLoweredDepth {
		l.stopped = true
		l.f.Problem(path, fmt.Sprintf("the schema, with its references inlined, has more than %d subschemas or %d levels", provider.PreflightMaxNodes, maxLoweredDepth), "simplify the schema, or reuse fewer definitions")
		return v
	}
	o, ok := v.(*provider.Object)
	if !ok {
		return v // true, false; other values are not schemas, and left to the validator
	}
	if ref, ok := o.Lookup("$ref"); ok {
		return l.ref(o, ref, path, depth, stack, optional)
	}
	out := &provider.Object{}
	required := requiredSet(o)
	for _, m := range o.Members() {
		k, val := m.Key, m.Value
		p := provider.Pointer(path, k)
		switch {
		case k == "$schema" || k == "$comment":
			l.f.Note(p, k+" dropped")
		case unsupported[k]:
			l.f.Problem(p, fmt.Sprintf("Gemini does not support %s; the model would never see this rule", k), "remove it and check the rule in the handler (the tool still validates its arguments), or state it in the description")
			out.Set(k, val)
		case k == "properties":
			props, isObject := val.(*provider.Object)
			if !isObject {
				out.Set(k, val)
				continue
			}
			np := &provider.Object{}
			for _, pm := range props.Members() {
				np.Set(pm.Key, l.schema(pm.Value, provider.Pointer(p, pm.Key), depth+1, stack, optional || !required[pm.Key]))
			}
			out.Set(k, np)
		case k == "$defs" || k == "definitions":
			out.Set(k, val) // lowered at the end, if a reference into them is kept
		case k == "items" || k == "additionalProperties":
			out.Set(k, l.schema(val, p, depth+1, stack, true))
		case k == "anyOf" || k == "prefixItems":
			out.Set(k, l.list(val, p, depth, stack))
		case k == "oneOf":
			branches := l.list(val, p, depth, stack)
			if list, isList := branches.([]any); isList && !exclusive(list) {
				l.f.Problem(p, "Gemini reads oneOf as anyOf, and these branches are not provably exclusive: the model may send a value that matches two, which the tool refuses", "make the branches exclusive (different types, or a different const in a property they all require), or use anyOf if any match will do")
			}
			out.Set(k, branches)
		case k == "allOf":
			// merged below, after the other keywords
		case k == "const":
			l.constant(out, o, val, p)
		case k == "enum":
			types, _, _ := provider.TypeNames(o)
			if list, isList := val.([]any); isList {
				for i, e := range list {
					if !scalar(e) && !(e == nil && len(types) > 1 && slices.Contains(types, "null")) {
						l.f.Problem(provider.Pointer(p, fmt.Sprint(i)), fmt.Sprintf("Gemini's enum holds strings and numbers only, not %s", provider.Encode(e)), enumFix(e))
						break
					}
				}
			}
			out.Set(k, val)
		case k == "format":
			if s, isString := val.(string); isString && !formats[s] {
				l.f.Note(p, fmt.Sprintf("format %q dropped: Gemini does not know it, and formats are annotations, checked by no one", s))
				continue
			}
			out.Set(k, val)
		default:
			out.Set(k, val)
		}
	}
	if all, ok := o.Lookup("allOf"); ok {
		out = l.allOf(out, all, provider.Pointer(path, "allOf"), depth, stack, optional)
	}
	return l.typeUnion(out, path)
}

// list lowers an array of subschemas.
func (l *lowerer) list(v any, path string, depth int, stack []string) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, len(list))
	for i, e := range list {
		out[i] = l.schema(e, provider.Pointer(path, fmt.Sprint(i)), depth+1, stack, true)
	}
	return out
}

// ref lowers a subschema with a "$ref": the target inlined, or the
// reference kept where it cannot be.
func (l *lowerer) ref(o *provider.Object, ref any, path string, depth int, stack []string, optional bool) any {
	p := provider.Pointer(path, "$ref")
	r, _ := ref.(string)
	siblings := 0
	for _, k := range o.Keys() {
		if !strings.HasPrefix(k, "$") {
			siblings++
		}
	}
	target, resolved := l.resolve(r)
	recursive := slices.Contains(stack, r)
	if !resolved || recursive {
		l.keptRefs = true
		l.rootRef = l.rootRef || r == "#"
		switch {
		case siblings > 0:
			l.f.Problem(p, fmt.Sprintf("Gemini allows no keywords beside a $ref, and %q cannot be inlined (%s)", r, why(resolved)), "move the sibling keywords into the referenced schema")
		case recursive && !optional:
			l.f.Problem(p, fmt.Sprintf("%q is a recursive reference on a path of required properties; Gemini unrolls cycles to a limited depth, only within properties that are not required", r), "make a property on the cycle optional")
		}
		return o
	}
	in := l.schema(target, path, depth, append(slices.Clip(stack), r), optional)
	l.f.Note(p, fmt.Sprintf("$ref %q inlined", r))
	if siblings == 0 {
		return in
	}
	merged, isObject := in.(*provider.Object)
	if !isObject {
		if in == false {
			return false
		}
		merged = &provider.Object{}
	} else {
		merged = clone(merged)
	}
	rest := &provider.Object{}
	for _, m := range o.Members() {
		if !strings.HasPrefix(m.Key, "$") {
			rest.Set(m.Key, m.Value)
		}
	}
	low, _ := l.schema(rest, path, depth, stack, optional).(*provider.Object)
	if low == nil {
		return merged
	}
	for _, m := range low.Members() {
		have, clash := merged.Lookup(m.Key)
		switch {
		case !clash || annotations[m.Key]:
			merged.Set(m.Key, m.Value)
		case string(provider.Encode(have)) != string(provider.Encode(m.Value)):
			l.f.Problem(provider.Pointer(path, m.Key), fmt.Sprintf("Gemini allows no keywords beside a $ref, and %s is set both here and in %q, so the two cannot be merged", m.Key, r), "merge the two schemas by hand")
		}
	}
	return merged
}

func why(resolved bool) string {
	if resolved {
		return "it is recursive"
	}
	return "it is not a JSON Pointer into this schema, or the schema has a nested $id"
}

// resolve returns the subschema a "#..." JSON Pointer reference names.
func (l *lowerer) resolve(ref string) (any, bool) {
	if l.nested || !strings.HasPrefix(ref, "#") || (ref != "#" && !strings.HasPrefix(ref, "#/")) {
		return nil, false
	}
	var v any = l.doc
	if ref == "#" {
		return v, true
	}
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case *provider.Object:
			next, ok := c.Lookup(tok)
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(c) || fmt.Sprint(i) != tok {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// constant lowers "const" into out.
func (l *lowerer) constant(out, o *provider.Object, c any, path string) {
	_, hasEnum := o.Lookup("enum")
	_, hasType := o.Lookup("type")
	switch {
	case scalar(c) && !hasEnum:
		out.Set("enum", []any{c})
		l.f.Note(path, "const sent as a one-value enum")
	case c == nil && !hasEnum && !hasType:
		out.Set("type", "null")
		l.f.Note(path, `const null sent as "type": "null"`)
	default:
		l.f.Problem(path, fmt.Sprintf("Gemini has no const, and %s cannot be a one-value enum (its enum holds strings and numbers only)", provider.Encode(c)), enumFix(c))
		out.Set("const", c)
	}
}

func enumFix(v any) string {
	if _, isBool := v.(bool); isBool {
		return `use "type": "boolean" (and check the value in the handler), or a string enum such as ["yes", "no"]`
	}
	return "use string values"
}

// ofType reports whether the JSON value v is of type typ.
func ofType(v any, typ string) bool {
	switch v := v.(type) {
	case nil:
		return typ == "null"
	case string:
		return typ == "string"
	case bool:
		return typ == "boolean"
	case json.Number:
		if typ == "integer" {
			_, err := v.Int64()
			return err == nil
		}
		return typ == "number"
	}
	return false
}

// scalar reports whether v is a string or a number.
func scalar(v any) bool {
	switch v.(type) {
	case string, json.Number:
		return true
	}
	return false
}

// typeUnion rewrites a "type" array as an anyOf of one branch per type.
func (l *lowerer) typeUnion(o *provider.Object, path string) any {
	types, present, ok := provider.TypeNames(o)
	if !present || !ok {
		return o
	}
	t := o.Get("type")
	if _, isList := t.([]any); !isList {
		return o
	}
	if len(types) == 1 {
		o.Set("type", types[0])
		l.f.Note(provider.Pointer(path, "type"), fmt.Sprintf("type [%q] sent as %q", types[0], types[0]))
		return o
	}
	outer := &provider.Object{}
	branches := make([]any, 0, len(types))
	for i, typ := range types {
		b := &provider.Object{}
		b.Set("type", typ)
		for _, m := range o.Members() {
			switch {
			case m.Key == "type" || annotations[m.Key] || strings.HasPrefix(m.Key, "$"):
			case forType[m.Key] != "" && forType[m.Key] != typ && (forType[m.Key] != "number" || typ != "integer"):
			case m.Key == "enum":
				// Keep the values of this type only: a value must
				// match both.
				list, _ := m.Value.([]any)
				var keep []any
				for _, e := range list {
					if ofType(e, typ) {
						keep = append(keep, e)
					}
				}
				if typ == "null" && len(keep) > 0 {
					continue // {"type": "null"} says it all
				}
				b.Set("enum", keep)
			default:
				b.Set(m.Key, m.Value)
			}
		}
		if e, ok := b.Lookup("enum"); ok && len(e.([]any)) == 0 && (len(branches) > 0 || i < len(types)-1) {
			continue // no value of this type is in the enum; one branch is kept at least
		}
		branches = append(branches, b)
	}
	for _, m := range o.Members() {
		if annotations[m.Key] || strings.HasPrefix(m.Key, "$") {
			outer.Set(m.Key, m.Value)
		}
	}
	if _, ok := outer.Lookup("anyOf"); ok {
		// Both a type list and an anyOf: each branch keeps the anyOf,
		// copied above; the outer one is not needed.
		outer.Delete("anyOf")
	}
	outer.Set("anyOf", branches)
	l.f.Note(provider.Pointer(path, "type"), fmt.Sprintf("type %s sent as an anyOf of one branch per type", provider.Encode(t)))
	return outer
}

// allOf merges the lowered branches of an allOf into out, when no two of
// them (out included) set the same keyword in different ways.
func (l *lowerer) allOf(out *provider.Object, all any, path string, depth int, stack []string, optional bool) *provider.Object {
	list, ok := all.([]any)
	if !ok {
		out.Set("allOf", all)
		return out
	}
	merged := clone(out)
	sources := map[string]int{}
	for _, k := range out.Keys() {
		sources[k] = 1
	}
	fail := func(reason string) *provider.Object {
		l.f.Problem(path, "Gemini does not support allOf, and these branches cannot be merged: "+reason, "merge the subschemas into one by hand")
		out.Set("allOf", all)
		return out
	}
	for i, e := range list {
		b, isObject := l.schema(e, provider.Pointer(path, fmt.Sprint(i)), depth+1, stack, optional).(*provider.Object)
		if !isObject {
			if e == true {
				continue
			}
			return fail(fmt.Sprintf("branch %d is %s", i, provider.Encode(e)))
		}
		for _, m := range b.Members() {
			have, clash := merged.Lookup(m.Key)
			sources[m.Key]++
			switch {
			case !clash:
				merged.Set(m.Key, m.Value)
			case m.Key == "properties":
				hp, _ := have.(*provider.Object)
				np, _ := m.Value.(*provider.Object)
				if hp == nil || np == nil {
					return fail("properties is not an object")
				}
				hp = clone(hp)
				for _, pm := range np.Members() {
					if _, dup := hp.Lookup(pm.Key); dup {
						return fail(fmt.Sprintf("property %q is declared by two branches", pm.Key))
					}
					hp.Set(pm.Key, pm.Value)
				}
				merged.Set("properties", hp)
			case m.Key == "required":
				hr, _ := have.([]any)
				nr, _ := m.Value.([]any)
				joined := slices.Clone(hr)
				for _, n := range nr {
					if !slices.Contains(joined, n) {
						joined = append(joined, n)
					}
				}
				merged.Set("required", joined)
			case string(provider.Encode(have)) != string(provider.Encode(m.Value)):
				return fail(fmt.Sprintf("%s is set by two branches", m.Key))
			}
		}
	}
	if sources["properties"] > 1 && (sources["additionalProperties"] > 0 || sources["unevaluatedProperties"] > 0) {
		return fail("additionalProperties of one branch would apply to the properties of another")
	}
	l.f.Note(path, "allOf merged into one schema")
	return merged
}

// exclusive reports whether no value can match two of the branches: each
// has one type, and no two share it (an integer is a number); or each is
// an enum of strings and numbers, and no two share a value; or each is an
// object that requires one property with a one-value enum, and no two
// share it.
func exclusive(branches []any) bool {
	keys := map[string]bool{}
	kind := ""
	for _, b := range branches {
		o, ok := b.(*provider.Object)
		if !ok {
			return false
		}
		k, ks := discriminator(o)
		if k == "" || kind != "" && k != kind {
			return false
		}
		kind = k
		for _, key := range ks {
			if keys[key] {
				return false
			}
			keys[key] = true
		}
	}
	return true
}

// discriminator returns what tells o from the other branches of a oneOf,
// and the values it takes.
func discriminator(o *provider.Object) (kind string, keys []string) {
	if types, present, ok := provider.TypeNames(o); present && ok && len(types) == 1 && !hasAny(o, "anyOf", "oneOf", "allOf", "$ref") {
		if types[0] == "integer" {
			types[0] = "number"
		}
		if types[0] != "object" {
			return "type", types
		}
	}
	if e, ok := o.Lookup("enum"); ok {
		list, _ := e.([]any)
		for _, v := range list {
			if !scalar(v) {
				return "", nil
			}
			keys = append(keys, string(provider.Encode(v)))
		}
		return "enum", keys
	}
	props, _ := o.Get("properties").(*provider.Object)
	if props == nil {
		if t, _ := o.Get("type").(string); t == "object" {
			return "type", []string{"object"}
		}
		return "", nil
	}
	required := requiredSet(o)
	for _, m := range props.Members() {
		po, _ := m.Value.(*provider.Object)
		if !required[m.Key] || po == nil {
			continue
		}
		if e, _ := po.Get("enum").([]any); len(e) == 1 && scalar(e[0]) {
			return "prop:" + m.Key, []string{string(provider.Encode(e[0]))}
		}
	}
	if t, _ := o.Get("type").(string); t == "object" {
		return "type", []string{"object"}
	}
	return "", nil
}

func hasAny(o *provider.Object, keys ...string) bool {
	for _, k := range keys {
		if _, ok := o.Lookup(k); ok {
			return true
		}
	}
	return false
}

func requiredSet(o *provider.Object) map[string]bool {
	out := map[string]bool{}
	list, _ := o.Get("required").([]any)
	for _, n := range list {
		if s, ok := n.(string); ok {
			out[s] = true
		}
	}
	return out
}

// clone copies an object's members (values shared).
func clone(o *provider.Object) *provider.Object {
	c := &provider.Object{}
	for _, m := range o.Members() {
		c.Set(m.Key, m.Value)
	}
	return c
}
