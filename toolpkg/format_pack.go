package toolpkg

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// PackOptions configure [Pack]. A nil *PackOptions is the zero value: every
// field takes its default.
type PackOptions struct {
	// GOOS and GOARCH are the target of Go tools (default: this machine's).
	GOOS, GOARCH string
	// Go is the go command (default: "go" on PATH).
	Go string
}

// Pack builds a package from a source directory holding manifest.yaml and
// writes the zip to w.
//
// A Go tool (runtime: go) is cross-compiled with CGO_ENABLED=0 into a
// static binary at its executable path. Its source is the Go main package in
// the first of these directories that holds .go files: <dir>/<executable>,
// <dir>/cmd/<base name of executable>, <dir> itself.
//
// When the manifest has script tools (runtime: python), every other file of
// the directory is packaged as it is, so the scripts travel with their
// dependencies (extracted beside them, e.g. with pip install --target):
// except Go sources (the source directories of Go tools, .go files,
// go.mod, go.sum), hidden files, __pycache__ and .pyc files. A .venv
// directory or a symlink is an error. A package of Go tools alone holds the
// manifest and the binaries.
//
// The zip is validated before it is written, under the default [Limits];
// the manifest is returned. A nil opts means the defaults.
func Pack(ctx context.Context, dir string, w io.Writer, opts *PackOptions) (*Manifest, error) {
	return pack(ctx, dir, w, opts, zip.Deflate)
}

// pack is [Pack], its entries written with method (zip.Deflate; tests
// that care for what the zip holds, not how, store them: inflating a
// Go binary is slow under the race detector).
func pack(ctx context.Context, dir string, w io.Writer, opts *PackOptions, method uint16) (*Manifest, error) {
	var o PackOptions
	if opts != nil {
		o = *opts
	}
	if o.GOOS == "" {
		o.GOOS = runtime.GOOS
	}
	if o.GOARCH == "" {
		o.GOARCH = runtime.GOARCH
	}
	if o.Go == "" {
		o.Go = "go"
	}
	manData, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("toolpkg: pack %s: %w", dir, unprefixed{err})
	}
	m, err := ParseManifest(manData)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "toolpkg-pack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	type entry struct {
		src  string // file to copy
		mode fs.FileMode
	}
	files := map[string]entry{}
	goSources := map[string]bool{}
	scripts := false
	for _, e := range m.Executables {
		if e.Runtime != RuntimeGo {
			scripts = true
			continue
		}
		src, err := goSourceDir(dir, e, "")
		if err != nil {
			return nil, err
		}
		goSources[src] = true
		bin := filepath.Join(tmp, e.Key)
		cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
		cmd.Dir = src
		env := append(os.Environ(), "CGO_ENABLED=0", "GOOS="+o.GOOS, "GOARCH="+o.GOARCH)
		cmd.Env = append(env, goWork(ctx, o.Go, src, env))
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("toolpkg: pack: building tools.%s (%s/%s) in %s: %v\n%s", e.Key, o.GOOS, o.GOARCH, src, err, bytes.TrimSpace(out))
		}
		files[e.Path] = entry{src: bin, mode: 0o755}
	}
	if scripts {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			name := d.Name()
			switch {
			case rel == ".":
				return nil
			case name == ".venv":
				return fmt.Errorf("toolpkg: pack: %s is a virtual environment; install the dependencies into the package instead (pip install --target %s/python ...)", p, dir)
			case strings.HasPrefix(name, ".") || name == "__pycache__":
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			case d.IsDir() && goSources[p]:
				return filepath.SkipDir
			case d.IsDir():
				return nil
			case d.Type()&fs.ModeSymlink != 0:
				return fmt.Errorf("toolpkg: pack: %s is a symlink; packages cannot hold symlinks, copy the file instead", p)
			case !d.Type().IsRegular():
				return fmt.Errorf("toolpkg: pack: %s is not a regular file", p)
			case rel == ManifestName || strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".pyc") || name == "go.mod" || name == "go.sum":
				return nil
			}
			if _, taken := files[rel]; taken {
				return nil // a built binary has this path
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			files[rel] = entry{src: p, mode: fi.Mode().Perm()}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, mode fs.FileMode, r io.Reader) error {
		h := &zip.FileHeader{Name: name, Method: method}
		h.SetMode(mode)
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		_, err = io.Copy(fw, r)
		return err
	}
	if err := add(ManifestName, 0o644, bytes.NewReader(manData)); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, err := os.Open(files[n].src)
		if err != nil {
			return nil, err
		}
		err = add(n, files[n].mode, f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if _, err := ValidateZip(bytes.NewReader(buf.Bytes()), int64(buf.Len()), nil); err != nil {
		return nil, fmt.Errorf("toolpkg: pack %s: the package would be invalid: %w", dir, unprefixed{err})
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return nil, err
	}
	return m, nil
}

// goSourceDir finds the source of a Go tool: the directory its path
// names, cmd/<its base name>, cmd/<name> (unless name is empty), then
// dir itself.
func goSourceDir(dir string, e Executable, name string) (string, error) {
	candidates := []string{
		filepath.Join(dir, filepath.FromSlash(e.Path)),
		filepath.Join(dir, "cmd", path.Base(e.Path)),
	}
	if name != "" {
		candidates = append(candidates, filepath.Join(dir, "cmd", name))
	}
	candidates = append(candidates, dir)
	for _, c := range candidates {
		if hasGoFiles(c) {
			return c, nil
		}
	}
	return "", fmt.Errorf("toolpkg: pack: no Go source for tools.%s: looked for .go files in %s", e.Key, strings.Join(candidates, ", "))
}

func hasGoFiles(dir string) bool {
	des, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, de := range des {
		if !de.IsDir() && strings.HasSuffix(de.Name(), ".go") && !strings.HasSuffix(de.Name(), "_test.go") {
			return true
		}
	}
	return false
}
