package toolset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/invopop/jsonschema"
)

// ParseSchema decodes a JSON Schema into a *jsonschema.Schema without losing
// anything: encoding it again gives the same JSON document (up to key order
// outside "properties" and insignificant white space).
//
// The schema type of github.com/invopop/jsonschema has a field per keyword
// of draft 2020-12 and drops every other keyword when it is decoded with
// encoding/json; it also fails on common forms of other drafts ("type":
// ["string", "null"], a boolean "exclusiveMinimum", an array "items") and
// turns an empty schema {} into true. ParseSchema fills a keyword's field
// only when the field encodes back to exactly the same value, and keeps
// every other keyword, verbatim, in the schema's Extras, which invopop
// encodes alongside the fields. So "definitions" and "$ref"s into it,
// vendor keywords such as "x-order", and legacy forms all survive, and the
// core's validator sees the schema its source wrote. Numbers keep their
// literal form, and the order of "properties" is kept.
//
// Use it for the schemas of tools made with [NewRawTool] from JSON written
// elsewhere: an MCP server's tools, a package's discovered tools. The
// document must be a JSON object or a boolean.
//
// The schema must be self-contained: a "$ref" (or "$dynamicRef",
// "$recursiveRef") that is not a fragment such as "#/$defs/point", or a
// "$schema" that names no draft the validator has built in, is refused
// with a *[SchemaRefError], so that no schema can make the program open a
// file or a URL.
func ParseSchema(data []byte) (*jsonschema.Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readNode(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("toolset: invalid JSON Schema: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("toolset: invalid JSON Schema: data after the schema")
	}
	if err := checkNodeRefs(n, nil); err != nil {
		return nil, fmt.Errorf("toolset: invalid JSON Schema: %w", err)
	}
	s, ok := schemaOf(n, 0)
	if !ok {
		return nil, fmt.Errorf("toolset: invalid JSON Schema: a schema is a JSON object or a boolean, not %s", n.kindName())
	}
	return s, nil
}

// maxNodeDepth bounds the nesting of the JSON documents ParseSchema reads,
// and maxSchemaDepth the nesting of subschemas it converts to typed fields;
// deeper subschemas are kept verbatim in Extras.
const (
	maxNodeDepth   = 10000
	maxSchemaDepth = 256
)

// node is a JSON value with the order of object members kept.
type node struct {
	kind  nodeKind
	obj   []member // kindObject, duplicate keys removed (the last wins)
	arr   []*node  // kindArray
	str   string   // kindString
	num   json.Number
	bool_ bool
}

type member struct {
	key string
	val *node
}

type nodeKind uint8

const (
	kindNull nodeKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (n *node) kindName() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[n.kind]
}

// readNode reads one JSON value from dec.
func readNode(dec *json.Decoder, depth int) (*node, error) {
	if depth > maxNodeDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxNodeDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kindNull}, nil
	case bool:
		return &node{kind: kindBool, bool_: t}, nil
	case json.Number:
		return &node{kind: kindNumber, num: t}, nil
	case string:
		return &node{kind: kindString, str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &node{kind: kindArray, arr: []*node{}}
			for dec.More() {
				e, err := readNode(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, e)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '{':
			n := &node{kind: kindObject, obj: []member{}}
			seen := map[string]int{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				v, err := readNode(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if i, dup := seen[key]; dup {
					n.obj[i].val = v // encoding/json keeps the last value too
					continue
				}
				seen[key] = len(n.obj)
				n.obj = append(n.obj, member{key, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// value returns n as the Go value encoding/json would decode it into, with
// numbers as json.Number so that they encode back as written.
func (n *node) value() any {
	switch n.kind {
	case kindBool:
		return n.bool_
	case kindNumber:
		return n.num
	case kindString:
		return n.str
	case kindArray:
		a := make([]any, len(n.arr))
		for i, e := range n.arr {
			a[i] = e.value()
		}
		return a
	case kindObject:
		m := make(map[string]any, len(n.obj))
		for _, kv := range n.obj {
			m[kv.key] = kv.val.value()
		}
		return m
	}
	return nil
}

// schemaOf converts n to a schema; it reports false when n is neither an
// object nor a boolean, or nests too deep to convert.
func schemaOf(n *node, depth int) (*jsonschema.Schema, bool) {
	if depth > maxSchemaDepth {
		return nil, false
	}
	switch n.kind {
	case kindBool:
		if n.bool_ {
			s := *jsonschema.TrueSchema
			return &s, true
		}
		s := *jsonschema.FalseSchema
		return &s, true
	case kindObject:
	default:
		return nil, false
	}
	// A non-nil Extras keeps an empty schema {} from encoding as true.
	s := &jsonschema.Schema{Extras: map[string]any{}}
	for _, kv := range n.obj {
		if !setKeyword(s, kv.key, kv.val, depth) {
			s.Extras[kv.key] = kv.val.value()
		}
	}
	return s, true
}

// setKeyword sets the field of s for keyword key when v encodes back from
// the field exactly as it is, and reports whether it did.
func setKeyword(s *jsonschema.Schema, key string, v *node, depth int) bool {
	sub := func() (*jsonschema.Schema, bool) { return schemaOf(v, depth+1) }
	switch key {
	// Strings: an empty string would be omitted.
	case "$schema":
		return setString(&s.Version, v)
	case "$id":
		var id string
		if !setString(&id, v) {
			return false
		}
		s.ID = jsonschema.ID(id)
		return true
	case "$anchor":
		return setString(&s.Anchor, v)
	case "$ref":
		return setString(&s.Ref, v)
	case "$dynamicRef":
		return setString(&s.DynamicRef, v)
	case "$comment":
		return setString(&s.Comments, v)
	case "type":
		return setString(&s.Type, v)
	case "pattern":
		return setString(&s.Pattern, v)
	case "format":
		return setString(&s.Format, v)
	case "contentEncoding":
		return setString(&s.ContentEncoding, v)
	case "contentMediaType":
		return setString(&s.ContentMediaType, v)
	case "title":
		return setString(&s.Title, v)
	case "description":
		return setString(&s.Description, v)

	// Subschemas.
	case "not":
		return setSchema(&s.Not, sub)
	case "if":
		return setSchema(&s.If, sub)
	case "then":
		return setSchema(&s.Then, sub)
	case "else":
		return setSchema(&s.Else, sub)
	case "items":
		return setSchema(&s.Items, sub)
	case "contains":
		return setSchema(&s.Contains, sub)
	case "additionalProperties":
		return setSchema(&s.AdditionalProperties, sub)
	case "propertyNames":
		return setSchema(&s.PropertyNames, sub)
	case "contentSchema":
		return setSchema(&s.ContentSchema, sub)
	case "allOf":
		return setSchemaList(&s.AllOf, v, depth)
	case "anyOf":
		return setSchemaList(&s.AnyOf, v, depth)
	case "oneOf":
		return setSchemaList(&s.OneOf, v, depth)
	case "prefixItems":
		return setSchemaList(&s.PrefixItems, v, depth)
	case "$defs":
		m, ok := schemaMap(v, depth)
		if ok {
			s.Definitions = m
		}
		return ok
	case "dependentSchemas":
		return setSchemaMap(&s.DependentSchemas, v, depth)
	case "patternProperties":
		return setSchemaMap(&s.PatternProperties, v, depth)
	case "properties":
		if v.kind != kindObject {
			return false
		}
		props := jsonschema.NewProperties()
		for _, kv := range v.obj {
			ps, ok := schemaOf(kv.val, depth+1)
			if !ok {
				return false
			}
			props.Set(kv.key, ps)
		}
		s.Properties = props
		return true

	// Numbers, kept as written.
	case "multipleOf":
		return setNumber(&s.MultipleOf, v)
	case "maximum":
		return setNumber(&s.Maximum, v)
	case "exclusiveMaximum":
		return setNumber(&s.ExclusiveMaximum, v)
	case "minimum":
		return setNumber(&s.Minimum, v)
	case "exclusiveMinimum":
		return setNumber(&s.ExclusiveMinimum, v)
	case "maxLength":
		return setCount(&s.MaxLength, v)
	case "minLength":
		return setCount(&s.MinLength, v)
	case "maxItems":
		return setCount(&s.MaxItems, v)
	case "minItems":
		return setCount(&s.MinItems, v)
	case "maxContains":
		return setCount(&s.MaxContains, v)
	case "minContains":
		return setCount(&s.MinContains, v)
	case "maxProperties":
		return setCount(&s.MaxProperties, v)
	case "minProperties":
		return setCount(&s.MinProperties, v)

	// Booleans: false would be omitted.
	case "uniqueItems":
		return setTrue(&s.UniqueItems, v)
	case "deprecated":
		return setTrue(&s.Deprecated, v)
	case "readOnly":
		return setTrue(&s.ReadOnly, v)
	case "writeOnly":
		return setTrue(&s.WriteOnly, v)

	// Values: null and empty lists would be omitted.
	case "enum":
		return setValues(&s.Enum, v)
	case "examples":
		return setValues(&s.Examples, v)
	case "const":
		if v.kind == kindNull {
			return false
		}
		s.Const = v.value()
		return true
	case "default":
		if v.kind == kindNull {
			return false
		}
		s.Default = v.value()
		return true
	case "required":
		list, ok := stringList(v)
		if !ok || len(list) == 0 {
			return false
		}
		s.Required = list
		return true
	case "dependentRequired":
		if v.kind != kindObject || len(v.obj) == 0 {
			return false
		}
		m := make(map[string][]string, len(v.obj))
		for _, kv := range v.obj {
			list, ok := stringList(kv.val)
			if !ok {
				return false
			}
			m[kv.key] = list
		}
		s.DependentRequired = m
		return true
	}
	return false
}

func setString(dst *string, v *node) bool {
	if v.kind != kindString || v.str == "" {
		return false
	}
	*dst = v.str
	return true
}

func setSchema(dst **jsonschema.Schema, sub func() (*jsonschema.Schema, bool)) bool {
	s, ok := sub()
	if ok {
		*dst = s
	}
	return ok
}

// setSchemaList sets a non-empty list of subschemas.
func setSchemaList(dst *[]*jsonschema.Schema, v *node, depth int) bool {
	if v.kind != kindArray || len(v.arr) == 0 {
		return false
	}
	list := make([]*jsonschema.Schema, len(v.arr))
	for i, e := range v.arr {
		s, ok := schemaOf(e, depth+1)
		if !ok {
			return false
		}
		list[i] = s
	}
	*dst = list
	return true
}

// schemaMap converts a non-empty object of subschemas.
func schemaMap(v *node, depth int) (map[string]*jsonschema.Schema, bool) {
	if v.kind != kindObject || len(v.obj) == 0 {
		return nil, false
	}
	m := make(map[string]*jsonschema.Schema, len(v.obj))
	for _, kv := range v.obj {
		s, ok := schemaOf(kv.val, depth+1)
		if !ok {
			return nil, false
		}
		m[kv.key] = s
	}
	return m, true
}

func setSchemaMap(dst *map[string]*jsonschema.Schema, v *node, depth int) bool {
	m, ok := schemaMap(v, depth)
	if ok {
		*dst = m
	}
	return ok
}

func setNumber(dst *json.Number, v *node) bool {
	if v.kind != kindNumber {
		return false
	}
	*dst = v.num
	return true
}

// setCount sets a non-negative integer written in its plain decimal form.
func setCount(dst **uint64, v *node) bool {
	if v.kind != kindNumber {
		return false
	}
	n, err := strconv.ParseUint(string(v.num), 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != string(v.num) {
		return false
	}
	*dst = &n
	return true
}

func setTrue(dst *bool, v *node) bool {
	if v.kind != kindBool || !v.bool_ {
		return false
	}
	*dst = true
	return true
}

// setValues sets a non-empty list of values.
func setValues(dst *[]any, v *node) bool {
	if v.kind != kindArray || len(v.arr) == 0 {
		return false
	}
	list := make([]any, len(v.arr))
	for i, e := range v.arr {
		list[i] = e.value()
	}
	*dst = list
	return true
}

// stringList returns an array of strings, empty or not.
func stringList(v *node) ([]string, bool) {
	if v.kind != kindArray {
		return nil, false
	}
	list := make([]string, len(v.arr))
	for i, e := range v.arr {
		if e.kind != kindString {
			return nil, false
		}
		list[i] = e.str
	}
	return list, true
}
