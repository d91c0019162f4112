package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

const secretMarker = "TOP-SECRET-7f3a9c"

// secretFile writes a file whose content is a valid JSON Schema (a const
// holding the marker), so that a validator that loads it would quote the
// marker back in its problems.
func secretFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"const":"`+secretMarker+`"}`), 0o600))
	return p
}

// refusedEverywhere checks that a schema document is refused by ParseSchema
// and, made into a tool by hand (bypassing ParseSchema), by NewRawTool: the
// errors name the tool and the reference, the secret marker appears
// nowhere, and no call reaches the handler. It fails the test when either
// takes longer than a few seconds (a FIFO or /dev/stdin being opened).
func refusedEverywhere(t *testing.T, doc, ref string) {
	t.Helper()
	done := make(chan struct{})
	var parseErr, toolErr, callErr error
	called := false
	go func() {
		defer close(done)
		_, parseErr = toolset.ParseSchema([]byte(doc))
		// Every member as an extra: invopop encodes them as they are.
		s := jsonschema.Schema{Extras: map[string]any{}}
		if err := json.Unmarshal([]byte(doc), &s.Extras); err != nil {
			toolErr = err
			return
		}
		tool := toolset.NewRawTool("lookup", "Looks up.", &s, func(context.Context, json.RawMessage) (any, error) {
			called = true
			return "ran", nil
		})
		toolErr = tool.Err()
		_, callErr = tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"a":"x"}`)})
	}()
	// Real time, not synctest: the guard is against a real file read or
	// HTTP fetch hanging, which a bubble's fake clock would not see.
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("schema %s: still not refused after 5s: something opened the reference", doc)
	}
	var re *toolset.SchemaRefError
	require.ErrorAs(t, parseErr, &re, "ParseSchema")
	assert.Contains(t, parseErr.Error(), ref)
	require.Error(t, toolErr, "NewRawTool")
	require.ErrorAs(t, toolErr, &re, "NewRawTool")
	assert.Contains(t, toolErr.Error(), `tool "lookup"`)
	assert.Contains(t, toolErr.Error(), ref)
	require.Error(t, callErr)
	assert.False(t, called, "the handler ran")
	for _, err := range []error{parseErr, toolErr, callErr} {
		assert.NotContains(t, err.Error(), secretMarker)
	}
}

func TestSchemaFileRefIsNotRead(t *testing.T) {
	p := secretFile(t)
	ref := "file://" + p
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$ref":"`+ref+`"}}}`, ref)
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$dynamicRef":"`+ref+`"}}}`, ref)
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$recursiveRef":"`+ref+`"}}}`, ref)
	refusedEverywhere(t, `{"$schema":"`+ref+`","type":"object"}`, ref)
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$schema":"`+ref+`"}}}`, ref)
	// A plain path resolves against the document's own base; it is refused
	// the same.
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$ref":"`+p+`"}}}`, p)
}

func TestSchemaRelativeRefIsRefused(t *testing.T) {
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$ref":"other.json"}}}`, "other.json")
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$ref":"other.json#/$defs/x"}}}`, "other.json#/$defs/x")
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$ref":"//evil.example/x"}}}`, "//evil.example/x")
}

// A reference hidden where no schema is expected (a value of const, an
// unknown keyword) and reached through a JSON Pointer is refused too.
func TestSchemaRefHiddenInDataIsRefused(t *testing.T) {
	ref := "file://" + secretFile(t)
	refusedEverywhere(t, `{"type":"object","const":{"$ref":"`+ref+`"},"properties":{"a":{"$ref":"#/const"}}}`, ref)
	refusedEverywhere(t, `{"type":"object","x-hide":[{"$ref":"`+ref+`"}],"properties":{"a":{"$ref":"#/x-hide/0"}}}`, ref)
}

func TestSchemaFIFORefDoesNotHang(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$ref":"file://`+p+`"}}}`, p)
}

func TestSchemaStdinRefDoesNotHang(t *testing.T) {
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$ref":"file:///dev/stdin"}}}`, "file:///dev/stdin")
	refusedEverywhere(t, `{"$schema":"file:///dev/stdin","type":"object"}`, "file:///dev/stdin")
}

