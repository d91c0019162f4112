package openaitools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gotoolset/toolset/provider"
)

// Strict mode (OpenAI's Structured Outputs for function calling) accepts a
// subset of JSON Schema, and in return the model's arguments always match
// the schema. The rules, from OpenAI's "Supported schemas" documentation:
//
//   - the root is an object, not an anyOf;
//   - every object has additionalProperties: false and lists every property
//     in required; an optional property is expressed as a nullable one;
//   - supported keywords are type, properties, required,
//     additionalProperties, items, enum, const, anyOf, $ref, $defs,
//     description and title; for strings pattern and format (a fixed list of
//     formats); for numbers multipleOf, minimum, maximum, exclusiveMinimum,
//     exclusiveMaximum; for arrays minItems and maxItems;
//   - allOf, not, if/then/else, dependentRequired, dependentSchemas are not
//     supported;
//   - at most 5000 properties and 10 levels of object nesting.
//
// strictSchema rewrites a tool's parameter schema to fit. Keywords that only
// narrow what is valid (minLength, uniqueItems, default, an unsupported
// format, ...) are removed: the tool still validates the arguments against
// its own schema, and the model sees an argument error if it strays.
// Keywords whose removal would change what the tool accepts in a way the
// model cannot discover (a free-form map, allOf, not, ...) make the schema
// unfit for strict mode, reported as a *StrictError.

// StrictError reports a tool whose parameter schema cannot be made to fit
// OpenAI's strict mode.
type StrictError struct {
	// Tool is the tool's name.
	Tool string
	// Keyword is the JSON Schema keyword at fault, such as "allOf".
	Keyword string
	// Path is where the keyword sits in the schema, as a JSON Pointer
	// ("" for the root).
	Path string
	// Reason says why strict mode cannot express it.
	Reason string
}

// Error implements error.
func (e *StrictError) Error() string {
	where := e.Path
	if where == "" {
		where = "the root"
	}
	return fmt.Sprintf("openaitools: tool %q cannot use strict mode: keyword %q at %s: %s", e.Tool, e.Keyword, where, e.Reason)
}

const (
	strictMaxProperties = 5000
	strictMaxDepth      = 10
)

// strictKeep lists the keywords strict mode accepts.
var strictKeep = map[string]bool{
	"type": true, "description": true, "title": true,
	"properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true,
	"$ref": true, "$defs": true, "definitions": true,
	"pattern": true, "format": true,
	"multipleOf": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true,
	"minItems": true, "maxItems": true,
}

// strictRefuse lists keywords that cannot be dropped without changing
// what the tool means, with the reason given to the user.
var strictRefuse = map[string]string{
	"allOf":             "strict mode does not support allOf; merge the subschemas into one",
	"not":               "strict mode does not support not",
	"if":                "strict mode does not support if/then/else",
	"then":              "strict mode does not support if/then/else",
	"else":              "strict mode does not support if/then/else",
	"dependentRequired": "strict mode does not support dependentRequired",
	"dependentSchemas":  "strict mode does not support dependentSchemas",
	"dependencies":      "strict mode does not support dependencies",
	"patternProperties": "strict mode objects have a fixed set of properties; patternProperties cannot be expressed",
	"prefixItems":       "strict mode does not support tuples (prefixItems)",
	"$dynamicRef":       "strict mode does not support $dynamicRef",
	"$recursiveRef":     "strict mode does not support $recursiveRef",
}

// strictFormats lists the string formats strict mode accepts.
var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true,
	"email": true, "hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// strictSchema returns the strict form of the parameter schema params, or
// a *StrictError (without the tool name, which the caller fills in).
func strictSchema(params json.RawMessage) (json.RawMessage, error) {
	v, err := decodeJSON(params)
	if err != nil {
		return nil, &StrictError{Reason: "the schema is not valid JSON: " + err.Error()}
	}
	root, ok := v.(*provider.Object)
	if !ok {
		return nil, &StrictError{Keyword: "type", Reason: "the parameter schema must be an object schema"}
	}
	if _, ok := root.Lookup("anyOf"); ok {
		return nil, &StrictError{Keyword: "anyOf", Reason: "the root of a strict schema must be an object, not anyOf"}
	}
	if _, ok := root.Lookup("oneOf"); ok {
		return nil, &StrictError{Keyword: "oneOf", Reason: "the root of a strict schema must be an object, not oneOf"}
	}
	if t, ok := root.Lookup("type"); ok && t != "object" {
		return nil, &StrictError{Keyword: "type", Reason: fmt.Sprintf("the root of a strict schema must have type \"object\", not %s", encodeJSON(t))}
	}
	root.Set("type", "object")
	if _, ok := root.Lookup("properties"); !ok {
		root.Set("properties", &provider.Object{})
	}
	s := &strictifier{}
	if err := s.schema(root, "", 0, true); err != nil {
		return nil, err
	}
	if s.props > strictMaxProperties {
		return nil, &StrictError{Keyword: "properties", Reason: fmt.Sprintf("%d properties in all, strict mode allows at most %d", s.props, strictMaxProperties)}
	}
	return encodeJSON(root), nil
}

