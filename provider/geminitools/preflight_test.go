package geminitools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/geminitools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"
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

// paths returns the paths of the problems (lowered false) or of the notes.
func paths(problems []toolset.PreflightProblem, lowered bool) []string {
	var out []string
	for _, p := range problems {
		if p.Lowered == lowered {
			out = append(out, p.Path)
		}
	}
	return out
}

func TestCheckMCPSchemas(t *testing.T) {
	for _, tc := range []struct {
		file     string
		problems []string
		notes    []string
	}{
		{file: "github_create_issue.json", notes: []string{
			"/parameters/$schema",
			"/parameters/properties/body/type",
			"/parameters/properties/assignees/items/$ref",
			"/parameters/properties/milestone/properties/state/const",
			"/parameters/properties/milestone/$ref",
			"/parameters/$defs",
		}},
		{file: "filesystem_edit_file.json", notes: []string{"/parameters/$schema"}},
		{file: "playwright_browser_click.json", notes: []string{"/parameters/$schema"}},
		{file: "fetch_fetch.json", notes: []string{"/parameters/properties/url/format"}},
		{file: "refused.json", problems: []string{
			"/parameters/properties/target/oneOf",
			"/parameters/properties/force/const",
			"/parameters/properties/shape/allOf",
			"/parameters/properties/tree/properties/child/$ref",
			"/parameters/properties/when/if",
			"/parameters/properties/when/then",
		}, notes: []string{
			"/parameters/properties/target/oneOf/1/format",
			"/parameters/properties/tree/$ref",
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			name := strings.TrimSuffix(tc.file, ".json")
			list := build(t, rawTool(t, name, mcpSchema(t, tc.file)))
			problems, err := geminitools.Check(list)
			assert.Equal(t, tc.problems, paths(problems, false))
			assert.Equal(t, tc.notes, paths(problems, true))
			for _, p := range problems {
				assert.Equal(t, name, p.Tool)
				assert.NotEmpty(t, p.Problem)
				if !p.Lowered {
					assert.NotEmpty(t, p.Fix, p.Path)
				}
			}
			decls, terr := geminitools.Tools(list, geminitools.WithPreflight())
			if len(tc.problems) > 0 {
				var pe *toolset.PreflightError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "Gemini", pe.Provider)
				assert.Len(t, pe.Problems, len(tc.problems))
				require.ErrorAs(t, terr, &pe)
				assert.Nil(t, decls)
				return
			}
			require.NoError(t, err)
			require.NoError(t, terr)
			low := lowered(t, decls)
			for _, kw := range []string{`"$ref"`, `"$defs"`, `"$schema"`, `"const"`, `"type":[`} {
				assert.NotContains(t, string(low), kw)
			}
		})
	}
}

// lowered returns the schema of the one declaration of decls.
func lowered(t testing.TB, decls []*genai.Tool) json.RawMessage {
	t.Helper()
	require.Len(t, decls, 1)
	require.Len(t, decls[0].FunctionDeclarations, 1)
	raw, ok := decls[0].FunctionDeclarations[0].ParametersJsonSchema.(json.RawMessage)
	require.True(t, ok, "%T", decls[0].FunctionDeclarations[0].ParametersJsonSchema)
	return raw
}

// accepts reports whether the core's validator takes args for a tool with
// the parameter schema doc.
func accepts(t *testing.T, doc, args string) bool {
	t.Helper()
	list := build(t, rawTool(t, "v", doc))
	_, err := list.Execute(t.Context(), toolset.ToolCall{ID: "1", Name: "v", Args: json.RawMessage(args)})
	var ae *toolset.ArgumentError
	if errors.As(err, &ae) {
		return false
	}
	require.NoError(t, err)
	return true
}

