package toolpkg_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotoolset/toolset/toolpkg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Diagnose says which sandbox mode tools run in here and why, and which
// interpreter Python tools run with.
func TestDiagnoseSaysTheSandboxAndThePython(t *testing.T) {
	d := toolpkg.Diagnose(nil)
	require.NoError(t, d.SandboxErr)
	assert.NotEmpty(t, d.Sandbox)
	assert.NotEmpty(t, d.SandboxReason, "the automatic choice says why")
	if _, err := exec.LookPath("python3"); err != nil {
		require.Error(t, d.PythonErr)
		return
	}
	require.NoError(t, d.PythonErr)
	assert.True(t, filepath.IsAbs(d.Python), d.Python)

	_, err := exec.LookPath("prlimit")
	if err == nil {
		d = toolpkg.Diagnose(&toolpkg.Options{Sandbox: toolpkg.ModePrlimit})
		require.NoError(t, d.SandboxErr)
		assert.Equal(t, toolpkg.ModePrlimit, d.Sandbox)
		assert.Empty(t, d.SandboxReason, "a mode asked for needs no reason")
		assert.NotEmpty(t, d.Gaps, "prlimit says what it cannot enforce")
	}
}

// TOOLSET_PYTHON names the interpreter, before SAM_STR_PYTHON; a named
// interpreter that cannot be used is an error that says where the name
// came from, never replaced by another.
func TestPythonEnvironmentVariables(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-python")
	t.Setenv("SAM_STR_PYTHON", "/usr/bin/python3")
	t.Setenv(toolpkg.PythonEnv, missing)
	d := toolpkg.Diagnose(&toolpkg.Options{Sandbox: toolpkg.ModeDirect})
	assert.Equal(t, "$TOOLSET_PYTHON", d.PythonFrom)
	require.Error(t, d.PythonErr)
	assert.Contains(t, d.PythonErr.Error(), missing)
	assert.Empty(t, d.Python)

	t.Setenv(toolpkg.PythonEnv, "")
	d = toolpkg.Diagnose(&toolpkg.Options{Sandbox: toolpkg.ModeDirect})
	assert.Equal(t, "$SAM_STR_PYTHON", d.PythonFrom)

	d = toolpkg.Diagnose(&toolpkg.Options{Sandbox: toolpkg.ModeDirect, Python: missing})
	assert.Equal(t, "Options.Python", d.PythonFrom)
	require.Error(t, d.PythonErr)
}

// On a root host whose python3 on PATH is closed to the user tools run as
// (a per-user Python of root's), the system interpreter is used, and the
// note says so.
func TestPythonOutOfTheToolUsersReachFallsBackToTheSystemOne(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: tools run as another user only under root")
	}
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit not installed")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("python3 not installed")
	}
	private := filepath.Join(t.TempDir(), "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	require.NoError(t, os.Symlink("/usr/bin/python3", filepath.Join(private, "python3")))
	t.Setenv("PATH", private+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(toolpkg.PythonEnv, "")
	t.Setenv("SAM_STR_PYTHON", "")

	d := toolpkg.Diagnose(&toolpkg.Options{Sandbox: toolpkg.ModePrlimit})
	require.NoError(t, d.PythonErr)
	assert.Equal(t, "/usr/bin/python3", d.Python)
	assert.Contains(t, d.PythonNote, "out of reach of uid")
	assert.True(t, strings.Contains(d.PythonNote, private), d.PythonNote)

	// Named, the interpreter is not replaced.
	d = toolpkg.Diagnose(&toolpkg.Options{Sandbox: toolpkg.ModePrlimit, Python: filepath.Join(private, "python3")})
	require.Error(t, d.PythonErr)
	assert.Contains(t, d.PythonErr.Error(), "out of reach of uid")
}
