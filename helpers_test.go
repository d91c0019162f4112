package toolset_test

import (
	"context"
	"fmt"
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

// Role and Tenant are the caller's role and tenant, read by the predicates
// of these tests.
var (
	Role   = toolset.NewKey[string]("role")
	Tenant = toolset.NewKey[string]("tenant")
)

// withRole returns the context of the first turn of a new run whose
// caller has role, with ID "run-"+role.
func withRole(t testing.TB, role string, opts ...toolset.RunOption) context.Context {
	t.Helper()
	return newRun(t, "run-"+role, append([]toolset.RunOption{toolset.WithValue(Role, role)}, opts...)...)
}

// testRun returns a new run with ID id, ended when the test ends. A test
// that makes several runs of one id gets "id#2", "id#3", ... for the later
// ones.
func testRun(t testing.TB, id string, opts ...toolset.RunOption) *toolset.RunContext {
	t.Helper()
	run := toolset.NewRun(id, opts...)
	for n := 2; run.Err() != nil; n++ {
		run = toolset.NewRun(fmt.Sprintf("%s#%d", id, n), opts...)
	}
	t.Cleanup(run.End)
	return run
}

// nextTurn begins the next turn of the run ctx carries, as an agent's loop
// does.
func nextTurn(ctx context.Context) context.Context { return toolset.FromContext(ctx).Turn(ctx) }

// newRun returns the context of the first turn of a new run with ID id
// (see testRun).
func newRun(t testing.TB, id string, opts ...toolset.RunOption) context.Context {
	t.Helper()
	return testRun(t, id, opts...).Turn(context.Background())
}

// adminsOnly shows tools whose metadata says audience=admin only to admins.
func adminsOnly(ctx context.Context, t toolset.Tool) (bool, error) {
	return t.Metadata["audience"] != "admin" || Role.Get(ctx) == "admin", nil
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
