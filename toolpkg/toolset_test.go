package toolpkg

import (
	"context"
	"errors"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildToolsWithALocalToolset(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	pkg := readyToolset(t, s, "demo", nil)
	local := toolset.NewFunction(toolset.NewTool("echo", "Local echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return "local " + in.Text, nil
	}))
	_, err := toolset.BuildTools(context.Background(), "a", local, toolset.NewFiltered(pkg, func(_ context.Context, t toolset.Tool) (bool, error) {
		return t.Name == "demo__echo", nil
	}))
	require.NoError(t, err)

	_, err = toolset.BuildTools(context.Background(), "a", local.Prefixed("demo_"), pkg)
	var nc *toolset.NameConflictError
	require.True(t, errors.As(err, &nc))
	assert.Contains(t, err.Error(), `"demo__echo" contributed by: Prefixed#0 "demo_", Toolset#1 "toolpkg:demo"`)
}

// TestNilToolsetIsAnError uses a nil *Toolset as a toolset: its methods and
// BuildTools report the nil instead of panicking.
func TestNilToolsetIsAnError(t *testing.T) {
	t.Parallel()
	var ts *Toolset
	assert.Equal(t, "", ts.Name())
	assert.Equal(t, "", ts.Label())
	_, err := ts.GetTools(context.Background())
	require.EqualError(t, err, "toolpkg: nil *Toolset")
	_, err = toolset.BuildTools(context.Background(), "a", ts)
	require.ErrorContains(t, err, "nil *Toolset")
	assert.NotContains(t, err.Error(), "panic")
}

// Arguments that give a key twice are refused before a process starts:
// the tool, in whatever language, might read the first value, which
// nobody validated or approved.
func TestRepeatedKeyIsRefusedBeforeTheToolRuns(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	pkg := readyToolset(t, s, "demo", nil)
	for _, args := range []string{`{"text":"hello","text":"$(rm -rf /)"}`, `{"text":"hello","\u0074ext":"x"}`} {
		_, err := callTool(context.Background(), t, pkg, "demo__echo", args)
		var ae *toolset.ArgumentError
		require.ErrorAs(t, err, &ae, args)
		assert.Equal(t, "text", ae.Problems[0].Field, args)
		msg, forModel := toolset.ErrorText(err)
		assert.True(t, forModel)
		assert.Contains(t, msg, "must be unique", args)
	}
}
