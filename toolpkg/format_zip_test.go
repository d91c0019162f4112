package toolpkg

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goodManifest = "version: 1\ntools:\n  t:\n    runtime: go\n    executable: ./bin/tool\n"

func manifestFile(s string) zfile { return zfile{name: "manifest.yaml", data: []byte(s)} }

var toolFile = zfile{name: "bin/tool", data: []byte("#!/bin/sh\n"), mode: 0o755}

// problemsOf validates data and returns the problems as printed.
func problemsOf(t *testing.T, data []byte, lim Limits) []string {
	t.Helper()
	m, err := ValidateZip(bytes.NewReader(data), int64(len(data)), &lim)
	require.Error(t, err)
	assert.Nil(t, m)
	var ve *ValidationError
	require.True(t, errors.As(err, &ve), "error is %T: %v", err, err)
	var out []string
	for _, p := range ve.Problems {
		out = append(out, p.String())
	}
	return out
}

func TestValidateZipAcceptsAGoodPackage(t *testing.T) {
	t.Parallel()
	data := makeZip(t, manifestFile(goodManifest), zfile{name: "bin/", dir: true}, toolFile, zfile{name: "lib/deps/x.whl.txt", data: []byte("x")})
	m, err := ValidateZip(bytes.NewReader(data), int64(len(data)), nil)
	require.NoError(t, err)
	require.Len(t, m.Executables, 1)
	assert.Equal(t, "bin/tool", m.Executables[0].Path)
}

func TestValidateZipPythonLookup(t *testing.T) {
	t.Parallel()
	man := "version: 1\ntools:\n  p:\n    runtime: python\n    executable: run.py\n"
	data := makeZip(t, manifestFile(man), zfile{name: "python/bin/run.py", data: []byte("#!/usr/bin/env python3\n")})
	_, err := ValidateZip(bytes.NewReader(data), int64(len(data)), nil)
	require.NoError(t, err, "a Python executable is found under python/bin/")

	data = makeZip(t, manifestFile(man), zfile{name: "other.py", data: []byte("x")})
	assert.Equal(t, []string{`"run.py": missing: the executable of tools.p (looked for "run.py", "python/bin/run.py")`}, problemsOf(t, data, Limits{}))
}

func TestValidateZipRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files []zfile
		lim   Limits
		want  []string
	}{
		{"parent traversal", []zfile{manifestFile(goodManifest), toolFile, {name: "../evil", data: []byte("x")}},
			Limits{}, []string{`"../evil": ".." escapes the package`}},
		{"traversal inside a path", []zfile{manifestFile(goodManifest), toolFile, {name: "a/../../evil", data: []byte("x")}},
			Limits{}, []string{`"a/../../evil": ".." escapes the package`}},
		{"absolute path", []zfile{manifestFile(goodManifest), toolFile, {name: "/etc/cron.d/evil", data: []byte("x")}},
			Limits{}, []string{`"/etc/cron.d/evil": absolute path escapes the package`}},
		{"backslash", []zfile{manifestFile(goodManifest), toolFile, {name: `..\evil`, data: []byte("x")}},
			Limits{}, []string{`"..\\evil": contains a backslash; use "/" as the separator`}},
		{"drive letter", []zfile{manifestFile(goodManifest), toolFile, {name: "C:/evil", data: []byte("x")}},
			Limits{}, []string{`"C:/evil": a drive letter escapes the package`}},
		{"symlink", []zfile{manifestFile(goodManifest), toolFile, {name: "passwd", symlink: "/etc/passwd"}},
			Limits{}, []string{`"passwd": is a symlink; packages may not contain symlinks`}},
		{"symlinked executable", []zfile{manifestFile(goodManifest), {name: "bin/tool", symlink: "/bin/sh"}},
			Limits{}, []string{`"bin/tool": is a symlink; packages may not contain symlinks`, `"bin/tool": missing: the executable of tools.t (looked for "bin/tool", "python/bin/bin/tool")`}},
		{".whl at the root", []zfile{manifestFile(goodManifest), toolFile, {name: "requests-2.0-py3-none-any.whl", data: []byte("x")}},
			Limits{}, []string{`"requests-2.0-py3-none-any.whl": is a wheel at the package root; extract dependencies into the package instead`}},
		{".venv reported once", []zfile{manifestFile(goodManifest), toolFile, {name: ".venv/bin/python", data: []byte("x")}, {name: ".venv/lib/site.py", data: []byte("x")}},
			Limits{}, []string{`".venv/bin/python": .venv/ is a virtual environment; extract dependencies into the package instead (pip install --target)`}},
		{"nested .venv", []zfile{manifestFile(goodManifest), toolFile, {name: "python/.venv/", dir: true}},
			Limits{}, []string{`"python/.venv/": python/.venv/ is a virtual environment; extract dependencies into the package instead (pip install --target)`}},
		{"missing manifest", []zfile{toolFile},
			Limits{}, []string{`"manifest.yaml": missing: a package needs manifest.yaml at its root`}},
		{"manifest not at the root", []zfile{{name: "pkg/manifest.yaml", data: []byte(goodManifest)}, toolFile},
			Limits{}, []string{`"manifest.yaml": missing: a package needs manifest.yaml at its root`}},
		{"missing executable", []zfile{manifestFile(goodManifest)},
			Limits{}, []string{`"bin/tool": missing: the executable of tools.t (looked for "bin/tool", "python/bin/bin/tool")`}},
		{"executable is a directory", []zfile{manifestFile(goodManifest), {name: "bin/tool/", dir: true}},
			Limits{}, []string{`"bin/tool": missing: the executable of tools.t (looked for "bin/tool", "python/bin/bin/tool")`}},
		{"invalid manifest", []zfile{manifestFile("version: 1\ntools:\n  t:\n    runtime: go\n    executable: bin/tool\n    timeout_seconds: never\n"), toolFile},
			Limits{}, []string{`"manifest.yaml": tools.t.timeout_seconds: expected an integer, got the string "never" (line 6)`}},
		{"duplicate entry", []zfile{manifestFile(goodManifest), toolFile, {name: "bin/./tool", data: []byte("x")}},
			Limits{}, []string{`"bin/./tool": duplicate entry`}},
		{"file used as a directory", []zfile{manifestFile(goodManifest), toolFile, {name: "bin/tool/x", data: []byte("x")}},
			Limits{}, []string{`"bin/tool/x": is inside "bin/tool", which is a file`}},
		{"too many entries", []zfile{manifestFile(goodManifest), toolFile, {name: "a"}, {name: "b"}, {name: "c"}},
			Limits{MaxEntries: 4}, []string{`the zip has 5 entries; at most 4 are allowed`}},
		{"zip too large", []zfile{manifestFile(goodManifest), toolFile, {name: "big", data: bytes.Repeat([]byte{7}, 4096)}},
			Limits{MaxZipBytes: 100}, nil}, // checked below: the size depends on compression
		{"contents too large", []zfile{manifestFile(goodManifest), toolFile, {name: "a", data: make([]byte, 600)}, {name: "b", data: make([]byte, 600)}, {name: "c", data: make([]byte, 10)}},
			Limits{MaxUncompressedBytes: 1000}, []string{`"b": the contents exceed 1000 bytes uncompressed (counted while reading; reading stopped here)`}},
		{"every problem at once", []zfile{{name: "../evil"}, {name: "link", symlink: "/"}, {name: ".venv/x"}, {name: "x.whl"}},
			Limits{}, []string{
				`"../evil": ".." escapes the package`,
				`"link": is a symlink; packages may not contain symlinks`,
				`".venv/x": .venv/ is a virtual environment; extract dependencies into the package instead (pip install --target)`,
				`"x.whl": is a wheel at the package root; extract dependencies into the package instead`,
				`"manifest.yaml": missing: a package needs manifest.yaml at its root`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := makeZip(t, tt.files...)
			got := problemsOf(t, data, tt.lim)
			if tt.want == nil {
				require.Len(t, got, 1)
				assert.Equal(t, fmt.Sprintf("the zip is %d bytes; at most 100 are allowed", len(data)), got[0])
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValidateZipNotAZip(t *testing.T) {
	t.Parallel()
	got := problemsOf(t, []byte("this is not a zip"), Limits{})
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "not a readable zip archive")
}

// rawEntry adds an entry whose headers claim declared bytes while its
// deflated data holds actual bytes of zeros.
func rawEntry(t *testing.T, zw *zip.Writer, name string, actual int, declared uint64) {
	t.Helper()
	var comp bytes.Buffer
	fw, err := flate.NewWriter(&comp, flate.BestSpeed)
	require.NoError(t, err)
	zeros := make([]byte, 1<<16)
	crc := crc32.NewIEEE()
	for n := actual; n > 0; n -= len(zeros) {
		chunk := zeros[:min(n, len(zeros))]
		_, _ = fw.Write(chunk)
		crc.Write(chunk)
	}
	require.NoError(t, fw.Close())
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc.Sum32(),
		CompressedSize64: uint64(comp.Len()), UncompressedSize64: declared}
	h.SetMode(0o644)
	w, err := zw.CreateRaw(h)
	require.NoError(t, err)
	_, err = w.Write(comp.Bytes())
	require.NoError(t, err)
}

func TestValidateZipBombThatLiesInItsHeaders(t *testing.T) {
	t.Parallel()
	build := func(declared uint64) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, f := range []zfile{manifestFile(goodManifest), toolFile} {
			w, err := zw.Create(f.name)
			require.NoError(t, err)
			_, _ = w.Write(f.data)
		}
		rawEntry(t, zw, "bomb", 32<<20, declared) // 32 MB of zeros, a few KB compressed
		require.NoError(t, zw.Close())
		return buf.Bytes()
	}
	lim := Limits{MaxUncompressedBytes: 1 << 20}

	t.Run("headers claim more than the limit allows", func(t *testing.T) {
		data := build(1 << 40)
		assert.Less(t, len(data), 200<<10, "the bomb is small")
		assert.Equal(t, []string{`"bomb": the contents exceed 1048576 bytes uncompressed (counted while reading; reading stopped here)`}, problemsOf(t, data, lim))
	})
	t.Run("headers claim a few bytes", func(t *testing.T) {
		got := problemsOf(t, build(100), lim)
		require.Len(t, got, 1)
		assert.Contains(t, got[0], `"bomb": unreadable:`)
	})
	t.Run("nothing is written by an upload", func(t *testing.T) {
		parent := t.TempDir()
		s, err := Open(filepath.Join(parent, "store"), &Options{Limits: lim, Sandbox: ModeDirect})
		require.NoError(t, err)
		defer s.Close()
		data := build(1 << 40)
		_, err = s.Upload(context.Background(), "bomb", bytes.NewReader(data), int64(len(data)))
		var ve *ValidationError
		require.ErrorAs(t, err, &ve)
		assertOnlyStoreSkeleton(t, parent)
	})
}

// assertOnlyStoreSkeleton checks that parent holds an empty store and
// nothing else.
func assertOnlyStoreSkeleton(t *testing.T, parent string) {
	t.Helper()
	var found []string
	require.NoError(t, filepath.Walk(parent, func(p string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(parent, p)
		found = append(found, rel)
		return nil
	}))
	assert.ElementsMatch(t, []string{".", "store", "store/.lock", "store/.tmp", "store/.calls"}, found)
}

func TestUploadOfHostileZipsWritesNothing(t *testing.T) {
	t.Parallel()
	hostile := map[string][]zfile{
		"traversal": {manifestFile(goodManifest), toolFile, {name: "../../escaped", data: []byte("pwned")}},
		"absolute":  {manifestFile(goodManifest), toolFile, {name: "/tmp/escaped", data: []byte("pwned")}},
		"symlink":   {manifestFile(goodManifest), toolFile, {name: "link", symlink: "../../"}, {name: "link/escaped", data: []byte("pwned")}},
		"venv":      {manifestFile(goodManifest), toolFile, {name: ".venv/bin/python", data: []byte("x")}},
		"wheel":     {manifestFile(goodManifest), toolFile, {name: "dep.whl", data: []byte("x")}},
		"entries":   {manifestFile(goodManifest), toolFile, {name: "a"}, {name: "b"}, {name: "c"}, {name: "d"}},
	}
	for name, files := range hostile {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			s, err := Open(filepath.Join(parent, "store"), &Options{Limits: Limits{MaxEntries: 5}, Sandbox: ModeDirect})
			require.NoError(t, err)
			defer s.Close()
			data := makeZip(t, files...)
			_, err = s.Upload(context.Background(), "hostile", bytes.NewReader(data), int64(len(data)))
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assertOnlyStoreSkeleton(t, parent)
			_, err = s.Status("hostile")
			assert.ErrorIs(t, err, ErrNotFound, "a rejected upload creates no record")
		})
	}
}
