package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// normalJSON decodes a JSON document keeping numbers as written, so that
// two documents compare equal when they say the same thing.
func normalJSON(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "decoding %s", b)
	return v
}

// requireSameJSON fails unless want and got are the same JSON document.
func requireSameJSON(t testing.TB, want, got []byte) {
	t.Helper()
	require.Equal(t, normalJSON(t, want), normalJSON(t, got), "want %s\n got %s", want, got)
}

func TestParseSchemaRoundTrip(t *testing.T) {
	cases := map[string]string{
		"typed object":     `{"type":"object","properties":{"city":{"type":"string","description":"City name","minLength":1},"days":{"type":"integer","minimum":1,"maximum":14}},"required":["city"],"additionalProperties":false}`,
		"unknown keywords": `{"type":"object","x-order":["b","a"],"nullable":true,"properties":{"a":{"type":"string","x-mcp-header":"X-A","discriminator":{"propertyName":"kind"}}}}`,
		"type list":        `{"type":["string","null"]}`,
		"draft-07 definitions": `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"addr":{"type":"object","properties":{"zip":{"type":"string"}}}},` +
			`"type":"object","properties":{"home":{"$ref":"#/definitions/addr"}},"dependencies":{"a":["b"]}}`,
		"draft-04 exclusive bounds":      `{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":false}`,
		"tuple items":                    `{"type":"array","items":[{"type":"string"},{"type":"number"}],"additionalItems":false}`,
		"empty schemas":                  `{"type":"object","properties":{"anything":{},"nothing":false,"all":true},"not":{}}`,
		"empty object":                   `{}`,
		"empty lists":                    `{"type":"object","properties":{},"required":[],"enum":[],"examples":[],"$defs":{},"allOf":[]}`,
		"nulls and falses":               `{"const":null,"default":null,"uniqueItems":false,"deprecated":false,"readOnly":false,"writeOnly":false,"description":""}`,
		"numbers as written":             `{"type":"number","minimum":1.0,"maximum":1e3,"multipleOf":0.01,"maxLength":1.0,"minLength":2,"maxItems":-1,"default":12345678901234567890123}`,
		"strings that look like numbers": `{"minimum":"3","maxLength":"4"}`,
		"values":                         `{"enum":["a",1,true,null,{"k":[1,2]}],"const":{"x":1},"default":[],"examples":[{"a":1}]}`,
		"2020-12 keywords": `{"$id":"https://example.com/s","$anchor":"top","$comment":"c","$defs":{"n":{"type":"number"}},"allOf":[{"$ref":"#/$defs/n"}],` +
			`"anyOf":[true],"oneOf":[{"type":"integer"}],"if":{"minimum":1},"then":{"maximum":2},"else":false,"prefixItems":[{"type":"string"}],` +
			`"contains":{"type":"string"},"minContains":1,"maxContains":3,"patternProperties":{"^x":{"type":"string"}},"propertyNames":{"pattern":"^[a-z]+$"},` +
			`"dependentSchemas":{"a":{"required":["b"]}},"dependentRequired":{"a":["b"],"c":[]},"unevaluatedProperties":false,"contentEncoding":"base64",` +
			`"contentMediaType":"image/png","contentSchema":{"type":"string"},"format":"email","pattern":"^.+$","title":"T","minProperties":1,"maxProperties":9,"$dynamicRef":"#meta"}`,
		"bad subschemas": `{"not":5,"items":"x","properties":{"a":1},"allOf":[1],"$defs":{"a":"b"},"dependentRequired":{"a":[1]},"required":[1]}`,
		"duplicate keys": `{"type":"string","type":"number"}`,
		"true":           `true`,
		"false":          `false`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := toolset.ParseSchema([]byte(in))
			require.NoError(t, err)
			out, err := json.Marshal(s)
			require.NoError(t, err)
			requireSameJSON(t, []byte(in), out)
		})
	}
}

// Keywords of draft 2020-12 land in their typed fields, where code that
// reads a *jsonschema.Schema looks for them; properties keep their order.
func TestParseSchemaFillsTypedFields(t *testing.T) {
	s, err := toolset.ParseSchema([]byte(`{"type":"object","properties":{"zeta":{"type":"string","enum":["a","b"]},"alpha":{"type":"integer","minimum":3}},"required":["zeta"],"x-vendor":1}`))
	require.NoError(t, err)
	assert.Equal(t, "object", s.Type)
	assert.Equal(t, []string{"zeta"}, s.Required)
	var order []string
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		order = append(order, p.Key)
	}
	assert.Equal(t, []string{"zeta", "alpha"}, order)
	zeta, _ := s.Properties.Get("zeta")
	assert.Equal(t, []any{"a", "b"}, zeta.Enum)
	alpha, _ := s.Properties.Get("alpha")
	assert.Equal(t, json.Number("3"), alpha.Minimum)
	assert.Equal(t, map[string]any{"x-vendor": json.Number("1")}, s.Extras)

	// Plain encoding/json drops what ParseSchema keeps.
	var plain jsonschema.Schema
	require.NoError(t, json.Unmarshal([]byte(`{"type":"object","x-vendor":1}`), &plain))
	assert.Empty(t, plain.Extras, "invopop drops unknown keywords when decoding")
}

