package toolpkg

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/elf"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func zipOf(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, ZipDir(dir, &buf))
	return buf.Bytes()
}

// The go.mod convention: each Go tool cross-compiled with CGO_ENABLED=0
// into dist/<os>-<arch>/, zipped, uploaded and called in every mode.
func TestBuildGoSourceDirectory(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	res, err := Build(context.Background(), "testdata/gopkg", &BuildOptions{Out: out})
	require.NoError(t, err)
	assert.Equal(t, BuildGo, res.Method)
	assert.Equal(t, filepath.Join(out, runtime.GOOS+"-"+runtime.GOARCH), res.Dir)
	fi, err := os.Stat(filepath.Join(res.Dir, "gopkg"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&0o111)
	assert.FileExists(t, filepath.Join(res.Dir, "manifest.yaml"))
	pkg := zipOf(t, res.Dir)
	// The zip ZipDir made is uploaded in the direct mode; the other modes
	// get the same entries stored, which spares inflating the executable
	// under the race detector again.
	var storedBuf bytes.Buffer
	require.NoError(t, zipDir(res.Dir, &storedBuf, zip.Store))
	stored := storedBuf.Bytes()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			p := stored
			if mode == ModeDirect {
				p = pkg
			}
			info := upload(t, s, "built", p)
			require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
			r, err := callTool(context.Background(), t, s.Toolset("built", map[string]any{"api_key": "k-123456"}), "built__greet", `{"name": "Flo"}`)
			require.NoError(t, err)
			assert.Equal(t, "hello Flo", resultData(t, r)["text"])
		})
	}
}

func TestBuildGoCrossCompilesStatic(t *testing.T) {
	out := t.TempDir()
	t.Setenv("SAM_TOOL_TARGET_OS", "linux")
	t.Setenv("SAM_TOOL_TARGET_ARCH", "arm64")
	res, err := Build(context.Background(), "testdata/gopkg", &BuildOptions{Out: out})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(out, "linux-arm64"), res.Dir, "the target from the platform's variables")
	f, err := elf.Open(filepath.Join(res.Dir, "gopkg"))
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, elf.EM_AARCH64, f.Machine)
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "CGO_ENABLED=0: a static binary")
	}
}

// scriptSource writes a source directory whose build.sh is script,
// with mode, and whose manifest names one executable, ./tool.sh.
func scriptSource(t *testing.T, script string, mode fs.FileMode) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "weather")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "manifest.yaml"), []byte("version: 1\ntools:\n  t:\n    executable: ./tool.sh\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "build.sh"), []byte(script), mode))
	return src
}

func TestBuildRunsBuildScriptWithItsVariables(t *testing.T) {
	t.Parallel()
	src := scriptSource(t, `#!/bin/sh
set -eu
case "$SAM_TOOL_BUILD_OUT" in /*) ;; *) echo "not absolute: $SAM_TOOL_BUILD_OUT" >&2; exit 1;; esac
echo "$SAM_TOOL_NAME $SAM_TOOL_TARGET_OS $SAM_TOOL_TARGET_ARCH $SAM_TOOL_SDK_VERSION $GOOS $GOARCH $CGO_ENABLED $(pwd)" > "$SAM_TOOL_BUILD_OUT/target.txt"
echo "${SAM_TOOL_OUTPUT_DIR:-unset}" >> "$SAM_TOOL_BUILD_OUT/target.txt"
printf '#!/bin/sh\necho hi\n' > "$SAM_TOOL_BUILD_OUT/tool.sh"
chmod 755 "$SAM_TOOL_BUILD_OUT/tool.sh"
`, 0o755)
	res, err := Build(context.Background(), src, &BuildOptions{GOOS: "linux", GOARCH: "riscv64"})
	require.NoError(t, err)
	assert.Equal(t, BuildScript, res.Method)
	assert.Equal(t, filepath.Join(src, "dist", "linux-riscv64"), res.Dir)
	got, err := os.ReadFile(filepath.Join(res.Dir, "target.txt"))
	require.NoError(t, err)
	assert.Equal(t, "weather linux riscv64 "+SDKVersion+" linux riscv64 0 "+src+"\nunset\n", string(got),
		"the name from the directory, the target, the SDK version, run in the source directory; no SAM_TOOL_OUTPUT_DIR")
	assert.NotEmpty(t, SDKVersion)
	assert.FileExists(t, filepath.Join(res.Dir, "manifest.yaml"), "copied when build.sh wrote none")

	// The name of toolsets/NAME/src is NAME; an explicit one wins.
	nested := filepath.Join(t.TempDir(), "toolsets", "forecast", "src")
	require.NoError(t, os.MkdirAll(filepath.Dir(nested), 0o755))
	require.NoError(t, os.Rename(src, nested))
	res, err = Build(context.Background(), nested, &BuildOptions{GOOS: "linux", GOARCH: "riscv64"})
	require.NoError(t, err)
	got, err = os.ReadFile(filepath.Join(res.Dir, "target.txt"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(got), "forecast "), "%s", got)
	res, err = Build(context.Background(), nested, &BuildOptions{Name: "other-name", GOOS: "linux", GOARCH: "riscv64"})
	require.NoError(t, err)
	got, err = os.ReadFile(filepath.Join(res.Dir, "target.txt"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(got), "other-name "), "%s", got)
}

