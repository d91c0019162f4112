package skill_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/gotoolset/toolset/toolpkg/skill"
)

// greetScript is a packaged tool, a real executable: --schema prints
// schema; a call writes a greeting into result_file.
func greetScript(schema string) string {
	return `#!/bin/sh
if [ "$1" = "--schema" ]; then
cat <<'SCHEMA'
` + schema + `
SCHEMA
exit 0
fi
result=$(sed -n 's/.*"result_file":"\([^"]*\)".*/\1/p' "$1")
printf '{"result":{"status":"success","message":"hello from the skill","data":null,"data_objects":[]},"error":""}' > "$result"
`
}

const greetSchema = `{"tools":{"greet":{"description":"Say hello.","parameters":{"type":"object","properties":{}}}}}`

func packagedFS(schema string) fstest.MapFS {
	fsys := pdfFS()
	fsys["tools/manifest.yaml"] = &fstest.MapFile{Data: []byte("version: 1\ntools:\n  greet:\n    executable: greet.sh\n    timeout_seconds: 10\n")}
	fsys["tools/greet.sh"] = &fstest.MapFile{Data: []byte(greetScript(schema)), Mode: 0o755}
	return fsys
}

func openStore(t *testing.T) *toolpkg.Store {
	t.Helper()
	store, err := toolpkg.Open(t.TempDir(), &toolpkg.Options{Sandbox: toolpkg.ModeDirect})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	return store
}

// TestInstall checks a skill's bundled tools end to end: validated as a
// package, discovered by a store, and called as <skill>__<tool> once the
// skill is loaded.
func TestInstall(t *testing.T) {
	ctx := context.Background()
	sk, err := skill.FromFS(packagedFS(greetSchema), nil)
	require.NoError(t, err)
	require.True(t, sk.HasPackage())
	assert.Equal(t, "greet.sh", sk.Manifest().Executables[0].Path)

	store := openStore(t)
	sk, info, err := skill.Install(ctx, store, sk, toolpkg.Config{})
	require.NoError(t, err)
	assert.Equal(t, toolpkg.StatusReady, info.Status)

	skills, err := skill.NewToolset(sk)
	require.NoError(t, err)
	run := toolset.NewRun(t.Name())
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", skills)
	require.NoError(t, err)
	text, err := call(t, turn, tools, "load_skill", `{"name":"pdf-forms"}`)
	require.NoError(t, err)
	assert.Contains(t, text, "Tools of the skill, available from your next step: pdf-forms__greet\n")

	turn = run.Turn(ctx)
	tools, err = toolset.BuildTools(turn, "a", skills)
	require.NoError(t, err)
	text, err = call(t, turn, tools, "pdf-forms__greet", `{}`)
	require.NoError(t, err)
	assert.Equal(t, "hello from the skill", text)
}

// TestInstallDiscoveryFails checks a bundled tool whose discovery fails:
// Install says why, and a skill given the store's toolset all the same
// cannot be loaded, with a message the model reads.
func TestInstallDiscoveryFails(t *testing.T) {
	ctx := context.Background()
	sk, err := skill.FromFS(packagedFS(`{"tools":{"greet":{"description":""}}}`), nil)
	require.NoError(t, err)
	store := openStore(t)
	_, info, err := skill.Install(ctx, store, sk, toolpkg.Config{})
	require.Error(t, err)
	assert.Equal(t, toolpkg.StatusFailed, info.Status)
	assert.Contains(t, err.Error(), "description")

	skills, err := skill.NewToolset(sk.WithPackage(store, toolpkg.Config{}))
	require.NoError(t, err)
	run := toolset.NewRun(t.Name())
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", skills)
	require.NoError(t, err)
	_, err = call(t, turn, tools, "load_skill", `{"name":"pdf-forms"}`)
	msg, forModel := toolset.ErrorText(err)
	require.True(t, forModel, "%v", err)
	assert.Contains(t, msg, `skill "pdf-forms" cannot be loaded now`)
}

// TestBundledToolsHostile checks that tools/ is validated as a package:
// its manifest's problems and a missing executable are the skill's.
func TestBundledToolsHostile(t *testing.T) {
	fsys := pdfFS()
	fsys["tools/manifest.yaml"] = &fstest.MapFile{Data: []byte("version: 2\ntools:\n  greet:\n    executable: missing.sh\n    sandbox_profile: root\n")}
	fsys["tools/.venv/bin/python"] = &fstest.MapFile{Data: []byte("x")}
	probs := problems(t, mustFail(skill.FromFS(fsys, nil)))
	joined := strings.Join(probs, "\n")
	for _, want := range []string{`"tools/manifest.yaml": version: unsupported version 2`, `sandbox_profile`, `virtual environment`} {
		assert.Contains(t, joined, want)
	}
	fsys = pdfFS()
	fsys["tools/manifest.yaml"] = &fstest.MapFile{Data: []byte("version: 1\ntools:\n  greet:\n    executable: missing.sh\n")}
	probs = problems(t, mustFail(skill.FromFS(fsys, nil)))
	assert.Equal(t, []string{`"tools/missing.sh": missing: the executable of tools.greet (looked for "missing.sh", "python/bin/missing.sh")`}, probs)

	none, err := skill.FromFS(pdfFS(), nil)
	require.NoError(t, err)
	_, _, err = skill.Install(context.Background(), openStore(t), none, toolpkg.Config{})
	assert.True(t, errors.Is(err, skill.ErrNoPackage), "%v", err)
}