func TestParseSchemaRejectsNonSchemas(t *testing.T) {
	cases := map[string]string{
		"string":          `"object"`,
		"number":          `1`,
		"null":            `null`,
		"array":           `[{"type":"string"}]`,
		"not JSON":        `{"type":`,
		"trailing data":   `{} {}`,
		"empty":           ``,
		"non-string key?": `{1:2}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := toolset.ParseSchema([]byte(in))
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), "toolset: invalid JSON Schema")
		})
	}
}

// A malformed or hostile document is refused with an error that names the
// byte offset of the problem, never a panic.
func TestParseSchemaErrorNamesTheOffset(t *testing.T) {
	deep := strings.Repeat(`{"not":`, 10001) + "true" + strings.Repeat("}", 10001)
	for name, tc := range map[string]struct{ in, want string }{
		"truncated":      {`{"type":`, "unexpected end of JSON input at byte offset 8"},
		"bad character":  {`{"type":"object",}`, "invalid character '}' looking for beginning of object key string at byte offset 17"},
		"trailing data":  {`{} {}`, "invalid character '{' after top-level value at byte offset 3"},
		"control char":   {"{\"description\":\"a\x01\"}", "invalid control character '\\x01' in string literal at byte offset 17"},
		"bad escape":     {`{"title":"\x"}`, "invalid character 'x' in string escape code at byte offset 11"},
		"too deep":       {deep, "nested deeper than 10000 levels at byte offset 70000"},
		"huge, cut":      {`{"minimum":1` + strings.Repeat("0", 1<<20) + `e}`, fmt.Sprintf("invalid character '}' in exponent at byte offset %d", 13+1<<20)},
		"long, unclosed": {`{"title":"` + strings.Repeat("x", 1<<20), fmt.Sprintf("unexpected end of JSON input at byte offset %d", 10+1<<20)},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := toolset.ParseSchema([]byte(tc.in))
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Equal(t, "toolset: invalid JSON Schema: "+tc.want, err.Error())
		})
	}
}

// Very deep documents are kept verbatim instead of being converted level by
// level.
func TestParseSchemaDeepNesting(t *testing.T) {
	var b bytes.Buffer
	const depth = 1000
	for range depth {
		b.WriteString(`{"not":`)
	}
	b.WriteString(`true`)
	for range depth {
		b.WriteString(`}`)
	}
	s, err := toolset.ParseSchema(b.Bytes())
	require.NoError(t, err)
	out, err := json.Marshal(s)
	require.NoError(t, err)
	requireSameJSON(t, b.Bytes(), out)
}

func FuzzParseSchema(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{"type":["string","null"],"x-a":{"b":[1,2.50,"c"]}}`,
		`{"items":[{}],"exclusiveMinimum":true,"minLength":1.0}`,
		`{"enum":[],"const":null,"properties":{},"not":{}}`,
		`true`,
		`{"$defs":{"a":{"$ref":"#"}},"allOf":[{"$ref":"#/$defs/a"}]}`,
		`{"properties":{"a":{"$ref":"file:///etc/passwd"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://x/","items":{"$ref":"y.json"}}`,
		`{"const":{"$dynamicRef":"#a","$schema":"https://json-schema.org/schema"},"$ref":"#/const"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := toolset.ParseSchema(data)
		var v any
		valid := json.Unmarshal(data, &v) == nil
		switch v.(type) {
		case map[string]any, bool:
		default:
			valid = false
		}
		if !valid {
			if err == nil {
				t.Fatalf("accepted %q", data)
			}
			return
		}
		var re *toolset.SchemaRefError
		if errors.As(err, &re) {
			if !refersOutside(v) {
				t.Fatalf("rejected %q, which refers nowhere outside: %v", data, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("rejected %q: %v", data, err)
		}
		if refersOutside(v) {
			t.Fatalf("accepted %q, which refers outside itself", data)
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("encoding the schema of %q: %v", data, err)
		}
		requireSameJSON(t, data, out)
		// Compiling it must not fail on a reference (it may fail as an
		// invalid schema).
		if err := toolset.NewRawTool("t", "", s, func(context.Context, json.RawMessage) (any, error) { return nil, nil }).Err(); errors.As(err, &re) {
			t.Fatalf("ParseSchema accepted %q; NewRawTool refused it: %v", data, err)
		}
	})
}

// refersOutside reports whether a decoded document has a member that could
// make a validator load something: a reference that is not a fragment, or
// a $schema other than a known draft's.
func refersOutside(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok {
				switch k {
				case "$ref", "$dynamicRef", "$recursiveRef":
					if !strings.HasPrefix(s, "#") {
						return true
					}
				case "$schema":
					u := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "http://"), "https://"), "#")
					if u == s || !slices.Contains([]string{"json-schema.org/schema", "json-schema.org/draft/2020-12/schema",
						"json-schema.org/draft/2019-09/schema", "json-schema.org/draft-07/schema",
						"json-schema.org/draft-06/schema", "json-schema.org/draft-04/schema"}, u) {
						return true
					}
				}
			}
			if refersOutside(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if refersOutside(e) {
				return true
			}
		}
	}
	return false
}
