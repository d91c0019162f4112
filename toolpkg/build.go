package toolpkg

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// BuildOptions configure [Build]. A nil *BuildOptions is the zero value:
// every field takes its default.
type BuildOptions struct {
	// GOOS and GOARCH are the target (default: the environment's
	// SAM_TOOL_TARGET_OS and SAM_TOOL_TARGET_ARCH, as the platform's CLI
	// reads them, else this machine's: the platform's CLI defaults to
	// linux/arm64, its fleet's, and this runtime runs here).
	GOOS, GOARCH string
	// Out is where dist/<os>-<arch>/ is made (default: <dir>/dist).
	Out string
	// Go is the go command (default: "go" on PATH).
	Go string
	// Python is the interpreter that runs pip (default: "python3" on
	// PATH).
	Python string
	// PipArgs are added to pip install, such as "--no-index" and
	// "--find-links DIR" to install from local sources only. pip also
	// reads its PIP_* environment variables.
	PipArgs []string
	// Log receives the output of build.sh, go build and pip (default:
	// discarded; the end of it is in the error of a failed build).
	Log io.Writer
}

// How [Build] built a source directory.
const (
	BuildScript   = "build.sh"
	BuildGo       = "go"
	BuildPython   = "python"
	BuildPrebuilt = "prebuilt"
)

// BuildResult is what [Build] made.
type BuildResult struct {
	// Dir is the package directory, <out>/<os>-<arch>.
	Dir string
	// Method is how it was built: BuildScript, BuildGo, BuildPython or
	// BuildPrebuilt.
	Method string
	// Manifest is the package's manifest.
	Manifest *Manifest
}