// build.sh is run directly: without its execute bit or its #! line it
// is refused, before anything runs, saying what to do.
func TestBuildScriptMustBeRunnableDirectly(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	body := "touch " + marker + "\nprintf '#!/bin/sh\\n' > \"$SAM_TOOL_BUILD_OUT/tool.sh\"; chmod +x \"$SAM_TOOL_BUILD_OUT/tool.sh\"\n"
	_, err := Build(context.Background(), scriptSource(t, "#!/bin/sh\n"+body, 0o644), nil)
	require.ErrorContains(t, err, "build.sh is not executable")
	require.ErrorContains(t, err, "chmod +x build.sh")
	_, err = Build(context.Background(), scriptSource(t, body, 0o755), nil)
	require.ErrorContains(t, err, "build.sh has no #! line")
	_, err = Build(context.Background(), scriptSource(t, "", 0o755), nil)
	require.ErrorContains(t, err, "build.sh has no #! line")
	assert.NoFileExists(t, marker, "nothing ran")

	// A symlink is not the script.
	src := scriptSource(t, "#!/bin/sh\n"+body, 0o755)
	require.NoError(t, os.Rename(filepath.Join(src, "build.sh"), filepath.Join(src, "real.sh")))
	require.NoError(t, os.Symlink("real.sh", filepath.Join(src, "build.sh")))
	_, err = Build(context.Background(), src, nil)
	require.ErrorContains(t, err, "build.sh is not a regular file")

	// Its own interpreter: a #! line naming one that does not exist.
	_, err = Build(context.Background(), scriptSource(t, "#!/nonexistent/bash\n"+body, 0o755), nil)
	require.ErrorContains(t, err, "build.sh failed")
	assert.NoFileExists(t, marker)

	// With both, it runs.
	_, err = Build(context.Background(), scriptSource(t, "#!/bin/sh\n"+body, 0o755), nil)
	require.NoError(t, err)
	assert.FileExists(t, marker)
}

func TestBuildScriptFailuresSayWhy(t *testing.T) {
	t.Parallel()
	// A failing script: its exit status and the end of its stderr, not
	// its stdout.
	var log bytes.Buffer
	_, err := Build(context.Background(), scriptSource(t, "#!/bin/sh\necho progress\necho broken step >&2\nexit 3\n", 0o755), &BuildOptions{Log: &log})
	require.ErrorContains(t, err, "build.sh failed (exit status 3); stderr:\nbroken step")
	assert.NotContains(t, err.Error(), "progress")
	assert.Contains(t, log.String(), "progress\n", "the whole output goes to the log")

	// Only the tail of a long stderr.
	_, err = Build(context.Background(), scriptSource(t, "#!/bin/sh\necho FIRST >&2\nyes line | head -c 100000 >&2\necho LAST >&2\nexit 1\n", 0o755), nil)
	require.ErrorContains(t, err, "LAST")
	assert.NotContains(t, err.Error(), "FIRST")
	assert.Less(t, len(err.Error()), 6000)

	// A script that writes nothing to SAM_TOOL_BUILD_OUT.
	_, err = Build(context.Background(), scriptSource(t, "#!/bin/sh\necho built somewhere else\n", 0o755), nil)
	require.ErrorContains(t, err, "build.sh wrote nothing to $SAM_TOOL_BUILD_OUT")
	// Or writes something, but not the manifest's executable.
	_, err = Build(context.Background(), scriptSource(t, "#!/bin/sh\necho x > \"$SAM_TOOL_BUILD_OUT/README\"\n", 0o755), nil)
	require.ErrorContains(t, err, "left no executable for tools.t (tool.sh)")

	// A script that outlives its time is killed, with its children.
	start := time.Now()
	_, err = Build(context.Background(), scriptSource(t, "#!/bin/sh\nsleep 60 &\nsleep 60\n", 0o755), &BuildOptions{Timeout: 300 * time.Millisecond})
	require.ErrorContains(t, err, "build.sh failed (still running after 300ms)")
	assert.Less(t, time.Since(start), 20*time.Second)

	// The log is bounded.
	log.Reset()
	_, err = Build(context.Background(), scriptSource(t, "#!/bin/sh\nyes out | head -c 200000\nexit 1\n", 0o755), &BuildOptions{Log: &log, MaxLog: 1000})
	require.Error(t, err)
	assert.Less(t, log.Len(), 1200)
	assert.Contains(t, log.String(), "[build output cut here")

	// A hostile name or target is refused before anything runs.
	_, err = Build(context.Background(), scriptSource(t, "#!/bin/sh\nexit 0\n", 0o755), &BuildOptions{Name: "../x"})
	require.ErrorContains(t, err, "invalid toolset name")
	_, err = Build(context.Background(), scriptSource(t, "#!/bin/sh\nexit 0\n", 0o755), &BuildOptions{Name: "a__b"})
	require.ErrorContains(t, err, "invalid toolset name")
	_, err = Build(context.Background(), scriptSource(t, "#!/bin/sh\nexit 0\n", 0o755), &BuildOptions{GOOS: "../../etc", GOARCH: "amd64"})
	require.ErrorContains(t, err, "invalid target")
}

