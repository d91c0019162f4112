package toolset

import (
	"fmt"
	"strconv"

	"github.com/gotoolset/toolset/internal/schema"
	"github.com/invopop/jsonschema"
)

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
//   - "$id" (and, in a draft-04 document, "id") must be a fragment or an
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
