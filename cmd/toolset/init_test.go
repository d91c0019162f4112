package main

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
)

// repoRoot is the checkout of the library these tests run in: what a Go
// scaffold builds against (--sdk-replace) until the library is
// published.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	return root
}

// scaffoldCall packages the scaffold at src with the CLI, checks the zip
// as the platform does at upload, discovers it in a store, and calls
// NAME__greet; it returns the result's text and the progress reported.
func scaffoldCall(t *testing.T, name, src string, config map[string]any, args string) (string, []string) {
	t.Helper()
	return scaffoldStore(t, name, src).call(t, config, args)
}

// scaffold is a packaged scaffold discovered in a store of its own.
type scaffold struct {
	name string
	st   *toolpkg.Store
}

// scaffoldStore packages the scaffold at src with the built CLI (see
// runBuilt), uploads it to a store of its own (which checks the zip as
// the platform does) and discovers it; the store is closed at the end of
// the test.
func scaffoldStore(t *testing.T, name, src string) scaffold {
	t.Helper()
	zipPath := filepath.Join(t.TempDir(), name+".zip")
	code, stdout, stderr := runBuilt(t, "package", src, "-o", zipPath)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "(build.sh)", "the scaffold's build.sh builds it")

	// The upload checks the zip as the platform does; its manifest is
	// read here without inflating the executable a second time.
	zr, err := zip.OpenReader(zipPath)
	require.NoError(t, err)
	defer zr.Close()
	mf, err := zr.Open(toolpkg.ManifestName)
	require.NoError(t, err)
	manifest, err := io.ReadAll(mf)
	mf.Close()
	require.NoError(t, err)
	m, err := toolpkg.ParseManifestStrict(manifest)
	require.NoError(t, err)
	require.Len(t, m.Executables, 1)

	st, err := toolpkg.Open(t.TempDir(), &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	info, err := st.UploadFile(context.Background(), name, zipPath)
	require.NoError(t, err)
	require.Equal(t, toolpkg.StatusReady, info.Status, "%v", info.Errors)
	require.Len(t, info.Tools, 1)
	assert.Equal(t, "greet", info.Tools[0].Name)
	require.Len(t, info.Tools[0].Config, 1)
	assert.Equal(t, "greeting", info.Tools[0].Config[0].Key)
	return scaffold{name: name, st: st}
}

// call calls NAME__greet of the scaffold with config; it returns the
// result's text and the progress reported.
func (sc scaffold) call(t *testing.T, config map[string]any, args string) (string, []string) {
	t.Helper()
	name, st := sc.name, sc.st
	var mu sync.Mutex
	var progress []string
	ctx := toolset.WithProgress(context.Background(), func(p toolset.Progress) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, p.Message)
	})
	tools, err := toolset.BuildTools(ctx, "scaffold-test", st.Toolset(name, config))
	require.NoError(t, err)
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: name + "__greet", Args: json.RawMessage(args)})
	require.NoError(t, err)
	text, err := toolset.ResultText(res)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	return text, append([]string(nil), progress...)
}