// A local pure-Python project, built by an in-tree PEP 517 backend so
// that pip needs no network, installed with pip install --target.
func pythonSource(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip(skipPython)
	}
	src := t.TempDir()
	files := map[string]string{
		"manifest.yaml":     "version: 1\ntools:\n  hello:\n    runtime: python\n    executable: python/bin/hello\n",
		"pyproject.toml":    "[build-system]\nrequires = []\nbuild-backend = \"tinybackend\"\nbackend-path = [\".\"]\n\n[project]\nname = \"hello\"\nversion = \"1.0\"\n",
		"hello/__init__.py": "def cli():\n    print('hello')\n    return 0\n",
		"tinybackend.py": `import os, zipfile
NAME, VERSION = "hello", "1.0"
def _wheel(directory):
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    info = f"{NAME}-{VERSION}.dist-info"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as z:
        z.write("hello/__init__.py", "hello/__init__.py")
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: tiny\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/entry_points.txt", "[console_scripts]\nhello = hello:cli\n")
        z.writestr(f"{info}/RECORD", "")
    return name
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory)
def get_requires_for_build_wheel(config_settings=None):
    return []
`,
	}
	for name, data := range files {
		p := filepath.Join(src, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	return src
}

func TestBuildPythonWithPipTarget(t *testing.T) {
	t.Parallel()
	src := pythonSource(t)
	res, err := Build(context.Background(), src, &BuildOptions{PipArgs: []string{"--no-index", "--no-build-isolation"}})
	require.NoError(t, err)
	assert.Equal(t, BuildPython, res.Method)
	script := filepath.Join(res.Dir, "python", "bin", "hello")
	data, err := os.ReadFile(script)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "#!"), "a pip console script")
	assert.Contains(t, string(data), "from hello import cli")
	assert.FileExists(t, filepath.Join(res.Dir, "python", "hello", "__init__.py"))
	// The layout the platform runs: PYTHONPATH=<package>/python.
	cmd := exec.Command("python3", script)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(res.Dir, "python"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "hello\n", string(out))

	pkg := zipOf(t, res.Dir)
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	require.NoError(t, err)
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.Name == "python/bin/hello" {
			assert.Equal(t, fs.FileMode(0o755), f.Mode().Perm(), "executable bits kept")
		}
	}
	assert.Contains(t, names, "manifest.yaml")
	assert.Contains(t, names, "python/bin/hello")
}

func TestBuildPythonRequirementsFromLocalSources(t *testing.T) {
	t.Parallel()
	src := pythonSource(t)
	// requirements.txt is preferred: a pyproject.toml beside it is not
	// read.
	require.NoError(t, os.WriteFile(filepath.Join(src, "pyproject.toml"), []byte("not [[ toml\n"), 0o644))
	// A requirements file naming the local project directory... which
	// then needs a build backend: give it back under another directory.
	proj := filepath.Join(src, "proj")
	require.NoError(t, os.MkdirAll(proj, 0o755))
	for _, f := range []string{"tinybackend.py", "hello/__init__.py"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(proj, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(proj, f), data, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(proj, "pyproject.toml"), []byte("[build-system]\nrequires = []\nbuild-backend = \"tinybackend\"\nbackend-path = [\".\"]\n\n[project]\nname = \"hello\"\nversion = \"1.0\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "requirements.txt"), []byte("./proj\n"), 0o644))
	res, err := Build(context.Background(), src, &BuildOptions{PipArgs: []string{"--no-index", "--no-build-isolation"}})
	require.NoError(t, err)
	assert.Equal(t, BuildPython, res.Method)
	assert.FileExists(t, filepath.Join(res.Dir, "python", "bin", "hello"))
}

// The same directory zips to the same bytes, whatever the files' times,
// with sorted entries and one fixed time.
func TestZipDirIsDeterministic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string, mode fs.FileMode) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), mode))
	}
	write("manifest.yaml", "version: 1\ntools:\n  t:\n    runtime: python\n    executable: ./a.sh\n", 0o600)
	write("a.sh", "#!/bin/sh\n", 0o700)
	write("a/b.txt", "b", 0o644)
	write("a.txt", "a", 0o664)
	first := zipOf(t, dir)
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "a.txt"), later, later))
	second := zipOf(t, dir)
	assert.Equal(t, first, second)
	zr, err := zip.NewReader(bytes.NewReader(first), int64(len(first)))
	require.NoError(t, err)
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		assert.Equal(t, zipTime, f.Modified.UTC(), f.Name)
	}
	assert.Equal(t, []string{"a.sh", "a.txt", "a/b.txt", "manifest.yaml"}, names)
	assert.Equal(t, fs.FileMode(0o755), zr.File[0].Mode().Perm())
	assert.Equal(t, fs.FileMode(0o644), zr.File[1].Mode().Perm())
}

func TestZipDirRefusesSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte("version: 1\ntools:\n  t:\n    runtime: python\n    executable: ./a.sh\n"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "a.sh")))
	err := ZipDir(dir, &bytes.Buffer{})
	require.ErrorContains(t, err, "is not a regular file")
}

// The hint for a virtual environment names the layout the platform
// runs: dependencies under python/, not python/lib.
func TestVenvHintSaysPython(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte("version: 1\ntools:\n  t:\n    runtime: python\n    executable: ./a.sh\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.sh"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".venv", "lib"), 0o755))
	_, err := Pack(context.Background(), dir, &bytes.Buffer{}, nil)
	require.ErrorContains(t, err, "pip install --target "+dir+"/python ...")
	require.NotContains(t, err.Error(), "python/lib")
	_, err = Build(context.Background(), dir, nil)
	require.ErrorContains(t, err, "pip install --target "+dir+"/python ...")
}

// The go.mod convention builds ./cmd/<name> when there is one, the
// toolset's name being the directory's.
func TestBuildGoCmdName(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "toolsets", "weather", "src")
	for name, data := range map[string]string{
		"manifest.yaml":        "version: 1\ntools:\n  w:\n    runtime: go\n    executable: ./bin/tool\n",
		"go.mod":               "module example.com/weather\n\ngo 1.26\n",
		"cmd/weather/main.go":  "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"from cmd/weather\") }\n",
		"helper/helper.go":     "package helper\n",
		"cmd/other/main.go":    "package main\n\nfunc main() {}\n",
		"notmain/notmain.go":   "package notmain\n",
		"bin/.keep":            "",
		"internal/x/x_test.go": "package x\n",
	} {
		p := filepath.Join(src, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	res, err := Build(context.Background(), src, nil)
	require.NoError(t, err)
	assert.Equal(t, BuildGo, res.Method)
	out, err := exec.Command(filepath.Join(res.Dir, "bin", "tool")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "from cmd/weather\n", string(out))
}

// Without anything to build, the executables must be there already.
func TestBuildPrebuilt(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "manifest.yaml"), []byte("version: 1\ntools:\n  t:\n    executable: ./tool.sh\n"), 0o644))
	_, err := Build(context.Background(), src, &BuildOptions{Name: "pre"})
	require.ErrorContains(t, err, "nothing to build (no build.sh, go.mod, requirements.txt or pyproject.toml) and no prebuilt executable for tools.t (tool.sh)")
	require.NoError(t, os.WriteFile(filepath.Join(src, "tool.sh"), []byte("#!/bin/sh\n"), 0o755))
	res, err := Build(context.Background(), src, &BuildOptions{Name: "pre"})
	require.NoError(t, err)
	assert.Equal(t, BuildPrebuilt, res.Method)
	assert.FileExists(t, filepath.Join(res.Dir, "tool.sh"))
}

// A directory whose name is no toolset's builds by the conventions;
// build.sh, which is given the name, needs one.
func TestBuildNameFromDirectory(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "my.tools")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "manifest.yaml"), []byte("version: 1\ntools:\n  t:\n    executable: ./tool.sh\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "tool.sh"), []byte("#!/bin/sh\n"), 0o755))
	res, err := Build(context.Background(), src, nil)
	require.NoError(t, err)
	assert.Equal(t, BuildPrebuilt, res.Method)
	require.NoError(t, os.WriteFile(filepath.Join(src, "build.sh"), []byte("#!/bin/sh\ncp tool.sh \"$SAM_TOOL_BUILD_OUT/\"\n"), 0o755))
	_, err = Build(context.Background(), src, nil)
	require.ErrorContains(t, err, `the toolset's name, taken from the directory, is not one: invalid toolset name "my.tools"`)
	res, err = Build(context.Background(), src, &BuildOptions{Name: "mine"})
	require.NoError(t, err)
	assert.Equal(t, BuildScript, res.Method)
}
