package provider_test

import (
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tool name of a megabyte makes a problem of a bounded size: the
// name cut with an ellipsis, the length said in full.
func TestCheckNameHugeNameIsBounded(t *testing.T) {
	for _, name := range []string{strings.Repeat("a", 1<<20), strings.Repeat("é", 1<<19) + "x", "bad name " + strings.Repeat("b", 1<<20)} {
		r := &provider.Report{Provider: "Test"}
		provider.CheckName(r, name, 64, provider.Word, nil, "^[a-zA-Z0-9_-]{1,64}$")
		problems, err := r.Result()
		require.Error(t, err)
		require.Len(t, problems, 1)
		assert.LessOrEqual(t, len(problems[0].Tool), provider.MaxShownName+len("…"))
		assert.True(t, strings.HasPrefix(name, strings.TrimSuffix(problems[0].Tool, "…")), "the name's start")
		assert.Contains(t, err.Error(), "characters long, at most 64 are allowed")
		assert.Less(t, len(err.Error()), 1000, "the message is bounded: %d bytes", len(err.Error()))
	}
	r := &provider.Report{Provider: "Test"}
	provider.CheckName(r, "ok_name", 64, provider.Word, nil, "rule")
	problems, err := r.Result()
	assert.NoError(t, err)
	assert.Empty(t, problems)
}

// Walk gives bounded paths, whatever the keys: a schema of megabyte
// keys nested under one another costs no copy of them per subschema, and
// the problems its paths make are bounded too.
func TestWalkHugeKeysAreBounded(t *testing.T) {
	key := strings.Repeat("k", 100<<10)
	var b strings.Builder
	for range 8 {
		b.WriteString(`{"properties":{"` + key + `":`)
	}
	b.WriteString(`{"properties":{`)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"p` + strconv.Itoa(i) + `":{}`)
	}
	b.WriteString(`}}` + strings.Repeat("}}", 8))
	var f provider.Findings
	v, ok := provider.ParseBounded(json.RawMessage(b.String()), &f)
	require.True(t, ok)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	longest, visited := 0, 0
	provider.Walk(v, &f, func(_ *provider.Object, path string) {
		visited++
		longest = max(longest, len(path))
		f.Problem(path, "problem at "+path, "")
	})
	runtime.ReadMemStats(&after)
	assert.Equal(t, 1+8+2000, visited)
	assert.LessOrEqual(t, longest, provider.MaxShownPath)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(20<<20), "no key copied per subschema (it was 5 GB: each path copied every key above it)")

	r := &provider.Report{Provider: "Test"}
	r.Schema("deep", &f)
	problems, err := r.Result()
	require.Error(t, err)
	for _, p := range problems {
		assert.LessOrEqual(t, len(p.Path), len("/parameters")+provider.MaxShownPath)
		assert.LessOrEqual(t, len(p.Problem), 1024+len("…"))
	}
	var pe *toolset.PreflightError
	require.ErrorAs(t, err, &pe)
	assert.Less(t, len(err.Error()), 500*2*1100, "every line bounded")
	// Short paths are whole JSON Pointers.
	assert.Equal(t, "/parameters", problems[0].Path)
}
