package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawTool makes a tool of the JSON schema src, which must parse.
func rawTool(t *testing.T, src string) toolset.Tool {
	t.Helper()
	s, err := toolset.ParseSchema([]byte(src))
	require.NoError(t, err)
	return toolset.NewRawTool("hostile", "", s, func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
}

// Twenty-two levels of allOf over two references to the next level are a
// schema of 2 KB that the validator, which memoises nothing, evaluates four
// million times for the arguments {}: ten seconds per call.
func TestSharedRefFanOutSchemaIsRefused(t *testing.T) {
	var defs []string
	const levels = 22
	for i := range levels {
		defs = append(defs, fmt.Sprintf(`"a%d":{"allOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"a%d":{"type":"object"}`, levels))
	tool := rawTool(t, `{"$defs":{`+strings.Join(defs, ",")+`},"$ref":"#/$defs/a0"}`)
	err := tool.Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `tool "hostile"`)
	assert.Contains(t, err.Error(), "applies more than")
}

// A recursive schema that reaches itself twice per level applies itself
// 2^depth times to arguments nested depth deep. Such arguments are refused
// before the validator runs; shallow ones are validated as usual.
func TestRecursiveRefFanOutOnDeepArgumentsIsRefused(t *testing.T) {
	tool := rawTool(t, `{"$defs":{
		"n":{"allOf":[{"$ref":"#/$defs/m"},{"$ref":"#/$defs/m"}]},
		"m":{"type":["array","integer"],"maximum":5,"items":{"$ref":"#/$defs/n"}}},
		"type":"object","properties":{"x":{"$ref":"#/$defs/n"}}}`)
	require.NoError(t, tool.Err())

	res, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"x":[[1,[2]],3]}`)})
	require.NoError(t, err)
	assert.Equal(t, "ok", res)
	p := argumentProblems(t, tool, `{"x":[[1,[9]],3]}`)
	assert.Contains(t, p[0].Message, "at most 5")

	const depth = 40
	start := time.Now()
	p = argumentProblems(t, tool, `{"x":`+strings.Repeat("[", depth)+"1"+strings.Repeat("]", depth)+`}`)
	assert.Contains(t, p[0].Message, "too long to validate")
	assert.Less(t, time.Since(start), 2*time.Second)
}

// Go compiles a kilobyte of "x{1000}" into 140,000 instructions, in half
// a second; a schema's pattern of such size is refused when the tool is
// made, before anything compiles it.
func TestHugeProgramPatternIsRefused(t *testing.T) {
	for _, where := range []string{
		`{"type":"object","properties":{"s":{"type":"string","pattern":"%s"}}}`,
		`{"type":"object","patternProperties":{"%s":{"type":"string"}}}`,
	} {
		start := time.Now()
		tool := rawTool(t, fmt.Sprintf(where, strings.Repeat("x{1000}", 140)))
		err := tool.Err()
		require.Error(t, err, where)
		assert.Contains(t, err.Error(), "x{1000}x{1000}")
		assert.Less(t, time.Since(start), 400*time.Millisecond)
	}
	// Real patterns are far below the bound.
	tool := rawTool(t, `{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-z0-9]{1,255}(\\.[a-z]{2,63}){1,10}$"}}}`)
	require.NoError(t, tool.Err())
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"s":"abc.de"}`)})
	require.NoError(t, err)
}

// Drafts before 2019-09 assert formats, and "format": "regex" compiles the
// model's string as a regular expression: 7 KB of "x{1000}" cost the
// host 0.6 s per string. Such a string is now parsed, found too large, and
// refused without being compiled.
func TestFormatRegexArgumentIsNotCompiled(t *testing.T) {
	tool := rawTool(t, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		"properties":{"s":{"type":"array","items":{"type":"string","format":"regex"}}}}`)
	require.NoError(t, tool.Err())
	hostile := `"` + strings.Repeat("x{1000}", 1000) + `"`
	start := time.Now()
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"s":[` + strings.Repeat(hostile+",", 9) + hostile + `]}`)})
	assert.Less(t, time.Since(start), 2*time.Second)
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae)
	assert.Len(t, ae.Problems, 10)
	assert.Equal(t, "s[0]", ae.Problems[0].Field)
	_, err = tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"s":["^a+$"]}`)})
	require.NoError(t, err)
	_ = argumentProblems(t, tool, `{"s":["(a"]}`)
}

