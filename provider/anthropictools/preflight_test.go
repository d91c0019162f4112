package anthropictools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/anthropictools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawTool is a tool with the parameter schema doc, as an MCP server would
// send it.
func rawTool(t testing.TB, name, doc string) toolset.Tool {
	t.Helper()
	s, err := toolset.ParseSchema([]byte(doc))
	require.NoError(t, err)
	tool := toolset.NewRawTool(name, "A tool.", s, func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
	require.NoError(t, tool.Err())
	return tool
}

// mcpSchema reads a schema from testdata/mcp, where a few tools of real
// MCP servers are kept, as their servers describe them.
func mcpSchema(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "mcp", file))
	require.NoError(t, err)
	return string(b)
}

func paths(problems []toolset.PreflightProblem, lowered bool) []string {
	var out []string
	for _, p := range problems {
		if p.Lowered == lowered {
			out = append(out, p.Path)
		}
	}
	return out
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		problems     []string
		notes        []string
	}{
		{name: "github", schema: mcpSchema(t, "github_create_issue.json")},
		{name: "filesystem", schema: mcpSchema(t, "filesystem_edit_file.json")},
		{name: "playwright", schema: mcpSchema(t, "playwright_browser_click.json")},
		{name: "fetch", schema: mcpSchema(t, "fetch_fetch.json")},
		// What Gemini refuses (oneOf, const true, allOf, a required
		// cycle) Anthropic takes.
		{name: "gemini_refused", schema: mcpSchema(t, "refused.json")},
		{name: "draft04", schema: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{
			"n":{"type":"number","minimum":0,"exclusiveMinimum":true},
			"t":{"type":"array","items":[{"type":"string"},{"type":"integer"}]}}}`,
			problems: []string{"/parameters/properties/n/exclusiveMinimum", "/parameters/properties/t/items"}},
		{name: "root_union", schema: `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"string"}}}]}`,
			problems: []string{"/parameters/anyOf"}, notes: []string{"/parameters"}},
		{name: "root_string", schema: `{"type":"string"}`, problems: []string{"/parameters/type"}},
		{name: "no_type", schema: `{"properties":{"a":{"type":"string"}}}`, notes: []string{"/parameters"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := build(t, rawTool(t, tc.name, tc.schema))
			problems, err := anthropictools.Check(list)
			assert.Equal(t, tc.problems, paths(problems, false))
			assert.Equal(t, tc.notes, paths(problems, true))
			params, terr := anthropictools.Tools(list, anthropictools.WithPreflight())
			if len(tc.problems) > 0 {
				var pe *toolset.PreflightError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "Anthropic", pe.Provider)
				require.ErrorAs(t, terr, &pe)
				assert.Nil(t, params)
				for _, p := range pe.Problems {
					assert.Equal(t, tc.name, p.Tool)
					assert.NotEmpty(t, p.Fix)
				}
				return
			}
			require.NoError(t, err)
			require.NoError(t, terr)
			require.Len(t, params, 1)
			b, err := json.Marshal(params[0])
			require.NoError(t, err)
			var sent struct {
				InputSchema struct {
					Type string `json:"type"`
				} `json:"input_schema"`
			}
			require.NoError(t, json.Unmarshal(b, &sent))
			assert.Equal(t, "object", sent.InputSchema.Type, "the type the note promises")
		})
	}
}

func TestCheckNamesAndEveryTool(t *testing.T) {
	// BuildTools enforces Anthropic's own rule, ^[a-zA-Z0-9_-]{1,64}$,
	// so names pass here; schemas of two tools fail, both reported.
	list := build(t,
		rawTool(t, "a", `{"oneOf":[{"type":"object"},{"type":"object","properties":{"x":{}}}]}`),
		rawTool(t, strings.Repeat("n", 64), `{"type":"object"}`),
		rawTool(t, "c", `{"type":"array"}`),
	)
	_, err := anthropictools.Tools(list, anthropictools.WithPreflight())
	var pe *toolset.PreflightError
	require.ErrorAs(t, err, &pe)
	var where []string
	for _, p := range pe.Problems {
		where = append(where, p.Tool+" "+p.Path)
	}
	assert.Equal(t, []string{"a /parameters/oneOf", "c /parameters/type"}, where)
	assert.Contains(t, err.Error(), "Anthropic would refuse or weaken 2 tool(s), 2 problem(s)")
}

func TestCheckReflectedTypes(t *testing.T) {
	type Base struct {
		ID string `json:"id"`
	}
	type Args struct {
		Base
		Ptr    *int           `json:"ptr,omitempty"`
		Counts map[string]int `json:"counts,omitempty"`
		When   time.Time      `json:"when"`
		Blob   []byte         `json:"blob,omitempty"`
	}
	tool := toolset.NewTool("tricky", "Tricky types.", func(context.Context, Args) (string, error) { return "", nil })
	problems, err := anthropictools.Check(build(t, tool))
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func TestCheckHostileSchemas(t *testing.T) {
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 60) + `{"type":"string"}` + strings.Repeat(`}}`, 60)
	huge := `{"type":"object","description":"` + strings.Repeat("words ", 200000) + `"}`
	var wide strings.Builder
	wide.WriteString(`{"type":"object","properties":{`)
	// 2,000 problems in 4,001 objects, within what the core compiles.
	for i := range 2000 {
		if i > 0 {
			wide.WriteByte(',')
		}
		fmt.Fprintf(&wide, `"p%d":{"type":"array","items":[{"type":"string"}]}`, i)
	}
	wide.WriteString(`},"$schema":"http://json-schema.org/draft-07/schema#"}`)
	for name, tc := range map[string]struct {
		doc  string
		want int
	}{"deep": {deep, 1}, "huge": {huge, 1}, "many_problems": {wide.String(), 500}} {
		t.Run(name, func(t *testing.T) {
			list := build(t, rawTool(t, name, tc.doc))
			start := time.Now()
			_, err := anthropictools.Check(list)
			assert.Less(t, time.Since(start), 5*time.Second)
			var pe *toolset.PreflightError
			require.ErrorAs(t, err, &pe)
			assert.Len(t, pe.Problems, tc.want)
			if tc.want == 500 {
				assert.Equal(t, 1500, pe.Omitted)
				assert.True(t, strings.HasSuffix(err.Error(), "\n  - and 1500 more"))
			}
		})
	}
}
