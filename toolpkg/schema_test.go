package toolpkg

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckParametersKeepsTheDocument(t *testing.T) {
	t.Parallel()
	doc := `{
	  "type": "object",
	  "properties": {
	    "zeta": {"type": ["string", "null"], "maxLength": 5},
	    "alpha": {"type": "array", "items": {"$ref": "#/$defs/point"}, "minItems": 1},
	    "mode": {"enum": ["a", "b"], "x-ui-widget": "select"}
	  },
	  "required": ["zeta"],
	  "additionalProperties": false,
	  "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}}
	}`
	got, err := checkParameters(json.RawMessage(doc))
	require.NoError(t, err)
	assert.JSONEq(t, doc, string(got), "every keyword survives, known or not")
}

func TestCheckParametersErrors(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		`[]`:                       "must be a JSON Schema object",
		`{"type": "string"}`:       "the arguments must be an object",
		`{"properties": []}`:       "invalid parameter schema",
		`{"maxLength": -1}`:        "invalid parameter schema",
		`{"allOf": {}}`:            "invalid parameter schema",
		`{"pattern": "(unclosed"}`: "invalid parameter schema",
	} {
		_, err := checkParameters(json.RawMessage(doc))
		assert.ErrorContains(t, err, want, doc)
	}
	empty, err := checkParameters(nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(empty))
}

// A package's schema is held to the bounds the core holds every tool's
// schema to, at discovery, before any call.
func TestCheckParametersBoundsAHostileSchema(t *testing.T) {
	t.Parallel()
	deep := `{"type":"object","properties":{"a":` + strings.Repeat(`{"items":`, 200) + `{}` + strings.Repeat(`}`, 200) + `}}`
	_, err := checkParameters(json.RawMessage(deep))
	assert.ErrorContains(t, err, "levels deep")
}
