package toolpkg

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Go tool builds outside any workspace unless a go.work above it has
// its module: one that leaves the module out, or none, means GOWORK=off.
func TestGoToolBuildsInAWorkspaceOnlyIfItHasTheModule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	write("in/go.mod", "module example.com/in\n\ngo 1.26.0\n")
	write("out/go.mod", "module example.com/out\n\ngo 1.26.0\n")
	write("go.work", "go 1.26.0\n\nuse ./in\n")
	write("alone/go.mod", "module example.com/alone\n\ngo 1.26.0\n")
	env := append(os.Environ(), "GOWORK=", "GOFLAGS=")
	assert.Equal(t, "GOWORK="+filepath.Join(dir, "go.work"), goWork(context.Background(), goTool(), filepath.Join(dir, "in"), env))
	assert.Equal(t, "GOWORK=off", goWork(context.Background(), goTool(), filepath.Join(dir, "out"), env), "the workspace leaves the module out")
	require.NoError(t, os.Remove(filepath.Join(dir, "go.work")))
	assert.Equal(t, "GOWORK=off", goWork(context.Background(), goTool(), filepath.Join(dir, "alone"), env))
	assert.Equal(t, "GOWORK=off", goWork(context.Background(), goTool(), filepath.Join(dir, "missing"), env), "no such directory")
}