func TestSchemaHTTPRefMakesNoRequest(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"const":"` + secretMarker + `"}`))
	}))
	defer srv.Close()
	ref := srv.URL + "/s.json"
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$ref":"`+ref+`"}}}`, ref)
	refusedEverywhere(t, `{"$schema":"`+ref+`","type":"object"}`, ref)
	refusedEverywhere(t, `{"type":"object","properties":{"a":{"$dynamicRef":"`+ref+`#meta"}}}`, ref)
	// A relative reference under a base set with $id would resolve to the
	// server.
	refusedEverywhere(t, `{"$id":"`+srv.URL+`/root.json","type":"object","properties":{"a":{"$ref":"s.json"}}}`, "s.json")
	// Meta-schemas of the known drafts are built in: naming one loads
	// nothing either.
	for _, draft := range []string{
		"https://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft-07/schema#",
		"http://json-schema.org/draft-04/schema#",
	} {
		s, err := toolset.ParseSchema([]byte(`{"$schema":"` + draft + `","type":"object"}`))
		require.NoError(t, err, draft)
		require.NoError(t, toolset.NewRawTool("t", "", s, echoHandler).Err(), draft)
	}
	assert.Zero(t, hits.Load(), "requests made to the server")
}

func echoHandler(_ context.Context, args json.RawMessage) (any, error) { return args, nil }

// $id changes the base that references resolve against. References that
// are fragments still resolve inside the resource holding them, which is
// part of the document; nothing is loaded, and the right subschema applies.
// An $id that is not an http(s) URL (a file) is refused outright, with a
// *SchemaRefError that names it.
func TestSchemaIDGamesStayInTheDocument(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	secret := "file://" + secretFile(t)
	for name, tc := range map[string]struct {
		doc       string
		good, bad string
		refused   bool
	}{
		"root $id is a file": {
			`{"$id":"` + secret + `","type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"integer"}}}`,
			`{"a":1}`, `{"a":"x"}`, true,
		},
		"root $id is the server": {
			`{"$id":"` + srv.URL + `/s.json","type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"integer"}}}`,
			`{"a":1}`, `{"a":"x"}`, false,
		},
		"subschema $id is the server": {
			`{"type":"object","properties":{"a":{"$id":"` + srv.URL + `/s.json","$ref":"#/$defs/n","$defs":{"n":{"type":"integer"}}}},"$defs":{"n":{"type":"string"}}}`,
			`{"a":1}`, `{"a":"x"}`, false,
		},
		"subschema $id is a file": {
			`{"type":"object","properties":{"a":{"$id":"` + secret + `","$ref":"#/$defs/n","$defs":{"n":{"type":"integer"}}}}}`,
			`{"a":1}`, `{"a":"x"}`, true,
		},
		"anchor under a foreign $id": {
			`{"type":"object","properties":{"a":{"$id":"` + srv.URL + `/x","$ref":"#num","$defs":{"n":{"$anchor":"num","type":"integer"}}}}}`,
			`{"a":1}`, `{"a":"x"}`, false,
		},
		"$id in an unknown keyword": {
			`{"type":"object","x-res":{"$id":"` + srv.URL + `/y","$ref":"#/$defs/n"},"properties":{"a":{"$ref":"#/x-res"}},"$defs":{"n":{"type":"integer"}}}`,
			`{"a":1}`, `{"a":"x"}`, false,
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := toolset.ParseSchema([]byte(tc.doc))
			if tc.refused {
				var re *toolset.SchemaRefError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, "$id", re.Keyword)
				assert.Equal(t, secret, re.Ref)
				assert.NotContains(t, err.Error(), secretMarker)
				return
			}
			require.NoError(t, err)
			tool := toolset.NewRawTool("t", "", s, echoHandler)
			if err := tool.Err(); err != nil {
				// Refusing is sound too, as long as nothing was read.
				assert.NotContains(t, err.Error(), secretMarker)
				return
			}
			_, err = tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(tc.good)})
			require.NoError(t, err)
			_, err = tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(tc.bad)})
			var ae *toolset.ArgumentError
			require.ErrorAs(t, err, &ae)
			assert.NotContains(t, err.Error(), secretMarker)
		})
	}
	assert.Zero(t, hits.Load(), "requests made to the server")
}

func TestSchemaRefErrorIsBounded(t *testing.T) {
	ref := "file:///" + strings.Repeat("a", 100_000)
	_, err := toolset.ParseSchema([]byte(`{"properties":{"a":{"$ref":"` + ref + `"}}}`))
	var re *toolset.SchemaRefError
	require.True(t, errors.As(err, &re))
	assert.Less(t, len(err.Error()), 600)
}

// A reflected schema can hold any reference too: invopop's oneof_ref tag
// writes one verbatim, and a JSONSchema method returns what it likes.
// NewTool refuses an outside one when the tool is made, as NewRawTool
// does, instead of at its first call.
type outsideRefArgs struct {
	A string `json:"a" jsonschema:"oneof_ref=file:///etc/passwd"`
}