// TestPreflightLowersLosslessly checks each rewrite with the core's
// validator: every argument the original schema takes, the lowered one
// takes, and every argument it refuses, the lowered one refuses.
func TestPreflightLowersLosslessly(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		args         []string
	}{
		{"github", mcpSchema(t, "github_create_issue.json"), []string{
			`{"owner":"o","repo":"r","title":"t"}`,
			`{"owner":"o","repo":"r","title":"t","body":null,"labels":null}`,
			`{"owner":"o","repo":"r","title":"t","body":5}`,
			`{"owner":"o","repo":"r","title":""}`,
			`{"owner":"o","repo":"r","title":"t","milestone":{"number":1,"state":"open"}}`,
			`{"owner":"o","repo":"r","title":"t","milestone":{"number":1,"state":"closed"}}`,
			`{"owner":"o","repo":"r","title":"t","milestone":{"number":0}}`,
			`{"owner":"o","repo":"r","title":"t","assignees":["octo-cat"]}`,
			`{"owner":"o","repo":"r","title":"t","assignees":["not a login"]}`,
			`{"owner":"o","repo":"r","title":"t","type":"epic"}`,
		}},
		{"nullable enum", `{"type":"object","properties":{"p":{"type":["string","null"],"enum":["a",null]}}}`, []string{
			`{"p":"a"}`, `{"p":null}`, `{"p":"b"}`, `{"p":1}`, `{}`,
		}},
		{"type list", `{"type":"object","properties":{"v":{"type":["integer","string"],"minimum":3,"minLength":2}}}`, []string{
			`{"v":5}`, `{"v":2}`, `{"v":"ab"}`, `{"v":"a"}`, `{"v":2.5}`, `{"v":true}`,
		}},
		{"allOf", `{"type":"object","allOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"integer"}}}]}`, []string{
			`{"a":"x"}`, `{"b":1}`, `{"a":"x","b":"s"}`, `{"a":"x","b":2}`,
		}},
		{"ref siblings", `{"type":"object","properties":{"m":{"$ref":"#/$defs/M","description":"d","maxLength":3}},"$defs":{"M":{"type":"string"}}}`, []string{
			`{"m":"abc"}`, `{"m":"abcd"}`, `{"m":1}`,
		}},
		{"const", `{"type":"object","properties":{"n":{"const":null},"s":{"const":"x"},"k":{"const":2}}}`, []string{
			`{"n":null}`, `{"n":1}`, `{"s":"x"}`, `{"s":"y"}`, `{"k":2}`, `{"k":2.0}`, `{"k":3}`,
		}},
		{"oneOf by type", `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`, []string{
			`{"v":"a"}`, `{"v":1}`, `{"v":1.5}`,
		}},
		{"oneOf by tag", `{"type":"object","properties":{"shape":{"oneOf":[
			{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number"}},"required":["kind","r"]},
			{"type":"object","properties":{"kind":{"const":"square"},"side":{"type":"number"}},"required":["kind","side"]}]}}}`, []string{
			`{"shape":{"kind":"circle","r":1}}`, `{"shape":{"kind":"square","side":2}}`, `{"shape":{"kind":"circle","side":2}}`,
		}},
		{"recursive optional", `{"type":"object","properties":{"tree":{"$ref":"#/$defs/Node"}},"$defs":{"Node":{"type":"object","properties":{"name":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["name"]}}}`, []string{
			`{"tree":{"name":"a","kids":[{"name":"b","kids":[{"name":"c"}]}]}}`, `{"tree":{"name":"a","kids":[{"kids":[]}]}}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decls, err := geminitools.Tools(build(t, rawTool(t, "v", tc.schema)), geminitools.WithPreflight())
			require.NoError(t, err)
			low := string(lowered(t, decls))
			t.Logf("lowered: %s", low)
			sawValid, sawInvalid := false, false
			for _, a := range tc.args {
				want := accepts(t, tc.schema, a)
				sawValid, sawInvalid = sawValid || want, sawInvalid || !want
				assert.Equal(t, want, accepts(t, low, a), "arguments %s", a)
			}
			assert.True(t, sawValid, "no valid arguments among the cases")
		})
	}
}

// TestCheckReflectedTypes runs Go argument types the core reflects,
// tricky ones included, through the preflight: all of them fit Gemini.
func TestCheckReflectedTypes(t *testing.T) {
	type Base struct {
		ID string `json:"id"`
	}
	type Args struct {
		Base
		Ptr    *int              `json:"ptr,omitempty"`
		Counts map[string]int    `json:"counts,omitempty"`
		When   time.Time         `json:"when"`
		Blob   []byte            `json:"blob,omitempty"`
		Tags   map[string]string `json:"tags"`
		Mode   string            `json:"mode" jsonschema:"enum=fast,enum=slow"`
	}
	tool := toolset.NewTool("tricky", "Tricky types.", func(context.Context, Args) (string, error) { return "", nil })
	require.NoError(t, tool.Err())
	problems, err := geminitools.Check(build(t, tool))
	require.NoError(t, err)
	assert.Empty(t, paths(problems, false))

	// A recursive type is refused by the core itself: a schema with a
	// cycle in it comes only from a raw tool, checked above.
	type Node struct {
		Kids []Node `json:"kids"`
	}
	require.Error(t, toolset.NewTool("tree", "", func(context.Context, Node) (string, error) { return "", nil }).Err())
}

func TestCheckNames(t *testing.T) {
	// BuildTools enforces ^[a-zA-Z0-9_-]{1,64}$, so only Gemini's own
	// rule about the first character can fail here.
	list := build(t, noop("ok_tool"), noop("9lives"), noop("-dash"), noop(strings.Repeat("b", 64)))
	problems, err := geminitools.Check(list)
	require.Error(t, err)
	var bad []string
	for _, p := range problems {
		assert.Equal(t, "/name", p.Path)
		bad = append(bad, p.Tool)
	}
	assert.Equal(t, []string{"9lives", "-dash"}, bad)
}

// TestPreflightReportsEveryTool checks that one error lists the problems
// of every tool, and that tools without problems are not named.
func TestPreflightReportsEveryTool(t *testing.T) {
	list := build(t,
		rawTool(t, "a", `{"type":"object","properties":{"x":{"not":{"type":"null"}}}}`),
		rawTool(t, "b", mcpSchema(t, "playwright_browser_click.json")),
		rawTool(t, "c", `{"type":"object","properties":{"y":{"enum":[true,false]},"z":{"patternProperties":{"^x":{}}}}}`),
	)
	_, err := geminitools.Tools(list, geminitools.WithPreflight())
	var pe *toolset.PreflightError
	require.ErrorAs(t, err, &pe)
	var where []string
	for _, p := range pe.Problems {
		where = append(where, p.Tool+" "+p.Path)
	}
	assert.Equal(t, []string{
		"a /parameters/properties/x/not",
		"c /parameters/properties/y/enum/0",
		"c /parameters/properties/z/patternProperties",
	}, where)
	assert.Contains(t, err.Error(), "2 tool(s), 3 problem(s)")
	assert.Contains(t, err.Error(), `"c" at /parameters/properties/y/enum/0`)

	// Without the option, the schemas are sent as they are.
	decls, err := geminitools.Tools(list)
	require.NoError(t, err)
	for i, tool := range list.Tools() {
		raw, err := tool.ParametersJSON()
		require.NoError(t, err)
		assert.Equal(t, raw, decls[0].FunctionDeclarations[i].ParametersJsonSchema)
	}
}

// TestCheckHostileSchemas checks that schemas built to cost are refused
// quickly, with a problem, rather than walked.
func TestCheckHostileSchemas(t *testing.T) {
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 60) + `{"type":"string"}` + strings.Repeat(`}}`, 60)

	// Past the preflight's byte bound, in one long description (the core
	// takes it: it compiles a description for nothing).
	huge := `{"type":"object","description":"` + strings.Repeat("words ", 200000) + `"}`

	// Each definition refers twice to the next: inlined, 2^40 copies.
	var bomb strings.Builder
	bomb.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{`)
	for i := range 40 {
		fmt.Fprintf(&bomb, `"d%d":{"type":"object","properties":{"l":{"$ref":"#/$defs/d%d"},"r":{"$ref":"#/$defs/d%d"}}},`, i, i+1, i+1)
	}
	bomb.WriteString(`"d40":{"type":"string"}}}`)

	for name, doc := range map[string]string{"deep": deep, "huge": huge, "bomb": bomb.String()} {
		t.Run(name, func(t *testing.T) {
			t0 := time.Now()
			list := build(t, rawTool(t, name, doc))
			t.Logf("built in %v", time.Since(t0))
			start := time.Now()
			problems, err := geminitools.Check(list)
			assert.Less(t, time.Since(start), 5*time.Second)
			var pe *toolset.PreflightError
			require.ErrorAs(t, err, &pe)
			require.Len(t, pe.Problems, 1)
			assert.Equal(t, name, pe.Problems[0].Tool)
			assert.LessOrEqual(t, len(problems), 500)
			t.Log(pe.Problems[0])
		})
	}
}

// TestPreflightRootRef checks a schema whose root is a reference to a
// recursive definition, as some generators write them: the definitions
// stay, for the reference that is kept.
func TestPreflightRootRef(t *testing.T) {
	doc := `{"$ref":"#/$defs/Args","$defs":{
		"Args":{"type":"object","properties":{"tree":{"$ref":"#/$defs/Node"}},"required":["tree"]},
		"Node":{"type":"object","properties":{"name":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["name"]}}}`
	decls, err := geminitools.Tools(build(t, rawTool(t, "v", doc)), geminitools.WithPreflight())
	require.NoError(t, err)
	low := string(lowered(t, decls))
	assert.Contains(t, low, `"$defs":{`)
	for _, a := range []string{`{"tree":{"name":"a","kids":[{"name":"b"}]}}`, `{"tree":{"kids":[]}}`, `{}`} {
		assert.Equal(t, accepts(t, doc, a), accepts(t, low, a), "arguments %s against %s", a, low)
	}
}