type strictifier struct {
	props int // properties seen, across the schema
}

func refuse(path, keyword, reason string) error {
	return &StrictError{Path: path, Keyword: keyword, Reason: reason}
}

// pointer appends a JSON Pointer token to path.
func pointer(path string, tokens ...string) string {
	for _, t := range tokens {
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
		path += "/" + t
	}
	return path
}

// schema rewrites the subschema v at path in place. depth counts the
// objects it is nested in.
func (s *strictifier) schema(v any, path string, depth int, root bool) error {
	o, ok := v.(*provider.Object)
	if !ok {
		if b, isBool := v.(bool); isBool {
			if b {
				return refuse(path, "", "the schema true accepts any value; strict mode needs a type")
			}
			return refuse(path, "", "the schema false accepts nothing")
		}
		return refuse(path, "", fmt.Sprintf("a schema must be an object, not %s", encodeJSON(v)))
	}
	for _, k := range o.Keys() {
		if reason, bad := strictRefuse[k]; bad {
			return refuse(path, k, reason)
		}
	}
	if one, ok := o.Lookup("oneOf"); ok {
		if _, both := o.Lookup("anyOf"); both {
			return refuse(path, "oneOf", "a schema with both anyOf and oneOf cannot be made strict")
		}
		// anyOf accepts at least what oneOf does; the tool still checks
		// that exactly one branch matches.
		_ = one
		o.Rename("oneOf", "anyOf")
	}
	for _, k := range o.Keys() {
		if !strictKeep[k] {
			o.Delete(k)
		}
	}
	if f, ok := o.Lookup("format"); ok {
		if fs, isString := f.(string); !isString || !strictFormats[fs] {
			o.Delete("format")
		}
	}
	if ref, ok := o.Lookup("$ref"); ok {
		r, isString := ref.(string)
		if !isString || !strings.HasPrefix(r, "#") {
			return refuse(path, "$ref", fmt.Sprintf("only references inside the schema (#/...) are supported, not %s", encodeJSON(ref)))
		}
	}
	for _, defs := range []string{"$defs", "definitions"} {
		d, ok := o.Lookup(defs)
		if !ok {
			continue
		}
		do, isObject := d.(*provider.Object)
		if !isObject {
			return refuse(path, defs, "must be an object of schemas")
		}
		for _, name := range do.Keys() {
			if err := s.schema(do.Get(name), pointer(path, defs, name), depth, false); err != nil {
				return err
			}
		}
	}
	if a, ok := o.Lookup("anyOf"); ok {
		branches, isArray := a.([]any)
		if !isArray || len(branches) == 0 {
			return refuse(path, "anyOf", "must be a non-empty array of schemas")
		}
		for i, b := range branches {
			if err := s.schema(b, pointer(path, "anyOf", fmt.Sprint(i)), depth, false); err != nil {
				return err
			}
		}
	}

	types, err := schemaTypes(o, path)
	if err != nil {
		return err
	}
	_, hasProps := o.Lookup("properties")
	if hasProps && len(types) == 0 {
		o.Set("type", "object")
		types = []string{"object"}
	}
	if len(types) == 0 && !hasAny(o, "anyOf", "$ref", "enum", "const") {
		return refuse(path, "type", "the schema accepts any value; strict mode needs a type, enum, const, anyOf or $ref")
	}
	if slices.Contains(types, "object") || hasProps {
		if err := s.object(o, path, depth, root); err != nil {
			return err
		}
	}
	items, hasItems := o.Lookup("items")
	if slices.Contains(types, "array") && !hasItems {
		return refuse(path, "items", "an array schema needs items in strict mode")
	}
	if hasItems {
		if err := s.schema(items, pointer(path, "items"), depth, false); err != nil {
			return err
		}
	}
	return nil
}

// object rewrites an object schema: every property required, the optional
// ones nullable, no additional properties.
func (s *strictifier) object(o *provider.Object, path string, depth int, root bool) error {
	if depth+1 > strictMaxDepth {
		return refuse(path, "properties", fmt.Sprintf("objects nested more than %d levels deep", strictMaxDepth))
	}
	props := &provider.Object{}
	if p, ok := o.Lookup("properties"); ok {
		var isObject bool
		if props, isObject = p.(*provider.Object); !isObject {
			return refuse(path, "properties", "must be an object of schemas")
		}
	}
	switch ap, ok := o.Lookup("additionalProperties"); {
	case ok && ap != true && ap != false:
		return refuse(path, "additionalProperties", "a map with free-form keys cannot be expressed; strict mode objects have a fixed set of properties")
	case ap != false && props.Len() == 0 && !root:
		return refuse(path, "additionalProperties", "an object without declared properties accepts any keys; strict mode objects have a fixed set of properties")
	}
	required := map[string]bool{}
	if r, ok := o.Lookup("required"); ok {
		list, isArray := r.([]any)
		if !isArray {
			return refuse(path, "required", "must be an array of property names")
		}
		for _, n := range list {
			name, isString := n.(string)
			if !isString {
				return refuse(path, "required", "must be an array of property names")
			}
			if _, declared := props.Lookup(name); !declared {
				return refuse(path, "required", fmt.Sprintf("property %q is required but not declared", name))
			}
			required[name] = true
		}
	}
	all := make([]any, 0, props.Len())
	for _, name := range props.Keys() {
		s.props++
		p := pointer(path, "properties", name)
		if err := s.schema(props.Get(name), p, depth+1, false); err != nil {
			return err
		}
		if !required[name] {
			props.Set(name, nullable(props.Get(name).(*provider.Object)))
		}
		all = append(all, name)
	}
	o.Set("properties", props)
	o.Set("required", all)
	o.Set("additionalProperties", false)
	return nil
}

