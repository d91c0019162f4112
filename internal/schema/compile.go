package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// draft202012 is the only $schema value accepted (at the root).
const draft202012 = "https://json-schema.org/draft/2020-12/schema"

// manyFields is the number of fields above which lookups use a map.
const manyFields = 8

// neverNode is the false schema.
var neverNode = &node{never: true}

// compileFast prepares schema (JSON Schema 2020-12, as JSON bytes) for fast
// checks. It returns an error only when schema is not a single JSON value
// or is neither an object nor a boolean; a schema outside the supported
// subset, or one the full validator would refuse to compile, gives a
// fastChecker whose Fast method reports false.
func compileFast(schema []byte) (*fastChecker, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("fast check: decoding the schema: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("fast check: decoding the schema: data after the top-level value")
	}
	switch v.(type) {
	case bool, map[string]any:
	default:
		return nil, fmt.Errorf("fast check: the schema is a JSON %s, not an object or a boolean", jsonKind(v))
	}
	root, ok := compileSchema(v, true)
	if !ok {
		return &fastChecker{}, nil
	}
	return &fastChecker{root: root, fast: true}, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number:
		return "number"
	case []any:
		return "array"
	default:
		return "value"
	}
}

// unsupported lists the keywords the full validator (or its meta-schema
// check) acts on in draft 2020-12 and the checker does not model. Other
// keywords it does not know are ignored, as the full validator ignores
// them.
var unsupported = map[string]bool{
	"$ref": true, "$dynamicRef": true, "$recursiveRef": true,
	"$anchor": true, "$dynamicAnchor": true, "$recursiveAnchor": true,
	"$defs": true, "definitions": true, "$vocabulary": true, "id": true,
	"allOf": true, "not": true, "if": true, "then": true, "else": true,
	"dependentSchemas": true, "dependentRequired": true, "dependencies": true,
	"prefixItems": true, "contains": true, "minContains": true, "maxContains": true,
	"additionalItems": true, "patternProperties": true, "propertyNames": true,
	"multipleOf": true, "unevaluatedItems": true, "unevaluatedProperties": true,
	"contentSchema": true,
}

// compileSchema compiles one schema; ok is false if it is outside the
// subset. A nil node with ok true accepts everything.
func compileSchema(v any, root bool) (n *node, ok bool) {
	switch s := v.(type) {
	case bool:
		if s {
			return nil, true
		}
		return neverNode, true
	case map[string]any:
		return compileObject(s, root)
	default:
		return nil, false
	}
}

func compileObject(obj map[string]any, root bool) (*node, bool) {
	n := &node{types: tAll, maxLen: -1, maxProps: -1, maxItems: -1}
	var (
		props    map[string]any
		required []any
		ok       = true
	)
	for k, v := range obj {
		switch k {
		case "type":
			n.types, ok = compileTypes(v)
		case "enum":
			var arr []any
			if arr, ok = v.([]any); ok {
				n.enums = append(n.enums, compileEnum(arr))
			}
		case "const":
			n.enums = append(n.enums, enumSet{compileLiteral(v)})
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			b := bound{op: boundOps[k]}
			var num json.Number
			if num, ok = v.(json.Number); ok {
				ok = b.v.parse([]byte(num))
			}
			n.bounds = append(n.bounds, b)
		case "minLength":
			n.minLen, ok = compileCount(v)
		case "maxLength":
			n.maxLen, ok = compileCount(v)
		case "minItems":
			n.minItems, ok = compileCount(v)
		case "maxItems":
			n.maxItems, ok = compileCount(v)
		case "minProperties":
			n.minProps, ok = compileCount(v)
		case "maxProperties":
			n.maxProps, ok = compileCount(v)
		case "pattern":
			var p string
			if p, ok = v.(string); ok {
				var err error
				n.pattern, err = compilePattern(p)
				ok = err == nil
			}
		case "uniqueItems":
			n.unique, ok = v.(bool)
		case "properties":
			props, ok = v.(map[string]any)
		case "required":
			required, ok = compileRequired(v)
		case "additionalProperties":
			n.addl, ok = compileSchema(v, false)
		case "items":
			n.items, ok = compileSchema(v, false)
		case "anyOf", "oneOf":
			var g []*node
			if g, ok = compileBranches(v, k == "oneOf"); ok && g != nil {
				n.groups = append(n.groups, g)
			}
		case "title", "description", "$comment", "format", "contentEncoding", "contentMediaType":
			_, ok = v.(string)
		case "deprecated", "readOnly", "writeOnly":
			_, ok = v.(bool)
		case "examples":
			_, ok = v.([]any)
		case "default":
		case "$schema":
			ok = root && v == draft202012
		case "$id":
			s, isString := v.(string)
			ok = root && isString && safeID(s) && safeBase(s)
		default:
			ok = !unsupported[k]
		}
		if !ok {
			return nil, false
		}
	}
	if !compileFields(n, props, required) {
		return nil, false
	}
	n.strCheck = n.minLen > 0 || n.maxLen >= 0 || n.pattern != nil || len(n.enums) > 0
	n.numCheck = len(n.bounds) > 0 || len(n.enums) > 0
	n.matchSize = matchSizeOf(n)
	if n.trivial() {
		return nil, true
	}
	return n, true
}

