package toolpkg

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sourceDir writes a package source directory: a Go tool (the tooldemo
// program, in its own module) and a shell tool with a dependency file.
func sourceDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), mode))
	}
	src, err := os.ReadFile("testdata/tooldemo/main.go")
	require.NoError(t, err)
	write("manifest.yaml", "version: 1\ntools:\n  demo:\n    runtime: go\n    executable: ./tooldemo\n    timeout_seconds: 5\n  sh:\n    runtime: python\n    executable: greet.sh\n", 0o644)
	write("go.mod", "module example.com/packtest\n\ngo 1.26\n", 0o644)
	write("tooldemo/main.go", string(src), 0o644)
	write("python/bin/greet.sh", scriptTool(schemaEcho(`{"tools":{"greet":{"description":"Say hello."}}}`)), 0o755)
	write("python/lib/dep/data.txt", "dependency", 0o644)
	write("python/lib/dep/__pycache__/x.pyc", "junk", 0o644)
	write(".git/config", "junk", 0o644)
	return dir
}

func TestPackBuildsAndPackages(t *testing.T) {
	t.Parallel()
	dir := sourceDir(t)
	var buf bytes.Buffer
	m, err := Pack(context.Background(), dir, &buf, nil)
	require.NoError(t, err)
	require.Len(t, m.Executables, 2)

	c, err := validateZip(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Limits{})
	require.NoError(t, err)
	var names []string
	for n := range c.files {
		names = append(names, n)
	}
	assert.ElementsMatch(t, []string{"manifest.yaml", "tooldemo", "python/bin/greet.sh", "python/lib/dep/data.txt"}, names,
		"Go sources, hidden files and caches stay out")
	assert.Equal(t, os.FileMode(0o755), c.files["tooldemo"].Mode().Perm())

	s := openStore(t, Options{Sandbox: ModeDirect})
	info := upload(t, s, "packed", buf.Bytes())
	require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	ts := s.Toolset("packed", nil)
	res, err := callTool(context.Background(), t, ts, "packed__echo", `{"text":"built"}`)
	require.NoError(t, err)
	assert.Equal(t, "built", resultData(t, res)["text"])
	res, err = callTool(context.Background(), t, ts, "packed__greet", `{}`)
	require.NoError(t, err)
	assert.Equal(t, "hello from sh: greet", res.(*Result).Message)
}

func TestPackCrossCompiles(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("cross-compiling the standard library takes half a minute on a cold cache")
	}
	dir := sourceDir(t)
	var buf bytes.Buffer
	// Stored: what is checked is the binary (TestPackBuildsAndPackages
	// checks the zip Pack writes).
	_, err := pack(context.Background(), dir, &buf, &PackOptions{GOOS: "linux", GOARCH: "arm64"}, zip.Store)
	require.NoError(t, err)
	c, err := validateZip(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Limits{})
	require.NoError(t, err)
	rc, err := c.files["tooldemo"].Open()
	require.NoError(t, err)
	bin := new(bytes.Buffer)
	_, err = bin.ReadFrom(rc)
	require.NoError(t, err)
	rc.Close()
	f, err := elf.NewFile(bytes.NewReader(bin.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, elf.EM_AARCH64, f.Machine)
	_, err = f.DynamicSymbols()
	assert.Error(t, err, "a static binary has no dynamic symbols")
}

func TestPackErrors(t *testing.T) {
	t.Parallel()
	manifest := func(text string) func(t *testing.T) string {
		return func(t *testing.T) string {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(text), 0o644))
			return dir
		}
	}
	for _, tc := range []struct {
		name  string
		dir   func(t *testing.T) string // the source directory to pack
		want  []string                  // in the error; {dir} is the source directory
		wantT any                       // a pointer to the error type it must hold, or nil
	}{
		{
			name: "no manifest",
			dir:  func(t *testing.T) string { return t.TempDir() },
			want: []string{"manifest.yaml: no such file or directory"},
		},
		{
			name:  "invalid manifest",
			dir:   manifest("version: 1\ntools:\n  a: {runtime: c, executable: a}\n"),
			want:  []string{"tools.a"},
			wantT: new(*ManifestError),
		},
		{
			name: "no Go source",
			dir:  manifest("version: 1\ntools:\n  a: {runtime: go, executable: bin/a}\n"),
			want: []string{"no Go source for tools.a: looked for .go files in {dir}/bin/a"},
		},
		{
			name: "build error",
			dir: func(t *testing.T) string {
				dir := sourceDir(t)
				require.NoError(t, os.WriteFile(filepath.Join(dir, "tooldemo", "main.go"), []byte("package main\nfunc main() { undefined() }\n"), 0o644))
				return dir
			},
			want: []string{"building tools.demo", "undefined: undefined"},
		},
		{
			name: "virtual environment",
			dir: func(t *testing.T) string {
				dir := sourceDir(t)
				require.NoError(t, os.MkdirAll(filepath.Join(dir, ".venv", "bin"), 0o755))
				return dir
			},
			want: []string{".venv is a virtual environment"},
		},
		{
			name: "symlink",
			dir: func(t *testing.T) string {
				dir := sourceDir(t)
				require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "python", "lib", "passwd")))
				return dir
			},
			want: []string{"is a symlink"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			_, err := Pack(context.Background(), dir, &bytes.Buffer{}, nil)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), strings.ReplaceAll(w, "{dir}", dir))
			}
			if tc.wantT != nil {
				require.ErrorAs(t, err, tc.wantT)
			}
		})
	}
}
