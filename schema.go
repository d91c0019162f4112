package toolset

import (
	"encoding/json"
	"reflect"

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