type outsideRefType struct{}

func (outsideRefType) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Ref: "https://example.com/s.json"}
}

type outsideRefMethodArgs struct {
	B outsideRefType `json:"b"`
}

func TestReflectedSchemaOutsideRefIsRefusedAtConstruction(t *testing.T) {
	for _, tc := range []struct {
		tool toolset.Tool
		ref  string
	}{
		{toolset.NewTool("tagged", "", func(context.Context, outsideRefArgs) (string, error) { return "ran", nil }), "file:///etc/passwd"},
		{toolset.NewTool("method", "", func(context.Context, outsideRefMethodArgs) (string, error) { return "ran", nil }), "https://example.com/s.json"},
	} {
		err := tc.tool.Err()
		var re *toolset.SchemaRefError
		require.ErrorAs(t, err, &re, tc.tool.Name)
		assert.Contains(t, err.Error(), `tool "`+tc.tool.Name+`"`)
		assert.Contains(t, err.Error(), tc.ref)
		_, err = toolset.NewFunction(tc.tool).GetTools(context.Background())
		require.Error(t, err)
	}
}

// An identifier ("$id", or "id" in a draft-04 document) is a fragment or
// an http(s) URL: a file, a relative path, another scheme or a URL with
// user information is refused everywhere, naming the keyword; the forms
// schemas in the wild use pass.
func TestSchemaIdentifierRule(t *testing.T) {
	for _, id := range []string{"file:///etc/", "sibling.json", "/etc/hostname", "urn:x:y", "https://user:pw@example.com/s.json", "http:///nohost", ""} {
		doc := `{"$id":"` + id + `","type":"object"}`
		_, err := toolset.ParseSchema([]byte(doc))
		var re *toolset.SchemaRefError
		require.ErrorAs(t, err, &re, id)
		assert.Equal(t, "$id", re.Keyword, id)
		assert.Contains(t, err.Error(), "is neither a fragment nor an http(s) URL", id)
		refusedEverywhere(t, doc, id)
	}
	draft4 := `{"$schema":"http://json-schema.org/draft-04/schema#","id":"sibling.json","type":"object"}`
	_, err := toolset.ParseSchema([]byte(draft4))
	var re *toolset.SchemaRefError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "id", re.Keyword)
	refusedEverywhere(t, draft4, "sibling.json")
	// A part of the document that is a draft-04 resource of its own reads
	// "id" too, as do the schemas under it, even under a "$schema" the
	// validator ignores there.
	for _, doc := range []string{
		`{"type":"object","properties":{"a":{"$schema":"http://json-schema.org/draft-04/schema#","id":"file:///etc/passwd","type":"string"}}}`,
		`{"type":"object","properties":{"a":{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://example.com/a","type":"object","properties":{"b":{"id":"file:///etc/passwd"}}}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema","id":"file:///etc/passwd"}}}`,
	} {
		_, err := toolset.ParseSchema([]byte(doc))
		require.ErrorAs(t, err, &re, doc)
		assert.Equal(t, "id", re.Keyword, doc)
		refusedEverywhere(t, doc, "file:///etc/passwd")
	}

	for _, doc := range []string{
		`{"$id":"https://example.com/schemas/s.json","type":"object"}`,
		`{"$id":"http://example.com/s#","type":"object"}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"a":{"$id":"#a","type":"string"}},"properties":{"x":{"$ref":"#a"}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://example.com/s.json","type":"object"}`,
		`{"type":"object","properties":{"id":{"type":"string"}},"default":{"id":"sibling.json"}}`, // not draft-04: "id" is data
	} {
		s, err := toolset.ParseSchema([]byte(doc))
		require.NoError(t, err, doc)
		require.NoError(t, toolset.NewRawTool("t", "", s, echoHandler).Err(), doc)
	}
}

type fileIDType struct{}

func (fileIDType) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{ID: "file:///etc/", Type: "string"}
}

// A reflected schema's $id is held to the same rule when the tool is made.
func TestReflectedSchemaFileIDIsRefused(t *testing.T) {
	tool := toolset.NewTool("fileid", "", func(context.Context, struct {
		F fileIDType `json:"f"`
	}) (string, error) {
		return "ran", nil
	})
	var re *toolset.SchemaRefError
	require.ErrorAs(t, tool.Err(), &re)
	assert.Equal(t, "$id", re.Keyword)
	assert.Equal(t, "/properties/f", re.Location)
}