// Compiling a schema costs time cubic in its depth: 600 levels of "not"
// (5 KB) took eight seconds, 3000 levels minutes.
func TestDeeplyNestedSchemaIsRefused(t *testing.T) {
	start := time.Now()
	tool := rawTool(t, strings.Repeat(`{"not":`, 600)+`{}`+strings.Repeat("}", 600))
	err := tool.Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nested")
	assert.Less(t, time.Since(start), 2*time.Second)
	require.NoError(t, rawTool(t, strings.Repeat(`{"properties":{"a":`, 40)+`{}`+strings.Repeat("}}", 40)).Err())
}

// The validator's reason for refusing a schema may quote any part of it: a
// 100 KB reference gave a 100 KB error.
func TestSchemaCompileErrorIsBounded(t *testing.T) {
	for _, src := range []string{
		`{"$ref":"#/$defs/` + strings.Repeat("x", 100000) + `"}`,
		`{"pattern":"(` + strings.Repeat("x", 100000) + `"}`,
	} {
		err := rawTool(t, src).Err()
		require.Error(t, err)
		assert.Less(t, len(err.Error()), 1000)
	}
}

// The fast check on raw arguments proved 1e500 valid against "minimum": 0
// (and against a schema without bounds), so it reached the handler while
// the full validator refuses every number beyond 1e400.
func TestHugeNumberIsRefusedOnTheFastPath(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"n":{"type":"number","minimum":0}}}`,
		`{"type":"object","properties":{"n":{"type":"number"}}}`,
		`{"type":"object","properties":{"n":{}}}`,
	} {
		tool := rawTool(t, schema)
		require.NoError(t, tool.Err())
		for _, n := range []string{"1e500", "1e-500", "1" + strings.Repeat("0", 500)} {
			p := argumentProblems(t, tool, `{"n":`+n+`}`)
			assert.Contains(t, p[0].Message, "out of range", schema)
		}
		_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"n":1e300}`)})
		require.NoError(t, err, schema)
	}
}

