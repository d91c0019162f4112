package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotoolset/toolset/toolpkg"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun builds the toolset command, packages src/ with it, as a user
// would, and runs the tool in process and from the package.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the toolset command and a package: not in -short")
	}
	tmp := t.TempDir()
	cli := filepath.Join(tmp, "toolset")
	// Without a symbol table and DWARF, which nothing here reads: the link
	// takes about half the time.
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", cli, "../../cmd/toolset")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	zip := filepath.Join(tmp, "text.zip")
	pack := exec.Command(cli, "package", "src", "-o", zip, "--dist", filepath.Join(tmp, "dist"))
	out, err = pack.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("%s", out)

	var got strings.Builder
	require.NoError(t, run(context.Background(), zip, &got))
	t.Log(got.String())
	lines := strings.Split(strings.TrimSpace(got.String()), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, `in process: {"words":9,"longest":"quick"}`, lines[0])
	assert.Regexp(t, `^packaged \(sandbox \S+\): \{"words":9,"longest":"quick"\}$`, lines[1])
}

// TestRunNotAPackage: a file that is no package is refused before
// anything of it runs.
func TestRunNotAPackage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.zip")
	require.NoError(t, os.WriteFile(bad, []byte("#!/bin/sh\necho not a zip\n"), 0o755))
	var got strings.Builder
	err := run(context.Background(), bad, &got)
	var refused *toolpkg.ValidationError
	require.ErrorAs(t, err, &refused)
	assert.Empty(t, got.String())
}
