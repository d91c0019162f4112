package schema

import (
	"encoding"
	"encoding/json"
	"fmt"
	"iter"
	"math/big"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
)

// Parameter schemas are reflected from the argument struct with
// github.com/invopop/jsonschema, inline (no $ref or $defs, which models
// handle poorly), without $schema or $id, and with additionalProperties
// false so unknown arguments are rejected.
//
// Field descriptions may be written in either of the two spellings Go
// libraries use:
//
//	City string `json:"city" jsonschema:"description=City name"` // invopop
//	City string `json:"city" jsonschema:"City name, e.g. Paris"`  // MCP Go SDK, Google ADK
//
// invopop reads only the first; a tag with none of invopop's keywords is
// taken whole as the description, so the second is not silently lost.

// ReflectParameters reflects the JSON Schema of a tool's argument type, which
// must be a struct or a pointer to one.
func ReflectParameters(t reflect.Type) (*jsonschema.Schema, error) {
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return nil, fmt.Errorf("argument type %s is not a struct: a tool's arguments are a JSON object", t)
	}
	if err := checkDecodable(t, nil); err != nil {
		return nil, fmt.Errorf("argument type %s: %w", t, err)
	}
	s, err := reflectSchema(t)
	if err != nil {
		return nil, fmt.Errorf("argument type %s: %w", t, err)
	}
	if s.Properties == nil {
		s.Properties = jsonschema.NewProperties()
	}
	return s, nil
}

// ReflectResult reflects the JSON Schema of a tool's result type, or returns
// nil when the type says nothing useful (an interface) or cannot be inlined.
func ReflectResult(t reflect.Type) *jsonschema.Schema {
	if t.Kind() == reflect.Interface {
		return nil
	}
	s, err := reflectSchema(t)
	if err != nil {
		return nil
	}
	return s
}

// reflectSchema reflects t, refusing types that cannot be inlined or have
// no JSON form instead of letting the reflector loop or panic.
func reflectSchema(t reflect.Type) (s *jsonschema.Schema, err error) {
	if err := checkInlinable(t, nil); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("cannot reflect a JSON Schema: %v", p)
		}
	}()
	// The reflector keys the definitions it keeps on the side by the
	// namer's names, and takes the root's schema from there: with Go's
	// short type names, a field of another package's type of the same name
	// as the root would replace the root's schema. Each named type gets a
	// name of its own instead.
	names := map[reflect.Type]string{}
	r := &jsonschema.Reflector{
		DoNotReference: true,
		ExpandedStruct: true,
		Anonymous:      true,
		LookupComment:  plainTagDescription,
		Mapper:         mapType,
		Namer: func(t reflect.Type) string {
			if t.Name() == "" {
				return ""
			}
			n, ok := names[t]
			if !ok {
				n = "t" + strconv.Itoa(len(names))
				names[t] = n
			}
			return n
		},
	}
	s = r.ReflectFromType(t)
	s.Version = ""
	s.ID = ""
	return s, nil
}

var (
	customSchemaType = reflect.TypeFor[interface{ JSONSchema() *jsonschema.Schema }]()
	aliasSchemaType  = reflect.TypeFor[interface{ JSONSchemaAlias() any }]()
	jsonDecoderType  = reflect.TypeFor[json.Unmarshaler]()
	textDecoderType  = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// knownTypes are the types with a custom JSON form whose schema the
// reflector knows, or that take any JSON value.
var knownTypes = map[reflect.Type]bool{
	reflect.TypeFor[time.Time]():       true, // a date-time string
	reflect.TypeFor[url.URL]():         true, // a URI string
	reflect.TypeFor[net.IP]():          true, // an IP address string
	reflect.TypeFor[json.RawMessage](): true, // any value
}

// implements reports whether t or *t implements iface.
func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface))
}

// declaresSchema reports whether t says what its schema is.
func declaresSchema(t reflect.Type) bool {
	return implements(t, customSchemaType) || t.Implements(aliasSchemaType)
}

// mapType is the reflector's Mapper, called for every type it meets
// (pointers followed): it gives the schema of types whose JSON form the
// reflector would get wrong, or nil to let the reflector go on.
func mapType(t reflect.Type) *jsonschema.Schema {
	switch {
	case t.Implements(customSchemaType), knownTypes[t]:
		return nil // the reflector handles these
	case reflect.PointerTo(t).Implements(customSchemaType):
		// The reflector only looks for value methods.
		return reflect.New(t).Interface().(interface{ JSONSchema() *jsonschema.Schema }).JSONSchema()
	case t == reflect.TypeFor[json.Number]():
		return &jsonschema.Schema{Type: "number"}
	case t == reflect.TypeFor[big.Int]():
		return &jsonschema.Schema{Type: "integer"}
	case implements(t, jsonDecoderType):
		return nil // refused for arguments: see checkDecodable
	case implements(t, textDecoderType):
		// encoding/json decodes such a type from a JSON string with its
		// UnmarshalText: netip.Addr, UUIDs, enums with names.
		return &jsonschema.Schema{Type: "string"}
	}
	return nil
}

