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
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			info := upload(t, s, "built", pkg)
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

func TestBuildRunsBuildScriptWithItsVariables(t *testing.T) {
	src := t.TempDir()
	write := func(name, data string, mode fs.FileMode) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(data), mode))
	}
	write("manifest.yaml", "version: 1\ntools:\n  t:\n    runtime: python\n    executable: ./tool.sh\n", 0o644)
	write("build.sh", `set -eu
: "${SAM_TOOL_TARGET_OS:?}" "${SAM_TOOL_TARGET_ARCH:?}"
echo "$SAM_TOOL_TARGET_OS $SAM_TOOL_TARGET_ARCH $GOOS $GOARCH $CGO_ENABLED" > "$SAM_TOOL_OUTPUT_DIR/target.txt"
printf '#!/bin/sh\necho hi\n' > "$SAM_TOOL_OUTPUT_DIR/tool.sh"
chmod 755 "$SAM_TOOL_OUTPUT_DIR/tool.sh"
`, 0o644)
	res, err := Build(context.Background(), src, &BuildOptions{GOOS: "linux", GOARCH: "riscv64"})
	require.NoError(t, err)
	assert.Equal(t, BuildScript, res.Method)
	assert.Equal(t, filepath.Join(src, "dist", "linux-riscv64"), res.Dir)
	got, err := os.ReadFile(filepath.Join(res.Dir, "target.txt"))
	require.NoError(t, err)
	assert.Equal(t, "linux riscv64 linux riscv64 0\n", string(got))
	assert.FileExists(t, filepath.Join(res.Dir, "manifest.yaml"), "copied when build.sh wrote none")

	// A failing build.sh says why.
	write("build.sh", "echo broken step >&2; exit 3\n", 0o644)
	_, err = Build(context.Background(), src, nil)
	require.ErrorContains(t, err, "build.sh failed (exit status 3); stderr:\nbroken step")
}

// A local pure-Python project, built by an in-tree PEP 517 backend so
// that pip needs no network, installed with pip install --target.
func pythonSource(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
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
	src := pythonSource(t)
	require.NoError(t, os.Remove(filepath.Join(src, "pyproject.toml")))
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
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte("version: 1\ntools:\n  t:\n    runtime: python\n    executable: ./a.sh\n"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "a.sh")))
	err := ZipDir(dir, &bytes.Buffer{})
	require.ErrorContains(t, err, "is not a regular file")
}

// The hint for a virtual environment names the layout the platform
// runs: dependencies under python/, not python/lib.
func TestVenvHintSaysPython(t *testing.T) {
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
