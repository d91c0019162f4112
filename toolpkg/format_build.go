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
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gotoolset/toolset/toolpkg/pkgtool"
)

// Bounds of [Build] by default.
const (
	// DefaultBuildTimeout bounds each step of a build: build.sh, each go
	// build, pip install.
	DefaultBuildTimeout = 15 * time.Minute
	// DefaultMaxBuildLog bounds how much of the steps' output reaches
	// [BuildOptions.Log]; what is past it is dropped, with a note.
	DefaultMaxBuildLog = 4 << 20
)

// BuildOptions configure [Build]. A nil *BuildOptions is the zero value:
// every field takes its default.
type BuildOptions struct {
	// Name is the toolset's name, SAM_TOOL_NAME for build.sh, and the
	// <name> of the go.mod convention's ./cmd/<name> (default: the
	// directory's base name, or its parent's when that is "src", as in
	// toolsets/NAME/src). A name given must pass [CheckName]; one taken
	// from a directory that does not fails a build.sh build only.
	Name string
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
	// Log receives the output of build.sh, go build and pip, up to
	// MaxLog bytes (default: discarded; the end of the stderr of a failed
	// step is in its error).
	Log io.Writer
	// Timeout bounds each step (default [DefaultBuildTimeout]): a step
	// still running then is killed, with every process it started.
	Timeout time.Duration
	// MaxLog bounds what reaches Log (default [DefaultMaxBuildLog]).
	MaxLog int64
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

// SDKVersion is what [Build] passes to build.sh as SAM_TOOL_SDK_VERSION:
// the version of the Go SDK, package toolpkg/pkgtool, of this library
// ([pkgtool.Version]).
const SDKVersion = pkgtool.Version

// Build builds a platform source directory (one holding manifest.yaml)
// into <out>/<os>-<arch>/, as the platform's CLI does, trying in order:
//
//   - build.sh, if present: run directly, by its own "#!" line (it must
//     have one, and its execute bit), in dir, with SAM_TOOL_NAME,
//     SAM_TOOL_BUILD_OUT (the absolute package directory, which it must
//     fill), SAM_TOOL_TARGET_OS, SAM_TOOL_TARGET_ARCH,
//     SAM_TOOL_SDK_VERSION ([SDKVersion]), and for Go builds GOOS,
//     GOARCH and CGO_ENABLED=0; manifest.yaml is copied there if it did
//     not write one;
//   - go.mod in dir, or Go tools in the manifest: each Go tool is
//     cross-compiled with CGO_ENABLED=0 and GOWORK=off (unless a go.work
//     above it has its module: then with that workspace) into its
//     executable path, from the directory named by its path, else
//     cmd/<its base name>, else (the manifest's only Go tool)
//     cmd/<name>, else dir;
//   - requirements.txt (preferred), else pyproject.toml: pip install
//     --target <package>/python (-r requirements.txt, or the directory
//     itself), with --platform and --only-binary=:all: when the target
//     is not this machine; the console scripts land in python/bin/;
//   - else the directory as it is, as Pack copies a script package: its
//     executables prebuilt (or scripts), each where the manifest says.
//
// The default target is this machine's, so that what is built runs
// here; the platform's CLI defaults to linux/arm64, its fleet's. Each
// step is bounded by Timeout; a step that fails is an error ending with
// the tail of its stderr. The package directory is made afresh, and a
// build that leaves it without the manifest's executables, or larger
// than a package may be (DefaultMaxEntries files,
// DefaultMaxUncompressedBytes bytes), fails. [ZipDir] zips it.
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
	if !targetPattern.MatchString(o.GOOS) || !targetPattern.MatchString(o.GOARCH) {
		return nil, fmt.Errorf("toolpkg: build %s: invalid target %q/%q: expected an OS and an architecture such as linux/arm64", dir, o.GOOS, o.GOARCH)
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultBuildTimeout
	}
	if o.MaxLog <= 0 {
		o.MaxLog = DefaultMaxBuildLog
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// A name taken from the directory that is no toolset's matters only
	// to build.sh, which is given it: the conventions then do without.
	var nameErr error
	if o.Name == "" {
		o.Name = filepath.Base(abs)
		if o.Name == "src" {
			o.Name = filepath.Base(filepath.Dir(abs))
		}
		if err := CheckName(o.Name); err != nil {
			nameErr = fmt.Errorf("toolpkg: build %s: the toolset's name, taken from the directory, is not one: %w; give it (BuildOptions.Name, toolset package --name)", dir, unprefixed{err})
			o.Name = ""
		}
	} else if err := CheckName(o.Name); err != nil {
		return nil, fmt.Errorf("toolpkg: build %s: %w", dir, unprefixed{err})
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
	exists := func(name string) bool {
		_, err := os.Lstat(filepath.Join(abs, name))
		return err == nil
	}
	var script string
	if exists(BuildScript) {
		if nameErr != nil {
			return nil, nameErr
		}
		if script, err = checkScript(abs); err != nil {
			return nil, err
		}
	}
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	res := &BuildResult{Dir: out, Manifest: m}
	log := &boundedLog{w: orDiscard(o.Log), left: o.MaxLog}
	run := func(what string, cmd *exec.Cmd) error {
		var tail tailBuffer
		cmd.Stdout = log
		cmd.Stderr = io.MultiWriter(&tail, log)
		if err := runStep(ctx, cmd, o.Timeout); err != nil {
			return fmt.Errorf("toolpkg: build %s: %s failed (%v)%s", dir, what, err, stderrSuffix(tail.String()))
		}
		return nil
	}
	target := []string{"SAM_TOOL_TARGET_OS=" + o.GOOS, "SAM_TOOL_TARGET_ARCH=" + o.GOARCH, "GOOS=" + o.GOOS, "GOARCH=" + o.GOARCH, "CGO_ENABLED=0"}
	var goTools []Executable
	for _, e := range m.Executables {
		if e.Runtime == RuntimeGo {
			goTools = append(goTools, e)
		}
	}
	switch {
	case script != "":
		res.Method = BuildScript
		cmd := exec.Command(script)
		cmd.Dir = abs
		cmd.Env = append(append(os.Environ(), target...),
			"SAM_TOOL_NAME="+o.Name, "SAM_TOOL_BUILD_OUT="+out, "SAM_TOOL_SDK_VERSION="+SDKVersion)
		if err := run(BuildScript, cmd); err != nil {
			return nil, err
		}
		if empty, err := isEmptyDir(out); err != nil {
			return nil, err
		} else if empty {
			return nil, fmt.Errorf("toolpkg: build %s: build.sh wrote nothing to $SAM_TOOL_BUILD_OUT (%s), where the package is made: write the tools' executables there", dir, out)
		}
	case exists("go.mod") || len(goTools) > 0:
		res.Method = BuildGo
		scripts := false
		goSources := map[string]bool{}
		for _, e := range m.Executables {
			if e.Runtime != RuntimeGo {
				scripts = true
				continue
			}
			extra := ""
			if len(goTools) == 1 && o.Name != "" {
				extra = o.Name
			}
			src, err := goSourceDir(abs, e, extra)
			if err != nil {
				return nil, err
			}
			goSources[src] = true
			cmd := exec.Command(o.Go, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(out, filepath.FromSlash(e.Path)), ".")
			cmd.Dir = src
			env := append(os.Environ(), target...)
			cmd.Env = append(env, goWork(context.Background(), o.Go, src, env))
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
	case exists("requirements.txt") || exists("pyproject.toml"):
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
		if exists("requirements.txt") {
			args = append(args, "-r", filepath.Join(abs, "requirements.txt"))
		} else {
			args = append(args, abs)
		}
		cmd := exec.Command(o.Python, args...)
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
	if err := checkBuilt(dir, out, m, res.Method); err != nil {
		return nil, err
	}
	return res, nil
}

// targetPattern is what a target's OS or architecture may be: it is put
// in a directory's name and in the environment.
var targetPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_]{0,31}$`)

// checkScript checks that dir's build.sh can be run directly: a regular
// file (no symlink), with its execute bit and a "#!" line. It returns
// its absolute path.
func checkScript(dir string) (string, error) {
	p := filepath.Join(dir, BuildScript)
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("toolpkg: build %s: build.sh is not a regular file (a symlink?): make it the script itself", dir)
	}
	if fi.Mode().Perm()&0o100 == 0 {
		return "", fmt.Errorf("toolpkg: build %s: build.sh is not executable: it is run directly, by its #! line; run chmod +x build.sh", dir)
	}
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 2)
	if _, err := io.ReadFull(f, head); err != nil || string(head) != "#!" {
		return "", fmt.Errorf("toolpkg: build %s: build.sh has no #! line: it is run directly, so its first line must name its interpreter, such as #!/usr/bin/env bash", dir)
	}
	return p, nil
}

// runStep runs a build step in a process group of its own, killed whole
// when ctx ends or timeout passes.
func runStep(ctx context.Context, cmd *exec.Cmd, timeout time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("still running after %s", timeout))
	defer cancel()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The group is killed on the way out too, so that no child the step
	// left running holds its output open; past WaitDelay the pipes are
	// closed whatever holds them.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// isEmptyDir reports whether dir holds nothing.
func isEmptyDir(dir string) (bool, error) {
	des, err := os.ReadDir(dir)
	return len(des) == 0, err
}

// hasExecutables reports whether every executable of m is a file in dir.
func hasExecutables(dir string, m *Manifest) bool {
	for _, e := range m.Executables {
		found := false
		for _, c := range e.Candidates() {
			if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(c))); err == nil && fi.Mode().IsRegular() {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// checkBuilt checks the package directory a build made: no more entries
// nor bytes than a package may hold, and each executable of the
// manifest there.
func checkBuilt(dir, out string, m *Manifest, method string) error {
	var files int
	var size int64
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		files++
		if fi, err := d.Info(); err == nil {
			size += fi.Size()
		}
		if files > DefaultMaxEntries || size > DefaultMaxUncompressedBytes {
			return fmt.Errorf("toolpkg: build %s: the %s build made more than a package may hold (%d files, %d bytes) in %s", dir, method, DefaultMaxEntries, DefaultMaxUncompressedBytes, out)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !hasExecutables(out, m) {
		var missing []string
		for _, e := range m.Executables {
			if !hasExecutables(out, &Manifest{Executables: []Executable{e}}) {
				missing = append(missing, fmt.Sprintf("tools.%s (%s)", e.Key, e.Path))
			}
		}
		if method == BuildPrebuilt {
			return fmt.Errorf("toolpkg: build %s: nothing to build (no build.sh, go.mod, requirements.txt or pyproject.toml) and no prebuilt executable for %s", dir, strings.Join(missing, ", "))
		}
		return fmt.Errorf("toolpkg: build %s: the %s build left no executable for %s in %s", dir, method, strings.Join(missing, ", "), out)
	}
	return nil
}

// boundedLog passes on at most left bytes, then says once that the rest
// is dropped. Steps' stdout and stderr write to it at once.
type boundedLog struct {
	mu   sync.Mutex
	w    io.Writer
	left int64
	cut  bool
}

func (b *boundedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if b.cut {
		return n, nil
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
		b.cut = true
	}
	b.left -= int64(len(p))
	_, _ = b.w.Write(p)
	if b.cut {
		_, _ = io.WriteString(b.w, "\n[build output cut here: more than the log's bound]\n")
	}
	return n, nil
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
	return zipDir(dir, w, zip.Deflate)
}

// zipDir is [ZipDir], its entries written with method (see [pack]).
func zipDir(dir string, w io.Writer, method uint16) error {
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
		h := &zip.FileHeader{Name: f.name, Method: method, Modified: zipTime}
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

// goWork returns the GOWORK setting of a Go tool's build in src: its
// module's own go.mod (GOWORK=off), unless a go.work above src has that
// module among its own, as in a repository of modules that require each
// other at a version not yet published: then that workspace.
func goWork(ctx context.Context, goCmd, src string, env []string) string {
	run := func(env []string, args ...string) string {
		cmd := exec.CommandContext(ctx, goCmd, args...)
		cmd.Dir = src
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return string(bytes.TrimSpace(out))
	}
	work := run(env, "env", "GOWORK")
	if work == "" || work == "off" {
		return "GOWORK=off"
	}
	gomod := run(append(env[:len(env):len(env)], "GOWORK=off"), "env", "GOMOD")
	if gomod == "" || gomod == os.DevNull {
		return "GOWORK=off"
	}
	for _, dir := range strings.Split(run(env, "list", "-m", "-f", "{{.Dir}}"), "\n") {
		if dir != "" && dir == filepath.Dir(gomod) {
			return "GOWORK=" + work
		}
	}
	return "GOWORK=off"
}
