package toolset_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A schema with a property name of a megabyte is refused by ParseSchema
// with an error that says what is too long, where, and the bound, for
// little more than the document's own size; compiling it cost over a
// hundred megabytes. So are a megabyte "$anchor" and "format".
func TestParseSchemaRefusesOversizedStrings(t *testing.T) {
	big := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"property name", `{"type":"object","properties":{"` + big + `":{"type":"string"}},"required":["` + big + `"]}`,
			`toolset: invalid JSON Schema: the schema has a key of 1048576 bytes at "/properties" ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…"), more than the 1024 bytes a schema's key may have`},
		{"nested definition name", `{"$defs":{"a":{"properties":{"x/~` + big + `":{}}}}}`,
			`at "/$defs/a/properties"`},
		{"anchor", `{"properties":{"a":{"$anchor":"` + big + `"}}}`,
			`the schema has a "$anchor" of 1048576 bytes at "/properties/a"`},
		{"format", `{"properties":{"a":{"type":"string","format":"` + big + `"}}}`, `a "format" of 1048576 bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := []byte(tc.doc)
			var err error
			n := allocated(func() { _, err = toolset.ParseSchema(doc) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Less(t, len(err.Error()), 400, "the message is bounded")
			assert.Less(t, n, uint64(4*len(doc)), "refused for %d bytes, a %d-byte document", n, len(doc))
		})
	}
}

// A pattern of a megabyte makes the tool unusable before the compiler
// is given it, and a location of many long tokens is shown by its last
// ones, each cut.
func TestRawToolSizeErrorLocationIsBounded(t *testing.T) {
	var b strings.Builder
	key := strings.Repeat("k", 1000)
	for range 40 {
		b.WriteString(`{"properties":{"` + key + `":`)
	}
	b.WriteString(`{"pattern":"` + strings.Repeat("x", 70000) + `"}`)
	b.WriteString(strings.Repeat("}}", 40))
	err := rawTool(t, b.String()).Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a pattern of 70000 bytes at \"/…/")
	assert.Less(t, len(err.Error()), 1000)
}

// Names and patterns far longer than real ones, at the bounds, still
// parse, compile and validate.
func TestParseSchemaLongNamesWithinBounds(t *testing.T) {
	long := strings.Repeat("n", 1024)
	doc := `{"type":"object","properties":{"` + long + `":{"type":"string","format":"email","pattern":"^(?:` + strings.Repeat("[a-z@.]?", 100) + `)$"},` +
		`"short_name":{"$ref":"#/$defs/` + long + `"}},"required":["` + long + `"],` +
		`"$defs":{"` + long + `":{"type":"integer","$anchor":"` + strings.Repeat("a", 200) + `"}}}`
	s, err := toolset.ParseSchema([]byte(doc))
	require.NoError(t, err)
	tool := toolset.NewRawTool("long_names", "Long names.", s, func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
	require.NoError(t, tool.Err())
	args, _ := json.Marshal(map[string]any{long: "x", "short_name": 3})
	res, err := tool.Execute(context.Background(), toolset.ToolCall{Args: args})
	require.NoError(t, err)
	assert.Equal(t, "ok", res)
	args, _ = json.Marshal(map[string]any{long: "x", "short_name": "three"})
	_, err = tool.Execute(context.Background(), toolset.ToolCall{Args: args})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae, "the long-named schema still validates")
}

// A schema built in Go with an oversized property name makes the tool
// unusable, with the same error, rather than reach the compiler.
func TestRawToolRefusesOversizedPropertyName(t *testing.T) {
	s := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties()}
	s.Properties.Set(strings.Repeat("p", 5000), &jsonschema.Schema{Type: "string"})
	tool := toolset.NewRawTool("built", "", s, func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
	require.Error(t, tool.Err())
	assert.Contains(t, tool.Err().Error(), `a key of 5000 bytes at "/properties"`)
}