// assertScaffold checks the files toolset init wrote under dir.
func assertScaffold(t *testing.T, dir, name string, files ...string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(dir, "toolsets", name+".yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(doc), "kind: toolset\nname: "+name+"\n")
	assert.Contains(t, string(doc), "\nspec:\n")
	assert.Contains(t, string(doc), "\n  config:\n")
	src := filepath.Join(dir, "toolsets", name, "src")
	for _, f := range files {
		assert.FileExists(t, filepath.Join(src, filepath.FromSlash(f)))
	}
	fi, err := os.Stat(filepath.Join(src, "build.sh"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o755), fi.Mode().Perm(), "build.sh is executable")
	script, err := os.ReadFile(filepath.Join(src, "build.sh"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(script), "#!/usr/bin/env bash\n"), "a bash script")
	assert.Contains(t, string(script), "\nset -euo pipefail\n")
	man, err := os.ReadFile(filepath.Join(src, "manifest.yaml"))
	require.NoError(t, err)
	_, err = toolpkg.ParseManifest(man)
	require.NoError(t, err)
}

// toolset init --lang go scaffolds a tool on pkgtool that toolset
// package builds as it is, offline, into a package that is discovered
// and called.
func TestInitGoScaffoldBuildsAndRuns(t *testing.T) {
	// Nothing is fetched: the module cache and the scaffold's go.sum
	// hold all it needs.
	t.Setenv("GOPROXY", "off")
	dir := t.TempDir()
	code, stdout, stderr := runCLI("init", "weather-go", "--lang", "go", "--sdk-replace", repoRoot(t), dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "wrote "+filepath.Join(dir, "toolsets", "weather-go", "src", "main.go"))
	assertScaffold(t, dir, "weather-go", "main.go", "go.mod", "go.sum", "build.sh", "manifest.yaml")
	main, err := os.ReadFile(filepath.Join(dir, "toolsets", "weather-go", "src", "main.go"))
	require.NoError(t, err)
	assert.Contains(t, string(main), `"github.com/gotoolset/toolset/toolpkg/pkgtool"`)

	src := filepath.Join(dir, "toolsets", "weather-go", "src")
	// Packaged and discovered once, called with and without a greeting.
	sc := scaffoldStore(t, "weather-go", src)
	text, progress := sc.call(t, nil, `{"name": "Ada"}`)
	assert.Equal(t, "Hello, Ada!", text)
	assert.Contains(t, progress, "greeting Ada")
	text, _ = sc.call(t, map[string]any{"greeting": "Hi"}, `{"name": "Bo"}`)
	assert.Equal(t, "Hi, Bo!", text)

	// Without --sdk-replace, go.mod says what it needs.
	other := t.TempDir()
	code, _, stderr = runCLI("init", "later", "--lang", "go", other)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "--sdk-replace")
	gomod, err := os.ReadFile(filepath.Join(other, "toolsets", "later", "src", "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(gomod), "github.com/gotoolset/toolset/toolpkg => PATH/toolpkg")
	assert.NotContains(t, string(gomod), "\nreplace")
}

// toolset init --lang python scaffolds a tool on the small protocol
// module it ships, which toolset package builds as it is, offline.
func TestInitPythonScaffoldBuildsAndRuns(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip(skipPython)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed: the scaffold's build.sh is a bash script")
	}
	t.Setenv("PIP_NO_INDEX", "1")
	dir := t.TempDir()
	code, _, stderr := runCLI("init", "weather-py", "--lang", "python", dir)
	require.Equal(t, 0, code, stderr)
	assertScaffold(t, dir, "weather-py", "pyproject.toml", "build.sh", "manifest.yaml",
		"src/weather_py/__init__.py", "src/weather_py/tool.py", "src/weather_py/pkgproto.py")
	src := filepath.Join(dir, "toolsets", "weather-py", "src")
	// Packaged and discovered once, called with and without a greeting.
	sc := scaffoldStore(t, "weather-py", src)
	text, progress := sc.call(t, nil, `{"name": "Ada"}`)
	assert.Equal(t, "Hello, Ada!", text)
	assert.Contains(t, progress, "greeting Ada")
	text, _ = sc.call(t, map[string]any{"greeting": "Hi"}, `{"name": "Bo"}`)
	assert.Equal(t, "Hi, Bo!", text)

	// A tool's exception is the error the model sees.
	zipPath := filepath.Join(t.TempDir(), "weather-py.zip")
	code, _, stderr = runCLI("package", src, "-o", zipPath)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runCLI("call", zipPath, "greet", `{"name": " "}`, "--sandbox", "direct")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "ValueError: name is empty")
}