// matchSizeOf returns the pattern work per byte of a string checked
// against n: its own pattern's size and those of every branch of its
// groups, which a string may all be matched against. It saturates past
// maxMatchCost.
func matchSizeOf(n *node) int {
	const limit = maxMatchCost + 1
	size := 0
	if n.pattern != nil {
		size = n.pattern.size
	}
	for _, g := range n.groups {
		for _, b := range g {
			size = min(size+b.matchSize, limit)
		}
	}
	return size
}

// trivial reports whether n accepts every value.
func (n *node) trivial() bool {
	return n.types == tAll && len(n.enums) == 0 && len(n.bounds) == 0 &&
		n.minLen == 0 && n.maxLen < 0 && n.pattern == nil &&
		len(n.fields) == 0 && n.addl == nil && n.minProps == 0 && n.maxProps < 0 &&
		n.items == nil && n.minItems == 0 && n.maxItems < 0 && !n.unique &&
		len(n.groups) == 0
}

var boundOps = map[string]boundOp{
	"minimum": opMin, "maximum": opMax,
	"exclusiveMinimum": opExMin, "exclusiveMaximum": opExMax,
}

var typeNames = map[string]typeSet{
	"null": tNull, "boolean": tBoolean, "integer": tInteger, "number": tNumber,
	"string": tString, "array": tArray, "object": tObject,
}

// compileTypes reads a type keyword: a type name, or a non-empty array of
// distinct type names.
func compileTypes(v any) (typeSet, bool) {
	switch v := v.(type) {
	case string:
		t, ok := typeNames[v]
		return t, ok
	case []any:
		var set typeSet
		for _, item := range v {
			name, ok := item.(string)
			if !ok {
				return 0, false
			}
			t, ok := typeNames[name]
			if !ok || set&t != 0 {
				return 0, false
			}
			set |= t
		}
		return set, set != 0
	default:
		return 0, false
	}
}

// compileCount reads a non-negative integer keyword such as minLength.
func compileCount(v any) (int, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	var x decimal
	if !x.parse([]byte(num)) {
		return 0, false
	}
	return x.count()
}

// compileRequired reads required: an array of distinct strings.
func compileRequired(v any) ([]any, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	for i, item := range arr {
		s, ok := item.(string)
		if !ok || slices.Contains(arr[:i], any(s)) {
			return nil, false
		}
	}
	return arr, true
}

func compileEnum(arr []any) enumSet {
	set := make(enumSet, 0, len(arr))
	for _, v := range arr {
		set = append(set, compileLiteral(v))
	}
	return set
}

