package toolset

import (
	"fmt"

	"github.com/gotoolset/toolset/internal/schema"
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
// "$recursiveRef") that is not a fragment such as "#/$defs/point", a
// "$schema" that names no draft the validator has built in, or an "$id"
// that is neither a fragment nor an http(s) URL, is refused
// with a *[SchemaRefError], so that no schema can make the program open a
// file or a URL.
func ParseSchema(data []byte) (*jsonschema.Schema, error) {

	s, err := schema.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("toolset: invalid JSON Schema: %w", publicSchemaError(err))
	}
	return s, nil
}