// checkDecodable reports argument types whose JSON form the schema cannot
// know: a type that decodes itself with UnmarshalJSON, unless it declares
// its schema with a JSONSchema method or is one the reflector knows.
func checkDecodable(t reflect.Type, path []reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if declaresSchema(t) || knownTypes[t] || t == reflect.TypeFor[big.Int]() {
		return nil
	}
	if implements(t, jsonDecoderType) {
		return fmt.Errorf("type %s decodes itself from JSON (it has an UnmarshalJSON method), so its JSON Schema cannot be reflected; give it a method JSONSchema() *jsonschema.Schema that describes what it accepts", t)
	}
	if implements(t, textDecoderType) {
		return nil // a string
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return checkDecodable(t.Elem(), path)
	case reflect.Struct:
	default:
		return nil
	}
	if slices.Contains(path, t) {
		return nil // checkInlinable refuses it
	}
	path = append(path, t)
	for f := range schemaFields(t) {
		if err := checkDecodable(f.Type, path); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	return nil
}

// checkInlinable reports types that an inline schema cannot express: a
// recursive type would make the reflector recurse forever, and channels,
// functions and complex numbers have no JSON form.
func checkInlinable(t reflect.Type, path []reflect.Type) error {
	if t.Implements(customSchemaType) || reflect.PointerTo(t).Implements(customSchemaType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return checkInlinable(t.Elem(), path)
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return fmt.Errorf("type %s has no JSON form", t)
	case reflect.Struct:
	default:
		return nil
	}
	for _, p := range path {
		if p == t {
			return fmt.Errorf("type %s is recursive, and a tool's schema must be inline; use NewRawTool with a hand-written schema", t)
		}
	}
	path = append(path, t)
	for f := range schemaFields(t) {
		if err := checkInlinable(f.Type, path); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	return nil
}

// plainTagDescription is the reflector's comment lookup: it returns the
// jsonschema tag of field as the description when the tag is plain prose
// rather than invopop keywords.
func plainTagDescription(t reflect.Type, field string) string {
	if field == "" {
		return ""
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return ""
	}
	f, ok := t.FieldByName(field)
	if !ok {
		return ""
	}
	tag, ok := f.Tag.Lookup("jsonschema")
	if !ok || !isPlainDescription(tag) {
		return ""
	}
	return strings.TrimSpace(tag)
}

// invopopKeywords are the keys invopop understands in a jsonschema tag
// ("key=value"), and invopopFlags its bare words.
var (
	invopopKeywords = map[string]bool{
		"title": true, "description": true, "type": true, "anchor": true,
		"oneof_required": true, "anyof_required": true, "oneof_ref": true,
		"oneof_type": true, "anyof_ref": true, "anyof_type": true,
		"minLength": true, "maxLength": true, "pattern": true, "format": true,
		"readOnly": true, "writeOnly": true, "default": true, "example": true,
		"enum": true, "const": true, "multipleOf": true, "minimum": true,
		"maximum": true, "exclusiveMaximum": true, "exclusiveMinimum": true,
		"minItems": true, "maxItems": true, "uniqueItems": true,
		"minProperties": true, "maxProperties": true, "deprecated": true,
	}
	invopopFlags = map[string]bool{"-": true, "required": true, "nullable": true, "omitempty": true}
)

// isPlainDescription reports whether a jsonschema tag is prose: it is not
// empty and none of its comma-separated parts is an invopop keyword or flag.
func isPlainDescription(tag string) bool {
	if strings.TrimSpace(tag) == "" {
		return false
	}
	for part := range strings.SplitSeq(tag, ",") {
		part = strings.TrimSpace(part)
		if invopopFlags[part] {
			return false
		}
		if k, _, ok := strings.Cut(part, "="); ok && invopopKeywords[strings.TrimSpace(k)] {
			return false
		}
	}
	return true
}

// EmptyObject returns the schema of a tool that takes no arguments.
func EmptyObject() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Properties:           jsonschema.NewProperties(),
		AdditionalProperties: jsonschema.FalseSchema,
	}
}

// Marshal returns the JSON encoding of s.
func Marshal(s *jsonschema.Schema) (json.RawMessage, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding schema: %w", err)
	}
	return b, nil
}

// schemaFields yields the fields of struct type t that its schema holds:
// exported or embedded, and neither `json:"-"` nor `jsonschema:"-"`.
func schemaFields(t reflect.Type) iter.Seq[reflect.StructField] {
	return func(yield func(reflect.StructField) bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == "-" {
				continue
			}
			if tag := f.Tag.Get("jsonschema"); tag == "-" || strings.HasPrefix(tag, "-,") {
				continue // not in the schema, so never sent
			}
			if !yield(f) {
				return
			}
		}
	}
}