// toolset init refuses a name that is not a toolset's, and never
// overwrites a file.
func TestInitRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"../x", "a__b", "x_", "", "a/b", "-x", strings.Repeat("a", 65)} {
		code, _, stderr := runCLI("init", "--lang", "go", "--", name, dir)
		assert.Equal(t, 2, code, "%q: %s", name, stderr)
		assert.Contains(t, stderr, "invalid toolset name", name)
	}
	for _, name := range []string{"1abc", "json", "class", "os"} {
		code, _, stderr := runCLI("init", name, "--lang", "python", dir)
		assert.Equal(t, 2, code, "%q: %s", name, stderr)
		assert.Contains(t, stderr, "--lang python: the name", name)
	}
	code, _, stderr := runCLI("init", "x", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--lang go or --lang python is required")
	code, _, stderr = runCLI("init", "x", "--lang", "rust", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--lang "rust"`)
	code, _, stderr = runCLI("init", "x", "--lang", "go", "--sdk-replace", dir, dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not a checkout of github.com/gotoolset/toolset")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written")

	// An existing file stops the whole scaffold before anything is
	// written.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "toolsets", "taken", "src"), 0o755))
	mine := filepath.Join(dir, "toolsets", "taken", "src", "build.sh")
	require.NoError(t, os.WriteFile(mine, []byte("mine"), 0o600))
	code, _, stderr = runCLI("init", "taken", "--lang", "python", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, mine+" exists")
	got, err := os.ReadFile(mine)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(got))
	assert.NoFileExists(t, filepath.Join(dir, "toolsets", "taken.yaml"))

	code, _, stderr = runCLI("init", "twice", "--lang", "go", dir)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runCLI("init", "twice", "--lang", "go", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "exists")
}

// targetSource writes a source directory whose build.sh records the
// target it was given.
func targetSource(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "target-probe")
	require.NoError(t, os.MkdirAll(src, 0o755))
	writeFile(t, src, "manifest.yaml", "version: 1\ntools:\n  t:\n    executable: ./tool.sh\n")
	require.NoError(t, os.WriteFile(filepath.Join(src, "build.sh"), []byte(`#!/bin/sh
set -eu
echo "$SAM_TOOL_TARGET_OS/$SAM_TOOL_TARGET_ARCH" > "$SAM_TOOL_BUILD_OUT/target.txt"
printf '#!/bin/sh\n' > "$SAM_TOOL_BUILD_OUT/tool.sh"
chmod +x "$SAM_TOOL_BUILD_OUT/tool.sh"
`), 0o755))
	return src
}

// builtTarget packages src with args and returns the target build.sh
// was given.
func builtTarget(t *testing.T, src string, args ...string) string {
	t.Helper()
	dist := t.TempDir()
	code, stdout, stderr := runCLI(append([]string{"package", src, "-o", filepath.Join(t.TempDir(), "p.zip"), "--dist", dist}, args...)...)
	require.Equal(t, 0, code, stderr)
	// stdout: "built DIST/<os>-<arch> (build.sh)\n..."
	fields := strings.Fields(stdout)
	require.GreaterOrEqual(t, len(fields), 2, stdout)
	got, err := os.ReadFile(filepath.Join(fields[1], "target.txt"))
	require.NoError(t, err)
	return strings.TrimSpace(string(got))
}

// toolset package --platform URL builds for the target the platform
// names, with the platform's bearer token; the flags and the
// environment win over it.
func TestPackageTargetFromPlatform(t *testing.T) {
	st, err := toolpkg.Open(t.TempDir(), &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	const token = "build-target-token-0123456789abcdef"
	srv, err := platform.New(st, &platform.Options{Token: token, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer func() {
		hs.Close()
		srv.Close()
		require.NoError(t, st.Close())
	}()
	t.Setenv("SAM_TOOL_TARGET_OS", "")
	t.Setenv("SAM_TOOL_TARGET_ARCH", "")
	t.Setenv(platform.TokenEnv, "")
	src := targetSource(t)
	host := runtime.GOOS + "/" + runtime.GOARCH

	// Without its token the platform refuses, and the command says how
	// to give one.
	code, _, stderr := runCLI("package", src, "-o", filepath.Join(t.TempDir(), "p.zip"), "--platform", hs.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "requires a bearer token: give --token-file FILE or set $"+platform.TokenEnv)

	tokenFile := writeFile(t, t.TempDir(), "token", token+"\n")
	assert.Equal(t, host, builtTarget(t, src, "--platform", hs.URL, "--token-file", tokenFile), "the platform's target: where it runs")
	t.Setenv(platform.TokenEnv, token)
	assert.Equal(t, host, builtTarget(t, src, "--platform", hs.URL))

	// The flags, then the environment, come before the platform.
	assert.Equal(t, "linux/riscv64", builtTarget(t, src, "--platform", hs.URL, "--os", "linux", "--arch", "riscv64"))
	t.Setenv("SAM_TOOL_TARGET_OS", "freebsd")
	t.Setenv("SAM_TOOL_TARGET_ARCH", "arm64")
	assert.Equal(t, "freebsd/arm64", builtTarget(t, src, "--platform", hs.URL))
	t.Setenv("SAM_TOOL_TARGET_ARCH", "")
	assert.Equal(t, "freebsd/"+runtime.GOARCH, builtTarget(t, src, "--platform", hs.URL), "the platform fills what the environment leaves out")
	t.Setenv("SAM_TOOL_TARGET_OS", "")

	// Without a platform: this machine.
	assert.Equal(t, host, builtTarget(t, src))

	code, _, stderr = runCLI("package", src, "-o", "x.zip", "--token-file", tokenFile)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--token-file is for --platform")
}

// What another server answers for a build target is checked before
// anything is built with it.
func TestPackageTargetFromHostileServer(t *testing.T) {
	t.Setenv("SAM_TOOL_TARGET_OS", "")
	t.Setenv("SAM_TOOL_TARGET_ARCH", "")
	t.Setenv(platform.TokenEnv, "")
	var answer func(w http.ResponseWriter)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/platform/toolsets/buildTarget" {
			http.NotFound(w, r)
			return
		}
		answer(w)
	}))
	defer hs.Close()
	src := targetSource(t)

	answer = func(w http.ResponseWriter) { fmt.Fprint(w, `{"os": "linux", "arch": "riscv64"}`) }
	assert.Equal(t, "linux/riscv64", builtTarget(t, src, "--platform", hs.URL))
	assert.Equal(t, "linux/riscv64", builtTarget(t, src, "--url", hs.URL), "SAM's spelling")

	for what, c := range map[string]struct {
		answer func(w http.ResponseWriter)
		want   string
	}{
		"an escaping OS": {func(w http.ResponseWriter) { fmt.Fprint(w, `{"os": "../../etc", "arch": "amd64"}`) }, "a build target that is not one"},
		"no arch":        {func(w http.ResponseWriter) { fmt.Fprint(w, `{"os": "linux"}`) }, "a build target that is not one"},
		"not JSON":       {func(w http.ResponseWriter) { fmt.Fprint(w, `<html>`) }, "a build target that is not one"},
		"too long":       {func(w http.ResponseWriter) { fmt.Fprint(w, strings.Repeat(" ", 1<<20)) }, "with more than 4096 bytes"},
		"a redirect": {func(w http.ResponseWriter) {
			w.Header().Set("Location", "http://example.com/")
			w.WriteHeader(http.StatusFound)
		}, "302 Found"},
		"an error": {func(w http.ResponseWriter) { http.Error(w, "down", http.StatusBadGateway) }, "502 Bad Gateway"},
	} {
		answer = c.answer
		code, _, stderr := runCLI("package", src, "-o", filepath.Join(t.TempDir(), "p.zip"), "--platform", hs.URL)
		assert.Equal(t, 1, code, what)
		assert.Contains(t, stderr, c.want, what)
	}
	code, _, stderr := runCLI("package", src, "-o", "x.zip", "--platform", "file:///etc")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--platform must be the platform's http:// or https:// URL")
}

// The build contract's failures, through the command.
func TestPackageBuildScriptFailures(t *testing.T) {
	src := targetSource(t)
	script := filepath.Join(src, "build.sh")
	require.NoError(t, os.Chmod(script, 0o644))
	code, _, stderr := runCLI("package", src, "-o", filepath.Join(t.TempDir(), "p.zip"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "build.sh is not executable: it is run directly, by its #! line; run chmod +x build.sh")

	require.NoError(t, os.Chmod(script, 0o755))
	require.NoError(t, os.WriteFile(script, []byte("echo no shebang\n"), 0o755))
	code, _, stderr = runCLI("package", src, "-o", filepath.Join(t.TempDir(), "p.zip"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "build.sh has no #! line")

	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho compiling\necho 'main.go:3: undefined: x' >&2\nexit 2\n"), 0o755))
	code, _, stderr = runCLI("package", src, "-o", filepath.Join(t.TempDir(), "p.zip"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "build.sh failed (exit status 2); stderr:\nmain.go:3: undefined: x")

	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nmkdir -p dist-elsewhere\n"), 0o755))
	code, _, stderr = runCLI("package", src, "-o", filepath.Join(t.TempDir(), "p.zip"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "build.sh wrote nothing to $SAM_TOOL_BUILD_OUT")

	code, _, stderr = runCLI("package", src, "-o", filepath.Join(t.TempDir(), "p.zip"), "--name", "a__b")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "invalid toolset name")
}

// The Python scaffold's build.sh installs pyproject.toml's dependencies
// beside the tool, with pip: here a local project (whose build backend
// is in its own tree, so that pip needs no network).
func TestInitPythonScaffoldInstallsDependencies(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip(skipPython)
	}
	if err := exec.Command("python3", "-m", "pip", "--version").Run(); err != nil {
		t.Skip("pip not installed for python3 (apt-get install python3-pip): the scaffold's build.sh installs dependencies with it")
	}
	t.Setenv("PIP_NO_INDEX", "1")
	dep := t.TempDir()
	for name, data := range map[string]string{
		"pyproject.toml":    "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n\n[project]\nname = \"shout\"\nversion = \"1.0\"\n",
		"shout/__init__.py": "def shout(s):\n    return s.upper()\n",
		"backend.py": `import os, zipfile
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "shout-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        z.write("shout/__init__.py", "shout/__init__.py")
        z.writestr("shout-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: shout\nVersion: 1.0\n")
        z.writestr("shout-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("shout-1.0.dist-info/RECORD", "")
    return name
def get_requires_for_build_wheel(config_settings=None):
    return []
`,
	} {
		p := filepath.Join(dep, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	dir := t.TempDir()
	code, _, stderr := runCLI("init", "loud", "--lang", "python", dir)
	require.Equal(t, 0, code, stderr)
	src := filepath.Join(dir, "toolsets", "loud", "src")
	edit := func(name, old, new string) {
		p := filepath.Join(src, filepath.FromSlash(name))
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(data), old)
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
	}
	edit("pyproject.toml", "dependencies = []", `dependencies = ["shout @ file://`+dep+`"]`)
	edit("src/loud/tool.py", `    return "%s, %s!" % (greeting, name)`, "    import shout\n    return shout.shout(\"%s, %s!\" % (greeting, name))")
	text, _ := scaffoldCall(t, "loud", src, nil, `{"name": "Ada"}`)
	assert.Equal(t, "HELLO, ADA!", text)
}