// Build builds a platform source directory (one holding manifest.yaml)
// into <out>/<os>-<arch>/, as the platform's CLI does, trying in order:
//
//   - build.sh, if present: run with /bin/sh in dir, with
//     SAM_TOOL_TARGET_OS and SAM_TOOL_TARGET_ARCH (and GOOS, GOARCH,
//     CGO_ENABLED=0) set to the target and SAM_TOOL_OUTPUT_DIR to the
//     package directory, which it must fill; manifest.yaml is copied
//     there if it did not write one;
//   - go.mod in dir, or Go tools in the manifest: each Go tool is
//     cross-compiled with CGO_ENABLED=0 and GOWORK=off into its
//     executable path (its source is found as [Pack] finds it);
//   - pyproject.toml or requirements.txt: pip install --target
//     <package>/python (the directory itself, or -r requirements.txt),
//     with --platform and --only-binary=:all: when the target is not
//     this machine; the console scripts land in python/bin/;
//   - else the files as they are, as Pack copies a script package.
//
// The package directory is made afresh. [ZipDir] zips it.
func Build(ctx context.Context, dir string, opts *BuildOptions) (*BuildResult, error) {
	var o BuildOptions
	if opts != nil {
		o = *opts
	}
	if o.GOOS == "" {
		o.GOOS = cmp(os.Getenv("SAM_TOOL_TARGET_OS"), runtime.GOOS)
	}
	if o.GOARCH == "" {
		o.GOARCH = cmp(os.Getenv("SAM_TOOL_TARGET_ARCH"), runtime.GOARCH)
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if o.Out == "" {
		o.Out = filepath.Join(abs, "dist")
	}
	out, err := filepath.Abs(filepath.Join(o.Out, o.GOOS+"-"+o.GOARCH))
	if err != nil {
		return nil, err
	}
	manData, err := os.ReadFile(filepath.Join(abs, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("toolpkg: build %s: %w", dir, unprefixed{err})
	}
	m, err := ParseManifest(manData)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	res := &BuildResult{Dir: out, Manifest: m}
	exists := func(name string) bool {
		_, err := os.Lstat(filepath.Join(abs, name))
		return err == nil
	}
	run := func(what string, cmd *exec.Cmd) error {
		var tail tailBuffer
		// One writer for both: exec then copies them in one goroutine.
		w := io.MultiWriter(&tail, orDiscard(o.Log))
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("toolpkg: build %s: %s failed (%v)%s", dir, what, err, stderrSuffix(tail.String()))
		}
		return nil
	}
	target := []string{"SAM_TOOL_TARGET_OS=" + o.GOOS, "SAM_TOOL_TARGET_ARCH=" + o.GOARCH, "GOOS=" + o.GOOS, "GOARCH=" + o.GOARCH, "CGO_ENABLED=0"}
	hasGo := false
	for _, e := range m.Executables {
		if e.Runtime == RuntimeGo {
			hasGo = true
		}
	}
	switch {
	case exists("build.sh"):
		res.Method = BuildScript
		cmd := exec.CommandContext(ctx, "/bin/sh", "build.sh")
		cmd.Dir = abs
		cmd.Env = append(append(os.Environ(), target...), "SAM_TOOL_OUTPUT_DIR="+out)
		if err := run("build.sh", cmd); err != nil {
			return nil, err
		}
	case exists("go.mod") || hasGo:
		res.Method = BuildGo
		scripts := false
		goSources := map[string]bool{}
		for _, e := range m.Executables {
			if e.Runtime != RuntimeGo {
				scripts = true
				continue
			}
			src, err := goSourceDir(abs, e)
			if err != nil {
				return nil, err
			}
			goSources[src] = true
			cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(out, filepath.FromSlash(e.Path)), ".")
			cmd.Dir = src
			cmd.Env = append(append(os.Environ(), target...), "GOWORK=off")
			if err := run(fmt.Sprintf("go build of tools.%s (%s/%s)", e.Key, o.GOOS, o.GOARCH), cmd); err != nil {
				return nil, err
			}
		}
		if scripts {
			// Script tools beside Go ones travel with their files, as
			// Pack packages them: Go sources left out.
			if err := copyFiles(abs, out, func(p, name string, dir bool) bool {
				if dir {
					return goSources[p]
				}
				return strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum"
			}); err != nil {
				return nil, err
			}
		}
	case exists("pyproject.toml") || exists("requirements.txt"):
		res.Method = BuildPython
		args := []string{"-m", "pip", "install", "--target", filepath.Join(out, "python"), "--no-compile", "--disable-pip-version-check"}
		if o.GOOS != runtime.GOOS || o.GOARCH != runtime.GOARCH {
			tag, err := pipPlatform(o.GOOS, o.GOARCH)
			if err != nil {
				return nil, err
			}
			args = append(args, "--platform", tag, "--only-binary=:all:")
			if v := os.Getenv("SAM_TOOL_PYTHON_VERSION"); v != "" {
				args = append(args, "--python-version", v)
			}
		}
		args = append(args, o.PipArgs...)
		if exists("pyproject.toml") {
			args = append(args, abs)
		} else {
			args = append(args, "-r", filepath.Join(abs, "requirements.txt"))
		}
		cmd := exec.CommandContext(ctx, o.Python, args...)
		cmd.Dir = abs
		cmd.Env = append(os.Environ(), target...)
		if err := run("pip install", cmd); err != nil {
			return nil, err
		}
	default:
		res.Method = BuildPrebuilt
		if err := copyFiles(abs, out, nil); err != nil {
			return nil, err
		}
	}
	if _, err := os.Lstat(filepath.Join(out, ManifestName)); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(filepath.Join(out, ManifestName), manData, 0o644); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// tailBuffer keeps the last 4 KB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > maxStderr {
		t.b = t.b[len(t.b)-maxStderr:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.ToValidUTF8(string(t.b), "?") }

// pipPlatform returns pip's platform tag for a target.
func pipPlatform(goos, goarch string) (string, error) {
	switch goos + "/" + goarch {
	case "linux/amd64":
		return "manylinux2014_x86_64", nil
	case "linux/arm64":
		return "manylinux2014_aarch64", nil
	case "darwin/amd64":
		return "macosx_11_0_x86_64", nil
	case "darwin/arm64":
		return "macosx_11_0_arm64", nil
	}
	return "", fmt.Errorf("toolpkg: build: no pip platform tag for %s/%s", goos, goarch)
}

// copyFiles copies the files of a source directory into out, as Pack
// packages a script package: without hidden files, __pycache__, .pyc
// files, the dist directory, what skip refuses, and files out already
// has (built binaries).
func copyFiles(src, out string, skip func(p, name string, dir bool) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		name := d.Name()
		switch {
		case rel == ".":
			return nil
		case rel == "dist" || p == filepath.Dir(out) || p == out:
			return filepath.SkipDir
		case skip != nil && skip(p, name, d.IsDir()):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case name == ".venv":
			return fmt.Errorf("toolpkg: build: %s is a virtual environment; install the dependencies into the package instead (pip install --target %s/python ...)", p, src)
		case strings.HasPrefix(name, ".") || name == "__pycache__":
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir():
			return os.MkdirAll(filepath.Join(out, rel), 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("toolpkg: build: %s is a symlink; packages cannot hold symlinks, copy the file instead", p)
		case !d.Type().IsRegular():
			return fmt.Errorf("toolpkg: build: %s is not a regular file", p)
		case strings.HasSuffix(name, ".pyc"):
			return nil
		}
		if _, err := os.Lstat(filepath.Join(out, rel)); err == nil {
			return nil // a built binary has this path
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(out, rel), data, fi.Mode().Perm())
	})
}

// zipTime is the time of every entry [ZipDir] writes: the earliest a zip
// can say, so that a package's bytes depend on its files alone.
var zipTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// ZipDir writes the package directory dir (from [Build]) to w as a zip,
// deterministically: entries sorted by name, each with the same time,
// mode 0755 for a file with any execute bit and 0644 for the others, no
// directory entries. A symlink or a special file is an error. The zip is
// validated ([ValidateZip], default limits) before it is written.
func ZipDir(dir string, w io.Writer) error {
	type file struct {
		name, path string
		mode       fs.FileMode
	}
	var files []file
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("toolpkg: zip %s: %s is not a regular file (packages hold no symlinks)", dir, p)
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if fi.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		files = append(files, file{name: filepath.ToSlash(rel), path: p, mode: mode})
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: zipTime}
		h.SetMode(f.mode)
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		if _, err := fw.Write(data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if _, err := ValidateZip(bytes.NewReader(buf.Bytes()), int64(buf.Len()), nil); err != nil {
		return fmt.Errorf("toolpkg: zip %s: the package would be invalid: %w", dir, unprefixed{err})
	}
	_, err = w.Write(buf.Bytes())
	return err
}