func compileLiteral(v any) literal {
	switch v := v.(type) {
	case nil:
		return literal{kind: litNull}
	case bool:
		if v {
			return literal{kind: litTrue}
		}
		return literal{kind: litFalse}
	case string:
		return literal{kind: litString, str: v}
	case json.Number:
		l := literal{kind: litNumber}
		if !l.num.parse([]byte(v)) {
			// Beyond the limits: match nothing, which is stricter.
			return literal{kind: litOther}
		}
		return l
	default:
		return literal{kind: litOther}
	}
}

// compileBranches compiles the branches of anyOf or oneOf. A oneOf is
// supported only when every branch declares a type and no value can have
// the types of two branches; then at most one branch can match and it
// means the same as anyOf. A nil group means every value matches.
func compileBranches(v any, oneOf bool) ([]*node, bool) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, false
	}
	if oneOf && !disjointTypes(arr) {
		return nil, false
	}
	g := make([]*node, 0, len(arr))
	always := false
	for _, b := range arr {
		bn, ok := compileSchema(b, false)
		if !ok {
			return nil, false
		}
		switch {
		case bn == nil:
			always = true
		case !bn.never:
			g = append(g, bn)
		}
	}
	if always {
		return nil, true
	}
	return g, true
}

// disjointTypes reports whether each branch declares a type and no two
// branches share a type, counting integer and number as shared.
func disjointTypes(branches []any) bool {
	var all typeSet
	for _, b := range branches {
		obj, ok := b.(map[string]any)
		if !ok {
			return false
		}
		t, ok := compileTypes(obj["type"])
		if !ok {
			return false
		}
		if t&(tInteger|tNumber) != 0 {
			t |= tInteger | tNumber
		}
		if all&t != 0 {
			return false
		}
		all |= t
	}
	return true
}

// compileFields builds the field table of an object schema from its
// properties and required keywords.
func compileFields(n *node, props map[string]any, required []any) bool {
	if len(required) > 64 {
		return false
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		pn, ok := compileSchema(props[name], false)
		if !ok {
			return false
		}
		n.fields = append(n.fields, field{name: name, node: pn, inProps: true})
	}
	for i, r := range required {
		name := r.(string)
		bit := uint64(1) << i
		n.reqMask |= bit
		if j := slices.IndexFunc(n.fields, func(f field) bool { return f.name == name }); j >= 0 {
			n.fields[j].bit = bit
		} else {
			n.fields = append(n.fields, field{name: name, bit: bit})
		}
	}
	for j := range n.fields {
		if j < 64 {
			n.fields[j].once = uint64(1) << j
		}
	}
	if len(n.fields) > manyFields {
		n.index = make(map[string]int, len(n.fields))
		for j, f := range n.fields {
			n.index[f.name] = j
		}
	}
	// A key with escapes or invalid UTF-8 might decode to a property name,
	// whose schema then applies; and it might duplicate another key.
	n.keySensitive = n.minProps > 0
	for _, f := range n.fields {
		if f.inProps && (f.node != nil || n.addl != nil) {
			n.keySensitive = true
		}
	}
	return true
}

// safeID reports whether s is a root $id the full validator is sure to
// accept and that cannot name one of its meta-schemas: an http(s) URL or a
// relative path made of unreserved characters, with an optional empty
// fragment. The caller also applies the reference rule ([safeBase]), which
// leaves only the http(s) form.
func safeID(s string) bool {
	s = strings.TrimSuffix(s, "#")
	rest, abs := strings.CutPrefix(s, "https://")
	if !abs {
		rest, abs = strings.CutPrefix(s, "http://")
	}
	if abs {
		host, path, _ := strings.Cut(rest, "/")
		if host == "" || strings.Contains(host, "json-schema.org") || !allIn(host, "abcdefghijklmnopqrstuvwxyz0123456789.-") {
			return false
		}
		rest = path
	} else if rest == "" || rest[0] == '/' || rest[0] == '.' {
		return false
	}
	return allIn(rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~/-")
}

func allIn(s, chars string) bool {
	for i := range len(s) {
		if !strings.ContainsRune(chars, rune(s[i])) {
			return false
		}
	}
	return true
}
