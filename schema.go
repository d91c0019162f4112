package toolset

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/gotoolset/toolset/internal/schema"
	"github.com/invopop/jsonschema"
)

// The schema engine (reflection, parsing, reference and cost bounds,
// argument validation) is internal/schema; the functions here are the
// root's thin handles on it.

// parametersSchema reflects the JSON Schema of a tool's argument type.
func parametersSchema(t reflect.Type) (*jsonschema.Schema, error) {
	return schema.ReflectParameters(t)
}

// resultSchema reflects the JSON Schema of a tool's result type, or nil.
func resultSchema(t reflect.Type) *jsonschema.Schema { return schema.ReflectResult(t) }

// emptyObjectSchema returns the schema of a tool that takes no arguments.
func emptyObjectSchema() *jsonschema.Schema { return schema.EmptyObject() }

// marshalSchema returns the JSON encoding of s.
func marshalSchema(s *jsonschema.Schema) (json.RawMessage, error) { return schema.Marshal(s) }

// Bounds on the untrusted text an argument error quotes, shared with the
// engine so that every problem is cut alike.
const (
	maxQuoted  = schema.MaxQuoted
	maxField   = schema.MaxField
	maxMessage = schema.MaxMessage
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
// "$recursiveRef") that is not a fragment such as "#/$defs/point", a
// "$schema" that names no draft the validator has built in, or an "$id"
// that is neither a fragment nor an http(s) URL, is refused
// with a *[SchemaRefError], so that no schema can make the program open a
// file or a URL.
//
// Strings the validator's compiler copies into the location of every
// part below them are bounded before any work is spent on them: a key
// (a property name, the name of a definition) of more than 1024 bytes,
// a "pattern" of more than 64 KB, or an "$anchor", "$id" or "format" of
// more than 8 KB is refused with an error that says which,
// where, and the bound.
func ParseSchema(data []byte) (*jsonschema.Schema, error) {

	s, err := schema.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("toolset: invalid JSON Schema: %w", publicSchemaError(err))
	}
	return s, nil
}

// program does not control (an MCP server, a package), and a validator that
// followed a "$ref" to "file:///etc/shadow" or "http://169.254.169.254/"
// would read local files or reach the network on their behalf, and could
// quote what it found back to the model. So:
//
//   - "$ref", "$dynamicRef" and "$recursiveRef" must be fragments ("#",
//     "#/$defs/x", "#anchor"): they resolve inside the resource that holds
//     them, which is always part of the same document, whatever "$id"
//     says;
//   - "$schema" must name one of the drafts the validator has built in
//     (2020-12, 2019-09, draft-07, draft-06, draft-04);
//   - "$id" (and, in a draft-04 document or part of one, "id") must be a fragment or an
//     absolute http(s) URL with a host and no user information: with every
//     reference a fragment it only names a part of the document, but a
//     "file:" or relative base would be resolved against the local disk by
//     any other reader the schema is handed to (an MCP client, a model
//     provider's SDK);
//   - "$anchor" may be anything: it only names a part of the document.
//
// [ParseSchema] and [NewRawTool] refuse other schemas with a
// *SchemaRefError. The check looks at every member of every object of the
// document, values of "const", "default" and the like included: a
// reference may point into any part of it. Whatever slips past it, the
// validator itself never loads a URL.

// SchemaRefError reports a schema keyword that refers to something outside
// the schema: a file, a URL, or a meta-schema the validator does not know.
type SchemaRefError struct {
	// Keyword is "$ref", "$dynamicRef", "$recursiveRef", "$schema", "$id"
	// or "id".
	Keyword string
	// Ref is the keyword's value, cut to at most 100 bytes.
	Ref string
	// Location is the JSON Pointer of the object holding the keyword, such
	// as "/properties/city" (cut like Ref); it is empty for the root.
	Location string
}

// Error implements error.
func (e *SchemaRefError) Error() string {
	where := "at the root"
	if e.Location != "" {
		where = "at " + strconv.Quote(e.Location)
	}
	switch e.Keyword {
	case "$schema":
		return fmt.Sprintf("$schema %q %s is not a draft this library knows (use the 2020-12 draft, or leave $schema out); no meta-schema is loaded", e.Ref, where)
	case "$id", "id":
		return fmt.Sprintf("%s %q %s is neither a fragment nor an http(s) URL, and no file or URL is ever loaded; a schema must be self-contained (identifiers start with \"#\" or \"https://\")", e.Keyword, e.Ref, where)
	}
	return fmt.Sprintf("%s %q %s points outside the schema, and no file or URL is ever loaded; a schema must be self-contained (references start with \"#\")", e.Keyword, e.Ref, where)
}

// publicSchemaError returns err, from the schema engine, as the root's
// public error: a *schema.RefError becomes a *SchemaRefError, with the same
// fields; any other error is returned as it is.
func publicSchemaError(err error) error {
	// The engine never wraps a *schema.RefError: a type assertion finds
	// it, without the allocation errors.As would cost every tool made.
	if re, ok := err.(*schema.RefError); ok {
		return &SchemaRefError{Keyword: re.Keyword, Ref: re.Ref, Location: re.Location}
	}
	return err
}

// schemaRefs refuses a schema, reflected or built, that refers outside
// itself, with a *SchemaRefError.
func schemaRefs(s *jsonschema.Schema) error {
	return publicSchemaError(schema.CheckRefs(s))
}

// validator checks tool-call arguments against a parameter schema with the
// schema engine, and words what it finds as the root's public errors. It
// is the engine's validator itself, seen through the root's methods.
type validator schema.Validator

func newValidator(s *jsonschema.Schema) *validator {
	return (*validator)(schema.NewValidator(s))
}

// check validates args. It returns nil when they are valid, the problems
// as an *ArgumentError (without the tool name) when they are not, a
// *SchemaRefError when the schema refers outside itself, and any other
// error when the schema itself cannot be compiled.
func (v *validator) check(args []byte) error {
	problems, err := (*schema.Validator)(v).Check(args)
	if err != nil {
		return publicSchemaError(err)
	}
	if problems == nil {
		return nil
	}
	return argumentError(problems)
}

// argumentError returns the engine's problems as an *ArgumentError. The
// engine's Problem and ArgumentProblem are the same struct, so each
// converts; the copy costs one allocation on the refusal path only.
func argumentError(problems []schema.Problem) *ArgumentError {
	out := make([]ArgumentProblem, len(problems))
	for i, p := range problems {
		out[i] = ArgumentProblem(p)
	}
	return &ArgumentError{Problems: out}
}

// compile compiles the full validator, once; it returns the schema's
// problem as check would.
func (v *validator) compile() error {
	return publicSchemaError((*schema.Validator)(v).Compile())
}
