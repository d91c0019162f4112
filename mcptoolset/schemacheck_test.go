package mcptoolset_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The schemas real servers list, from each common generator, pass the
// core's reference rule ($ref fragments, known drafts, http(s) $id) and
// validate arguments.
func TestServerSchemasInTheWildAreAccepted(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	files, err := filepath.Glob("testdata/servers/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			schema, err := os.ReadFile(f)
			require.NoError(t, err)
			ts := mcptoolset.NewInMemory("wild", listing(&mcp.Tool{Name: "wild", InputSchema: json.RawMessage(schema)}),
				mcptoolset.WithFailOnInvalidTools())
			defer ts.Close()
			tools, err := toolset.BuildTools(ctx, "agent", ts)
			require.NoError(t, err)
			require.Contains(t, tools.Names(), "wild")
			_, err = tools.Execute(ctx, toolset.ToolCall{Name: "wild", Args: json.RawMessage(`{"n":0}`)})
			var ae *toolset.ArgumentError
			require.ErrorAs(t, err, &ae, "validated against the schema")
			assert.Contains(t, err.Error(), `"n": must be at least 1`)
		})
	}
}

// A schema nested deeper than the listing's limit is refused before the
// core reads it.
func TestSchemaDeeperThanTheLimitIsRefused(t *testing.T) {
	checkLeaks(t)
	deep := `{"type":"object","not":` + strings.Repeat(`{"not":`, 9) + `{}` + strings.Repeat(`}`, 10) // 11 levels
	for depth, ok := range map[int]bool{10: false, 11: true} {
		ts := mcptoolset.NewInMemory("deep", listing(&mcp.Tool{Name: "deep", InputSchema: json.RawMessage(deep)}),
			mcptoolset.WithListLimits(mcptoolset.ListLimits{MaxSchemaDepth: depth}), mcptoolset.WithFailOnInvalidTools(),
			mcptoolset.WithLogger(discard()))
		_, err := ts.GetTools(context.Background())
		if ok {
			assert.NoError(t, err, depth)
		} else {
			require.Error(t, err, depth)
			assert.Contains(t, err.Error(), "the schema is nested deeper than 10")
		}
		ts.Close()
	}
}
