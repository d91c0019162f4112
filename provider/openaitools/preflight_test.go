package openaitools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
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

func problemPaths(problems []toolset.PreflightProblem) []string {
	var out []string
	for _, p := range problems {
		if !p.Lowered {
			out = append(out, p.Path)
		}
	}
	return out
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		plain        []string // problems without strict mode
		strict       []string // and with it
	}{
		{name: "github", schema: mcpSchema(t, "github_create_issue.json")},
		{name: "filesystem", schema: mcpSchema(t, "filesystem_edit_file.json")},
		{name: "playwright", schema: mcpSchema(t, "playwright_browser_click.json")},
		{name: "fetch", schema: mcpSchema(t, "fetch_fetch.json"),
			strict: []string{"/parameters/properties/headers/anyOf/0/additionalProperties"}},
		{name: "gemini_refused", schema: mcpSchema(t, "refused.json"),
			strict: []string{"/parameters/properties/shape/allOf"}},
		{name: "no_type", schema: `{"properties":{"a":{"type":"string"}}}`,
			plain: []string{"/parameters"}, strict: []string{"/parameters"}},
		{name: "root_union", schema: `{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}],"properties":{"a":{},"b":{}}}`,
			plain: []string{"/parameters/oneOf"}, strict: []string{"/parameters/oneOf"}},
		{name: "root_array", schema: `{"type":"array"}`,
			plain: []string{"/parameters/type"}, strict: []string{"/parameters/type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := build(t, rawTool(t, tc.name, tc.schema))
			for _, mode := range []struct {
				opts []openaitools.Option
				want []string
			}{{nil, tc.plain}, {[]openaitools.Option{openaitools.WithStrict()}, tc.strict}} {
				problems, err := openaitools.Check(list, mode.opts...)
				assert.Equal(t, mode.want, problemPaths(problems))
				opts := append([]openaitools.Option{openaitools.WithPreflight()}, mode.opts...)
				chat, cerr := openaitools.ChatTools(list, opts...)
				resp, rerr := openaitools.ResponseTools(list, opts...)
				if len(mode.want) == 0 {
					require.NoError(t, err)
					require.NoError(t, cerr)
					require.NoError(t, rerr)
					assert.Len(t, chat, 1)
					assert.Len(t, resp, 1)
					continue
				}
				var pe *toolset.PreflightError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "OpenAI", pe.Provider)
				for _, p := range pe.Problems {
					assert.Equal(t, tc.name, p.Tool)
					assert.NotEmpty(t, p.Problem)
					assert.NotEmpty(t, p.Fix)
				}
				require.ErrorAs(t, cerr, &pe)
				require.ErrorAs(t, rerr, &pe)
			}
		})
	}
}

// TestCheckStrictAgrees checks that the preflight in strict mode refuses
// what the strict conversion refuses, naming the same place, for every
// tool at once where the conversion joins one error per tool.
func TestCheckStrictAgrees(t *testing.T) {
	list := build(t,
		rawTool(t, "fetch", mcpSchema(t, "fetch_fetch.json")),
		rawTool(t, "ok", mcpSchema(t, "playwright_browser_click.json")),
		rawTool(t, "refused", mcpSchema(t, "refused.json")),
	)
	_, convErr := openaitools.ChatTools(list, openaitools.WithStrict())
	require.Error(t, convErr)
	_, err := openaitools.Check(list, openaitools.WithStrict())
	var pe *toolset.PreflightError
	require.ErrorAs(t, err, &pe)
	require.Len(t, pe.Problems, 2)
	for _, p := range pe.Problems {
		assert.Contains(t, convErr.Error(), p.Tool)
		assert.Contains(t, convErr.Error(), strings.TrimPrefix(strings.TrimSuffix(p.Path, "/"+lastToken(p.Path)), "/parameters"))
	}
}

func lastToken(path string) string { return path[strings.LastIndex(path, "/")+1:] }

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
	list := build(t, toolset.NewTool("tricky", "Tricky types.", func(context.Context, Args) (string, error) { return "", nil }))
	problems, err := openaitools.Check(list)
	require.NoError(t, err)
	assert.Empty(t, problems)

	// A map is a free-form object, which strict mode cannot express.
	problems, err = openaitools.Check(list, openaitools.WithStrict())
	require.Error(t, err)
	assert.Equal(t, []string{"/parameters/properties/counts/additionalProperties"}, problemPaths(problems))
}

func TestCheckHostileSchemas(t *testing.T) {
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 60) + `{"type":"string"}` + strings.Repeat(`}}`, 60)
	huge := `{"type":"object","description":"` + strings.Repeat("words ", 200000) + `"}`
	for name, doc := range map[string]string{"deep": deep, "huge": huge} {
		t.Run(name, func(t *testing.T) {
			list := build(t, rawTool(t, name, doc))
			start := time.Now()
			_, err := openaitools.Check(list, openaitools.WithStrict())
			assert.Less(t, time.Since(start), 5*time.Second)
			var pe *toolset.PreflightError
			require.ErrorAs(t, err, &pe)
			require.Len(t, pe.Problems, 1)
			assert.Equal(t, "/parameters", pe.Problems[0].Path)
		})
	}
}