// schemaTypes returns the types a schema names with "type".
func schemaTypes(o *provider.Object, path string) ([]string, error) {
	t, ok := o.Lookup("type")
	if !ok {
		return nil, nil
	}
	switch t := t.(type) {
	case string:
		if !jsonTypes[t] {
			return nil, refuse(path, "type", fmt.Sprintf("must be a JSON type name or an array of them, not %s", encodeJSON(t)))
		}
		return []string{t}, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, isString := e.(string)
			if !isString || !jsonTypes[s] {
				return nil, refuse(path, "type", fmt.Sprintf("must be a JSON type name or an array of them, not %s", encodeJSON(t)))
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, refuse(path, "type", fmt.Sprintf("must be a JSON type name or an array of them, not %s", encodeJSON(t)))
}

var jsonTypes = map[string]bool{
	"string": true, "number": true, "integer": true, "boolean": true,
	"object": true, "array": true, "null": true,
}

func hasAny(o *provider.Object, keys ...string) bool {
	for _, k := range keys {
		if _, ok := o.Lookup(k); ok {
			return true
		}
	}
	return false
}

// nullable returns schema o changed to accept null as well.
func nullable(o *provider.Object) *provider.Object {
	if acceptsNull(o, localNull) {
		return o
	}
	if _, ok := o.Lookup("$ref"); ok {
		w := &provider.Object{}
		w.Set("anyOf", []any{o, nullSchema()})
		return w
	}
	if a, ok := o.Lookup("anyOf"); ok {
		o.Set("anyOf", append(a.([]any), nullSchema()))
		return o
	}
	if c, ok := o.Lookup("const"); ok {
		o.Delete("const")
		o.Set("enum", []any{c, nil})
	} else if e, ok := o.Lookup("enum"); ok {
		if list, isArray := e.([]any); isArray {
			o.Set("enum", append(list, nil))
		}
	}
	switch t := o.Get("type").(type) {
	case string:
		o.Set("type", []any{t, "null"})
	case []any:
		o.Set("type", append(t, "null"))
	}
	return o
}

// localNull reports whether subschema s accepts null, without following
// references.
func localNull(s any) bool {
	o, ok := s.(*provider.Object)
	return ok && acceptsNull(o, localNull)
}

func nullSchema() *provider.Object {
	n := &provider.Object{}
	n.Set("type", "null")
	return n
}

// field is one top-level field of a schema, its value still encoded so
// the order of nested keys (the properties) survives.
type field struct {
	key string
	val json.RawMessage
}

// plainSchemas and strictSchemas remember each parameter schema split into
// its top-level fields, as it is and in strict form: a turn over unchanged
// tools neither parses nor rewrites their schemas again.
var (
	plainSchemas  = provider.NewSchemaCache(func(raw json.RawMessage) ([]field, error) { return split(raw, false) })
	strictSchemas = provider.NewSchemaCache(func(raw json.RawMessage) ([]field, error) { return split(raw, true) })
)

func split(params json.RawMessage, strict bool) ([]field, error) {
	if strict {
		var err error
		if params, err = strictSchema(params); err != nil {
			return nil, err
		}
	}
	v, err := decodeJSON(params)
	if err != nil {
		return nil, fmt.Errorf("parameter schema: %w", err)
	}
	o, ok := v.(*provider.Object)
	if !ok {
		return nil, fmt.Errorf("parameter schema is not a JSON object: %s", params)
	}
	fs := make([]field, o.Len())
	for i, k := range o.Keys() {
		fs[i] = field{k, encodeJSON(o.Get(k))}
	}
	return fs, nil
}

// decodeJSON reads schemas and arguments with object members in order, so
// a schema rewritten for strict mode lists its properties in the order the
// tool declared them (models fill arguments in that order), and arguments
// keep the order the model wrote them in. A key that occurs twice keeps
// its first position and its last value, as encoding/json keeps the value.
// It parses one JSON value: nil, bool, json.Number, string, []any or
// *provider.Object.
func decodeJSON(data []byte) (any, error) {
	v, err := provider.Decode(data, maxDepth)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	return v, nil
}

// maxDepth bounds nesting, so hostile input cannot exhaust the stack.
const maxDepth = 1000

// encodeJSON writes v compactly, object members in their order.
func encodeJSON(v any) []byte { return provider.Encode(v) }
