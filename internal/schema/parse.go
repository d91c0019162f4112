package schema

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/gotoolset/toolset/internal/jsontext"
	"github.com/invopop/jsonschema"
)

// Parse decodes a JSON Schema into a *jsonschema.Schema without losing
// anything: encoding it again gives the same JSON document (up to key order
// outside "properties" and insignificant white space).
//
// The schema type of github.com/invopop/jsonschema has a field per keyword
// of draft 2020-12 and drops every other keyword when it is decoded with
// encoding/json; it also fails on common forms of other drafts ("type":
// ["string", "null"], a boolean "exclusiveMinimum", an array "items") and
// turns an empty schema {} into true. Parse fills a keyword's field
// only when the field encodes back to exactly the same value, and keeps
// every other keyword, verbatim, in the schema's Extras, which invopop
// encodes alongside the fields. So "definitions" and "$ref"s into it,
// vendor keywords such as "x-order", and legacy forms all survive, and the
// core's validator sees the schema its source wrote. Numbers keep their
// literal form, and the order of "properties" is kept.
//
// The document must be a JSON object or a boolean, and self-contained
// (see [RefError]): a reference out of it is refused with a *[RefError],
// unwrapped, a key longer than [MaxKeyBytes] or a name past its bound
// with a *[SizeError], and every other problem with an error that says
// what is wrong.
func Parse(data []byte) (*jsonschema.Schema, error) {
	n, err := schemaParser.Parse(data)
	if err != nil {
		return nil, err
	}
	if err := checkNodeSizes(n); err != nil {
		return nil, err
	}
	if err := checkNodeRefs(n); err != nil {
		return nil, err
	}
	s, ok := schemaOf(n, 0)
	if !ok {
		return nil, fmt.Errorf("a schema is a JSON object or a boolean, not %s", kindName(n))
	}
	return s, nil
}

// maxNodeDepth bounds the nesting of the JSON documents Parse reads,
// and maxSchemaDepth the nesting of subschemas it converts to typed fields;
// deeper subschemas are kept verbatim in Extras.
const (
	maxNodeDepth   = 10000
	maxSchemaDepth = 256
)

// schemaParser reads a schema document into an ordered value (see
// jsontext): object members in order, numbers as written, and of a key
// that occurs twice the last value, as encoding/json keeps it.
var schemaParser = jsontext.Parser{Limits: jsontext.Limits{MaxDepth: maxNodeDepth}}

// kindName names the JSON type of the value n.
func kindName(n any) string {
	switch n.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// schemaOf converts n to a schema; it reports false when n is neither an
// object nor a boolean, or nests too deep to convert.
func schemaOf(n any, depth int) (*jsonschema.Schema, bool) {
	if depth > maxSchemaDepth {
		return nil, false
	}
	var o *jsontext.Object
	switch n := n.(type) {
	case bool:
		if n {
			s := *jsonschema.TrueSchema
			return &s, true
		}
		s := *jsonschema.FalseSchema
		return &s, true
	case *jsontext.Object:
		o = n
	default:
		return nil, false
	}
	// A non-nil Extras keeps an empty schema {} from encoding as true.
	s := &jsonschema.Schema{Extras: map[string]any{}}
	for _, kv := range o.Members() {
		if !setKeyword(s, kv.Key, kv.Value, depth) {
			s.Extras[kv.Key] = jsontext.Unordered(kv.Value)
		}
	}
	return s, true
}

// setKeyword sets the field of s for keyword key when v encodes back from
// the field exactly as it is, and reports whether it did.
func setKeyword(s *jsonschema.Schema, key string, v any, depth int) bool {
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
		o, ok := v.(*jsontext.Object)
		if !ok {
			return false
		}
		props := jsonschema.NewProperties()
		for _, kv := range o.Members() {
			ps, ok := schemaOf(kv.Value, depth+1)
			if !ok {
				return false
			}
			props.Set(kv.Key, ps)
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
		if v == nil {
			return false
		}
		s.Const = jsontext.Unordered(v)
		return true
	case "default":
		if v == nil {
			return false
		}
		s.Default = jsontext.Unordered(v)
		return true
	case "required":
		list, ok := stringList(v)
		if !ok || len(list) == 0 {
			return false
		}
		s.Required = list
		return true
	case "dependentRequired":
		o, ok := v.(*jsontext.Object)
		if !ok || o.Len() == 0 {
			return false
		}
		m := make(map[string][]string, o.Len())
		for _, kv := range o.Members() {
			list, ok := stringList(kv.Value)
			if !ok {
				return false
			}
			m[kv.Key] = list
		}
		s.DependentRequired = m
		return true
	}
	return false
}

func setString(dst *string, v any) bool {
	str, ok := v.(string)
	if !ok || str == "" {
		return false
	}
	*dst = str
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
func setSchemaList(dst *[]*jsonschema.Schema, v any, depth int) bool {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return false
	}
	list := make([]*jsonschema.Schema, len(a))
	for i, e := range a {
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
func schemaMap(v any, depth int) (map[string]*jsonschema.Schema, bool) {
	o, ok := v.(*jsontext.Object)
	if !ok || o.Len() == 0 {
		return nil, false
	}
	m := make(map[string]*jsonschema.Schema, o.Len())
	for _, kv := range o.Members() {
		s, ok := schemaOf(kv.Value, depth+1)
		if !ok {
			return nil, false
		}
		m[kv.Key] = s
	}
	return m, true
}

func setSchemaMap(dst *map[string]*jsonschema.Schema, v any, depth int) bool {
	m, ok := schemaMap(v, depth)
	if ok {
		*dst = m
	}
	return ok
}

func setNumber(dst *json.Number, v any) bool {
	num, ok := v.(json.Number)
	if ok {
		*dst = num
	}
	return ok
}

// setCount sets a non-negative integer written in its plain decimal form.
func setCount(dst **uint64, v any) bool {
	num, ok := v.(json.Number)
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(string(num), 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != string(num) {
		return false
	}
	*dst = &n
	return true
}

func setTrue(dst *bool, v any) bool {
	if v != true {
		return false
	}
	*dst = true
	return true
}

// setValues sets a non-empty list of values.
func setValues(dst *[]any, v any) bool {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return false
	}
	list := make([]any, len(a))
	for i, e := range a {
		list[i] = jsontext.Unordered(e)
	}
	*dst = list
	return true
}

// stringList returns an array of strings, empty or not.
func stringList(v any) ([]string, bool) {
	a, ok := v.([]any)
	if !ok {
		return nil, false
	}
	list := make([]string, len(a))
	for i, e := range a {
		str, ok := e.(string)
		if !ok {
			return nil, false
		}
		list[i] = str
	}
	return list, true
}
