package toolpkg

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSchemaFromJSONKeepsTheDocument(t *testing.T) {
	doc := `{
	  "type": "object",
	  "properties": {
	    "zeta": {"type": ["string", "null"], "maxLength": 5},
	    "alpha": {"type": "array", "items": {"$ref": "#/$defs/point"}, "minItems": 1},
	    "mode": {"enum": ["a", "b"], "x-ui-widget": "select"},
	    "legacy": {"$ref": "#/definitions/old"}
	  },
	  "required": ["zeta"],
	  "additionalProperties": false,
	  "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
	  "definitions": {"old": {"type": "integer", "minimum": 0}},
	  "anyOf": [{"required": ["alpha"]}, {"required": ["mode"]}]
	}`
	s, err := schemaFromJSON(json.RawMessage(doc))
	require.NoError(t, err)
	out, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, doc, string(out), "every keyword survives, known or not")

	var keys []string
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		keys = append(keys, p.Key)
	}
	assert.Equal(t, []string{"zeta", "alpha", "mode", "legacy"}, keys, "property order is kept")
}

func TestSchemaFromJSONErrors(t *testing.T) {
	for _, doc := range []string{`[]`, `{"properties": []}`, `{"items": 5}`, `{"maxLength": -1}`, `{"allOf": {}}`} {
		_, err := schemaFromJSON(json.RawMessage(doc))
		assert.Error(t, err, doc)
	}
	deep := bytes.Repeat([]byte(`{"not":`), 100)
	deep = append(deep, []byte("true")...)
	deep = append(deep, bytes.Repeat([]byte("}"), 100)...)
	_, err := schemaFromJSON(deep)
	assert.ErrorContains(t, err, "nested more than 64 levels deep")
}
