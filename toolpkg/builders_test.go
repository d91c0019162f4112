package toolpkg

import (
	"context"
	"slices"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// builder is the method set every pointer toolset type of the module has.
type builder interface {
	toolset.Toolset
	Prefixed(prefix string, opts ...toolset.PrefixOption) *toolset.Prefixed
	Renamed(names map[string]string) *toolset.Renamed
	Filtered(pred toolset.Predicate) *toolset.Filtered
	Prepared(fn toolset.PrepareFunc) *toolset.Prepared
	CombinedWith(others ...toolset.Toolset) *toolset.Combined
}

var _ builder = (*Toolset)(nil)

func TestBuildersChainOnAPackagedToolset(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := readyToolset(t, s, "demo", nil)
	// keep shows only the named tools, so that each case is checked on the
	// builder applied to ts itself.
	keep := func(names ...string) toolset.Predicate {
		return func(_ context.Context, tool toolset.Tool) (bool, error) {
			return slices.Contains(names, tool.Name), nil
		}
	}
	reverse := func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
		out := slices.Clone(tools)
		slices.Reverse(out)
		return out, nil
	}
	other := toolset.NewFunction(toolset.NewTool("other", "Another tool.", func(context.Context, struct{}) (string, error) { return "", nil }))

	cases := []struct {
		name string
		ts   toolset.Toolset
		want []string
	}{
		{"Prefixed", ts.Prefixed("x").Filtered(keep("x_demo__echo")), []string{"x_demo__echo"}},
		{"Renamed", ts.Renamed(map[string]string{"demo__echo": "echo"}).Filtered(keep("echo")), []string{"echo"}},
		{"Filtered", ts.Filtered(keep("demo__echo")), []string{"demo__echo"}},
		{"Prepared", ts.Prepared(reverse).Filtered(keep("demo__echo", "demo__fs")), []string{"demo__fs", "demo__echo"}},
		{"CombinedWith", ts.CombinedWith(other).Filtered(keep("demo__echo", "other")), []string{"demo__echo", "other"}},
	}
	run := toolset.NewRun("")
	defer run.End()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tools, err := toolset.BuildTools(run.Turn(context.Background()), "a", c.ts)
			require.NoError(t, err)
			assert.Equal(t, c.want, tools.Names())
		})
	}
}
