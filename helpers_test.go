package toolset_test

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/require"
)

// echoTool returns a tool named name whose handler returns its name, so a
// test can tell which tool ran.
func echoTool(name string) toolset.Tool {
	return toolset.NewTool(name, "The "+name+" tool.", func(context.Context, struct{}) (string, error) {
		return name, nil
	})
}

func echoTools(names ...string) []toolset.Tool {
	out := make([]toolset.Tool, len(names))
	for i, n := range names {
		out[i] = echoTool(n)
	}
	return out
}

// names returns the tool names of ts for this turn, failing the test on an
// error.
func names(t *testing.T, ctx context.Context, ts toolset.Toolset) []string {
	t.Helper()
	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	out := make([]string, len(tools))
	for i, tool := range tools {
		out[i] = tool.Name
	}
	return out
}

// withRole returns a context whose run context carries role.
func withRole(role string) context.Context {
	return toolset.NewContext(context.Background(), &toolset.RunContext{
		RunID: "run-" + role, Agent: "test", Values: map[string]any{"role": role},
	})
}

// adminsOnly shows tools whose metadata says audience=admin only to admins.
func adminsOnly(ctx context.Context, t toolset.Tool) (bool, error) {
	return t.Metadata["audience"] != "admin" || toolset.FromContext(ctx).String("role") == "admin", nil
}

// listToolset is a user-defined toolset with only GetTools.
type listToolset struct {
	tools []toolset.Tool
	err   error
}

func (l listToolset) GetTools(context.Context) ([]toolset.Tool, error) {
	return append([]toolset.Tool(nil), l.tools...), l.err
}

// jsonschemaDoc holds a schema decoded from JSON in a test.
type jsonschemaDoc struct{ Schema jsonschema.Schema }