// The path of every value was built as the arguments were walked for
// out-of-range numbers, which costs time and memory quadratic in the
// nesting: 18 KB of nested arrays took 70-190 ms and allocated 120 MB.
func TestDeeplyNestedArgumentsCostLinearMemory(t *testing.T) {
	tool := rawTool(t, `{"type":"object","properties":{"a":{"items":{"items":{"items":{}}}}}}`)
	require.NoError(t, tool.Err())
	const depth = 9000
	args := json.RawMessage(`{"a":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: args})
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d levels: %d bytes allocated", depth, allocated)
	assert.Less(t, allocated, uint64(20<<20))
}

// Matching costs up to the pattern's size per byte: "[ab]{1000}c", eleven
// bytes of schema, took 0.8 s on a 100 KB string. A string too long for
// its pattern is refused without being matched, and a field name too long
// for the largest pattern property is refused rather than taken as
// matching none (which would let it escape the pattern's subschema).
func TestCostlyPatternMatchIsRefused(t *testing.T) {
	tool := rawTool(t, `{"type":"object","properties":{"s":{"type":"string","pattern":"[ab]{1000}c"}}}`)
	require.NoError(t, tool.Err())
	start := time.Now()
	p := argumentProblems(t, tool, `{"s":"`+strings.Repeat("a", 100000)+`"}`)
	assert.Less(t, time.Since(start), 300*time.Millisecond)
	assert.Equal(t, "s", p[0].Field)
	assert.Contains(t, p[0].Message, "too long")
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"s":"` + strings.Repeat("a", 1000) + `c"}`)})
	require.NoError(t, err)

	// Under "not", a string taken as not matching would pass.
	tool = rawTool(t, `{"type":"object","properties":{"s":{"type":"string","not":{"pattern":"[ab]{1000}c"}}}}`)
	require.NoError(t, tool.Err())
	p = argumentProblems(t, tool, `{"s":"`+strings.Repeat("a", 100000)+`c"}`)
	assert.Contains(t, p[0].Message, "too long")

	tool = rawTool(t, `{"type":"object","patternProperties":{"[ab]{1000}c":{"type":"integer"}}}`)
	require.NoError(t, tool.Err())
	long := strings.Repeat("a", 100000) + "c"
	start = time.Now()
	p = argumentProblems(t, tool, `{"`+long+`":"not an integer"}`)
	assert.Less(t, time.Since(start), 300*time.Millisecond)
	assert.Contains(t, p[0].Message, "too long")
	_ = argumentProblems(t, tool, `{"`+strings.Repeat("a", 1000)+`c":"not an integer"}`)
	_, err = tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"` + strings.Repeat("a", 1000) + `c":1,"x":"y"}`)})
	require.NoError(t, err)
}

// A key given twice, at any depth and however it is spelt, is refused as
// an argument error the model sees, naming the field and saying keys must
// be unique; the handler, which might read the first value while the
// validator and the approver saw the last, never runs. The fast path (a
// schema within its subset) and the full validator (one outside it, here
// with a "not") refuse alike.
func TestDuplicatedKeyIsRefusedAtAnyDepth(t *testing.T) {
	for schemaName, src := range map[string]string{
		"fast": `{"type":"object","properties":{"path":{"type":"string"},"items":{"type":"array","items":{"type":"object"}}}}`,
		"full": `{"type":"object","not":{"required":["never"]},"properties":{"path":{"type":"string"},"items":{"type":"array","items":{"type":"object"}}}}`,
	} {
		s, err := toolset.ParseSchema([]byte(src))
		require.NoError(t, err)
		var ran []string
		tool := toolset.NewRawTool("files", "", s, func(_ context.Context, args json.RawMessage) (any, error) {
			ran = append(ran, string(args))
			return "ok", nil
		})
		require.NoError(t, tool.Err())
		for _, tc := range []struct{ args, field string }{
			{`{"path":"a","path":"/etc/passwd"}`, "path"},
			{`{"items":[{"a":1},{"b":{"c":1,"c":2}}]}`, "items[1].b.c"},
			{`{"path":"a","\u0070ath":"/etc/passwd"}`, "path"},
			{`{"items":[{"a":1,"\u0061":2}]}`, "items[0].a"},
			{`{"items":[{"é":1,"\u00e9":2}]}`, "items[0].é"},
			{`{"items":[{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k1":1}]}`, "items[0].k1"},
		} {
			_, err := tool.Execute(context.Background(), toolset.ToolCall{Name: "files", Args: json.RawMessage(tc.args)})
			var ae *toolset.ArgumentError
			require.ErrorAs(t, err, &ae, "%s: %s", schemaName, tc.args)
			require.NotEmpty(t, ae.Problems)
			assert.Equal(t, tc.field, ae.Problems[0].Field, "%s: %s", schemaName, tc.args)
			text, visible := toolset.ErrorText(err)
			assert.True(t, visible, "the model sees it")
			assert.Contains(t, text, "must be unique", "%s: %s", schemaName, tc.args)
		}
		assert.Empty(t, ran, "%s: the handler ran on arguments with a key given twice", schemaName)

		// 10,000 distinct keys pass in linear time; one more, repeating
		// the first, is refused as fast.
		var b strings.Builder
		b.WriteString(`{"items":[{`)
		for i := range 10_000 {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		distinct := strings.TrimSuffix(b.String(), ",") + `}]}`
		repeated := b.String() + `"k0":0}]}`
		start := time.Now()
		_, err = tool.Execute(context.Background(), toolset.ToolCall{Name: "files", Args: json.RawMessage(distinct)})
		require.NoError(t, err, schemaName)
		p := argumentProblems(t, tool, repeated)
		assert.Equal(t, "items[0].k0", p[0].Field, schemaName)
		assert.Less(t, time.Since(start), 5*time.Second, "%s: no quadratic cost in the keys", schemaName)
		assert.Len(t, ran, 1, schemaName)
	}
}

// A schema of more objects than the validator compiles makes the tool
// unusable with an error that says so, before the compiler, whose cost
// grows with the square of the schema's subschemas, spends seconds on
// it; one within the bound compiles.
func TestSchemaOfTooManyObjectsIsRefused(t *testing.T) {
	props := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	big := rawTool(t, props(5000))
	require.Error(t, big.Err())
	assert.Contains(t, big.Err().Error(), "more than 4096 objects")
	require.NoError(t, rawTool(t, props(2000)).Err())
}
