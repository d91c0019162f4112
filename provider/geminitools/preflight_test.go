package geminitools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/geminitools"
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

// mcpSchema reads a schema from testdata/mcp.
func mcpSchema(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "mcp", file))
	require.NoError(t, err)
	return string(b)
}

func TestDebugPreflight(t *testing.T) {
	entries, _ := os.ReadDir(filepath.Join("testdata", "mcp"))
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".json")
		list := build(t, rawTool(t, name, mcpSchema(t, e.Name())))
		problems, err := geminitools.Check(list)
		t.Logf("%s: err=%v", name, err)
		for _, p := range problems {
			t.Logf("   %v lowered=%v", p, p.Lowered)
		}
		decls, err := geminitools.Tools(list, geminitools.WithPreflight())
		if err == nil {
			t.Logf("   => %s", decls[0].FunctionDeclarations[0].ParametersJsonSchema)
		}
	}
}
