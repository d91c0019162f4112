// Package schema is the JSON Schema engine behind the tools of package
// toolset: it reflects the schema of a Go type, parses a schema written
// elsewhere without losing a keyword, refuses a schema that refers outside
// itself or would cost too much to compile or check against, and checks a
// tool call's arguments against a compiled schema.
//
// Its surface is data. A reference out of a schema is a *[RefError] (the
// keyword, its value, where it is); arguments that do not match are a list
// of [Problem]s (the field, and a message worded for a model); every other
// refusal is an error whose text says why. The root package turns these
// into its public errors (SchemaRefError, ArgumentError), so that the
// words a user or a model reads are defined there, and no other module
// imports this package.
//
// The bounds are:
//
//   - a parsed document nests at most 10,000 levels, and its subschemas are
//     typed down to 256 levels (deeper ones are kept verbatim);
//   - a compiled schema nests at most 128 levels, holds no number beyond
//     1e±400, no pattern larger than 10,000 instructions, and applies at
//     most 10,000 subschemas to one value;
//   - references are fragments, "$schema" names a built-in draft, "$id" is
//     a fragment or an http(s) URL (see [RefError]); nothing is ever
//     loaded;
//   - checking arguments costs at most a budget linear in their size, and
//     what a problem quotes of them is cut short.
//
// The fast check (fastcheck.go, compile.go, decimal.go) proves common
// arguments valid on the raw bytes without allocating; the full validator
// (github.com/santhosh-tekuri/jsonschema/v6) decides and words the rest.
package schema
