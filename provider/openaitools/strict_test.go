package openaitools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gotoolset/toolset/provider"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStrictSchema(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "optional properties become required and nullable",
			in:   `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"},"tags":{"type":["string","array"],"items":{"type":"string"}}},"required":["q"]}`,
			want: `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":["integer","null"]},"tags":{"type":["string","array","null"],"items":{"type":"string"}}},"required":["q","n","tags"],"additionalProperties":false}`,
		},
		{
			name: "enum and const gain null",
			in:   `{"type":"object","properties":{"u":{"type":"string","enum":["c","f"]},"k":{"const":"x"}},"additionalProperties":false}`,
			want: `{"type":"object","properties":{"u":{"type":["string","null"],"enum":["c","f",null]},"k":{"enum":["x",null]}},"additionalProperties":false,"required":["u","k"]}`,
		},
		{
			name: "already nullable stays as it is",
			in:   `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
			want: `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["a","b"],"additionalProperties":false}`,
		},
		{
			name: "ref and anyOf made nullable",
			in:   `{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}},"properties":{"p":{"$ref":"#/$defs/P"},"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`,
			want: `{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"],"additionalProperties":false}},"properties":{"p":{"anyOf":[{"$ref":"#/$defs/P"},{"type":"null"}]},"v":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}},"required":["p","v"],"additionalProperties":false}`,
		},
		{
			name: "nested objects and array items are closed",
			in:   `{"type":"object","properties":{"addr":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"stops":{"type":"array","items":{"type":"object","properties":{"at":{"type":"string"}}}}},"required":["addr","stops"]}`,
			want: `{"type":"object","properties":{"addr":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"stops":{"type":"array","items":{"type":"object","properties":{"at":{"type":["string","null"]}},"required":["at"],"additionalProperties":false}}},"required":["addr","stops"],"additionalProperties":false}`,
		},
		{
			name: "keywords that only narrow are removed, supported ones kept",
			in:   `{"type":"object","$schema":"x","properties":{"s":{"type":"string","minLength":1,"maxLength":9,"pattern":"^a","format":"uri","default":"a","examples":["a"]},"d":{"type":"string","format":"date"},"n":{"type":"number","minimum":0,"maximum":5,"multipleOf":0.5},"l":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3,"uniqueItems":true}},"required":["s","d","n","l"]}`,
			want: `{"type":"object","properties":{"s":{"type":"string","pattern":"^a"},"d":{"type":"string","format":"date"},"n":{"type":"number","minimum":0,"maximum":5,"multipleOf":0.5},"l":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3}},"required":["s","d","n","l"],"additionalProperties":false}`,
		},
		{
			name: "oneOf becomes anyOf",
			in:   `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"]}`,
			want: `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"],"additionalProperties":false}`,
		},
		{
			name: "a tool without arguments",
			in:   `{"type":"object","properties":{},"additionalProperties":false}`,
			want: `{"type":"object","properties":{},"additionalProperties":false,"required":[]}`,
		},
		{
			name: "an open root is closed",
			in:   `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":true}`,
			want: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
		},
		{
			name: "properties without a type get type object",
			in:   `{"properties":{"a":{"properties":{"b":{"type":"boolean"}},"required":["b"]}},"required":["a"]}`,
			want: `{"properties":{"a":{"properties":{"b":{"type":"boolean"}},"required":["b"],"type":"object","additionalProperties":false}},"required":["a"],"type":"object","additionalProperties":false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := strictSchema(json.RawMessage(tt.in))
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))
			// Property order is kept, as the tool declared it.
			assert.Equal(t, keyOrder(t, tt.want), keyOrder(t, string(got)))
		})
	}
}

// keyOrder lists the property names of a schema's properties in order.
func keyOrder(t *testing.T, schema string) []string {
	v, err := decodeJSON([]byte(schema))
	require.NoError(t, err)
	p, _ := v.(*provider.Object).Lookup("properties")
	return p.(*provider.Object).Keys()
}

func TestStrictSchemaRefused(t *testing.T) {
	nested := `{"type":"string"}`
	for range 11 {
		nested = `{"type":"object","properties":{"x":` + nested + `},"required":["x"]}`
	}
	tests := []struct {
		name, in, keyword, path, reason string
	}{
		{"map property", `{"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}}}`,
			"additionalProperties", "/properties/tags", "a map with free-form keys"},
		{"free-form object", `{"type":"object","properties":{"meta":{"type":"object"}}}`,
			"additionalProperties", "/properties/meta", "without declared properties"},
		{"allOf", `{"type":"object","properties":{"a":{"allOf":[{"type":"string"}]}}}`, "allOf", "/properties/a", "merge the subschemas"},
		{"not", `{"type":"object","properties":{"a":{"type":"string","not":{"const":"x"}}}}`, "not", "/properties/a", "does not support not"},
		{"if", `{"type":"object","if":{"required":["a"]},"properties":{}}`, "if", "", "if/then/else"},
		{"patternProperties", `{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, "patternProperties", "", "fixed set"},
		{"any value", `{"type":"object","properties":{"v":{}}}`, "type", "/properties/v", "accepts any value"},
		{"true schema", `{"type":"object","properties":{"v":true}}`, "", "/properties/v", "accepts any value"},
		{"array without items", `{"type":"object","properties":{"l":{"type":"array"}}}`, "items", "/properties/l", "needs items"},
		{"root anyOf", `{"anyOf":[{"type":"object"}]}`, "anyOf", "", "not anyOf"},
		{"root not an object", `{"type":"string"}`, "type", "", `not "string"`},
		{"external ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "$ref", "/properties/a", "only references inside"},
		{"undeclared required", `{"type":"object","properties":{},"required":["ghost"]}`, "required", "", `"ghost" is required but not declared`},
		{"too deep", nested, "properties", strings.Repeat("/properties/x", 10), "more than 10 levels"},
		{"escaped path", `{"type":"object","properties":{"a/b":{"not":{}}}}`, "not", "/properties/a~1b", "does not support not"},
		{"not JSON", `{"type":`, "", "", "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := strictSchema(json.RawMessage(tt.in))
			var se *StrictError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.keyword, se.Keyword)
			assert.Equal(t, tt.path, se.Path)
			assert.Contains(t, se.Reason, tt.reason)
		})
	}
}

func TestStrictTooManyProperties(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 5001 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"p` + strings.Repeat("x", i%7) + string(rune('0'+i%10)) + `_` + itoa(i) + `":{"type":"integer"}`)
	}
	b.WriteString(`}}`)
	_, err := strictSchema(json.RawMessage(b.String()))
	var se *StrictError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Reason, "5001 properties in all, strict mode allows at most 5000")
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestSchemaCacheReusesFields(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	schemas := map[bool]*provider.SchemaCache[[]field]{false: plainSchemas, true: strictSchemas}
	for _, strict := range []bool{false, true} {
		first, err := schemas[strict].Get(params)
		require.NoError(t, err)
		second, err := schemas[strict].Get(params)
		require.NoError(t, err)
		assert.Equal(t, first, second)
		assert.Same(t, &first[0], &second[0], "the second turn reuses the split schema")
	}
	plain, _ := plainSchemas.Get(params)
	strict, _ := strictSchemas.Get(params)
	assert.NotEqual(t, plain, strict, "plain and strict forms are cached apart")
}
