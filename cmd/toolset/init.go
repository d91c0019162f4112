package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/gotoolset/toolset/toolpkg"
)

// scaffolds holds the templates of toolset init: scaffold/toolset.yaml
// (the toolset's document), scaffold/go/ and scaffold/python/ (its
// source directory, one per language). Each file is a text/template
// named for the file it makes, plus ".tmpl" (so that the Go tools never
// take a template for a package of this module).
//
//go:embed scaffold
var scaffolds embed.FS

// scaffoldData is what the templates are executed with.
type scaffoldData struct {
	// Name is the toolset's name, checked by toolpkg.CheckName.
	Name string
	// Module is the name of the Python module: Name with '-' as '_'.
	Module string
	// Replace, ReplaceMCP and ReplaceToolpkg are go.mod's replace
	// targets (quoted) of the library's modules, or empty.
	Replace, ReplaceMCP, ReplaceToolpkg string
}

// pythonReserved are names a Python tool's module may not take: Python's
// keywords, and the standard modules the interpreter and the scaffold's
// protocol module import, which a package of that name under python/
// (first on PYTHONPATH) would hide.
var pythonReserved = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
	"abc": true, "codecs": true, "collections": true, "encodings": true, "enum": true, "functools": true,
	"genericpath": true, "io": true, "json": true, "keyword": true, "linecache": true, "operator": true,
	"os": true, "posixpath": true, "re": true, "reprlib": true, "site": true, "stat": true, "sys": true,
	"traceback": true, "types": true, "typing": true, "warnings": true, "pkgproto": true, "test": true,
}

// cmdInit scaffolds a toolset as the reference platform's CLI (sam
// toolset init NAME --lang go|python) does: DIR/toolsets/NAME.yaml, the
// toolset's document (kind: toolset, name, description, spec.config),
// and DIR/toolsets/NAME/src/, a source directory that toolset package
// builds as it is, by its build.sh (bash, set -euo pipefail, executable):
//
//   - Go: main.go, a tool made with toolset.NewTool run by
//     toolpkg/pkgtool; go.mod and go.sum; build.sh, a static go build
//     into $SAM_TOOL_BUILD_OUT for $SAM_TOOL_TARGET_OS/ARCH (with
//     -mod=mod, so that the first build records the indirect
//     requirements in go.mod); manifest.yaml. Until the library is
//     published, --sdk-replace PATH (a checkout of it) writes go.mod's
//     replace directives for its three modules; go.sum holds the sums of
//     their dependencies (the checkout's, else this command's), so that
//     a machine with those modules in its cache builds offline.
//   - Python: pyproject.toml; src/MODULE/ (MODULE is NAME with '-' as
//     '_'), with tool.py, the tool, on pkgproto.py, a small stand-alone
//     module (standard library only) that speaks the package protocol:
//     --schema [--config FILE], runner_args.json to result.json, progress
//     on the status pipe, best effort; build.sh, which copies the module
//     under python/, writes python/bin/NAME and pip installs the
//     dependencies pyproject.toml lists (for the target), needing no
//     build backend nor network for the scaffold as it is; manifest.yaml.
//
// NAME must pass toolpkg.CheckName (and, for Python, make an importable
// module that hides no standard one the tool needs). No file is
// overwritten: if any of them exists, none is written.
func cmdInit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("init", flag.ContinueOnError)
	lang := flags.String("lang", "", "the tool's language: go or python")
	sdk := flags.String("sdk-replace", "", "Go: a checkout of github.com/gotoolset/toolset for go.mod to use (until the library is published)")
	pos, err := parse(flags, args, -1, "NAME [DIR]")
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usagef("expected NAME [DIR], got %d argument(s)", len(pos))
	}
	name, dir := pos[0], "."
	if len(pos) == 2 {
		dir = pos[1]
	}
	if err := toolpkg.CheckName(name); err != nil {
		return usagef("%v", strings.TrimPrefix(err.Error(), "toolpkg: "))
	}
	d := scaffoldData{Name: name, Module: strings.ReplaceAll(name, "-", "_")}
	switch *lang {
	case "go":
	case "python":
		if c := d.Module[0]; c >= '0' && c <= '9' {
			return usagef("--lang python: the name %q makes the module %q, which Python cannot import: start it with a letter", name, d.Module)
		}
		if pythonReserved[d.Module] {
			return usagef("--lang python: the name %q makes the module %q, a Python keyword or a standard module it would hide: choose another", name, d.Module)
		}
		if *sdk != "" {
			return usagef("--sdk-replace is for --lang go")
		}
	case "":
		return usagef("--lang go or --lang python is required")
	default:
		return usagef("--lang %q: expected go or python", *lang)
	}
	if *sdk != "" {
		if d.Replace, d.ReplaceMCP, d.ReplaceToolpkg, err = sdkReplace(*sdk); err != nil {
			return err
		}
	}
	files, err := scaffoldFiles(*lang, d)
	if err != nil {
		return err
	}
	if *lang == "go" {
		// The sums of the library's dependencies, so that the first build
		// needs neither the checksum database nor, with a module cache,
		// the network.
		sum, err := goSum(*sdk)
		if err != nil {
			return err
		}
		files["toolsets/"+name+"/src/go.sum"] = scaffoldFile{data: sum, mode: 0o644}
	}
	// Every file is new: none is written when any is there already.
	for rel := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists: toolset init writes only new files (remove it, or choose another NAME or DIR)", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	var written []string
	for _, rel := range sortedKeys(files) {
		f := files[rel]
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := writeNew(p, f.data, f.mode); err != nil {
			return err
		}
		written = append(written, p)
	}
	for _, p := range written {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	src := filepath.Join(dir, "toolsets", name, "src")
	fmt.Fprintf(stdout, "build it with: toolset package %s -o %s.zip\n", src, name)
	if *lang == "go" && *sdk == "" {
		fmt.Fprintf(stderr, "note: %s needs github.com/gotoolset/toolset, not published yet: give toolset init --sdk-replace PATH (a checkout of it), or add the replace directives the file shows\n", filepath.Join(src, "go.mod"))
	}
	return nil
}

// scaffoldFile is one file toolset init writes.
type scaffoldFile struct {
	data []byte
	mode fs.FileMode
}

// scaffoldFiles executes the templates of lang with d, by the path each
// file takes under DIR.
func scaffoldFiles(lang string, d scaffoldData) (map[string]scaffoldFile, error) {
	src := "toolsets/" + d.Name + "/src/"
	paths := map[string]string{"scaffold/toolset.yaml.tmpl": "toolsets/" + d.Name + ".yaml"}
	switch lang {
	case "go":
		for _, f := range []string{"main.go", "go.mod", "build.sh", "manifest.yaml"} {
			paths["scaffold/go/"+f+".tmpl"] = src + f
		}
	case "python":
		for _, f := range []string{"pyproject.toml", "build.sh", "manifest.yaml"} {
			paths["scaffold/python/"+f+".tmpl"] = src + f
		}
		mod := src + "src/" + d.Module + "/"
		paths["scaffold/python/init.py.tmpl"] = mod + "__init__.py"
		paths["scaffold/python/tool.py.tmpl"] = mod + "tool.py"
		paths["scaffold/python/pkgproto.py.tmpl"] = mod + "pkgproto.py"
	}
	files := map[string]scaffoldFile{}
	for tmpl, rel := range paths {
		text, err := scaffolds.ReadFile(tmpl)
		if err != nil {
			return nil, err
		}
		t, err := template.New(tmpl).Option("missingkey=error").Parse(string(text))
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, d); err != nil {
			return nil, err
		}
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(rel, "/build.sh") {
			mode = 0o755
		}
		files[rel] = scaffoldFile{data: buf.Bytes(), mode: mode}
	}
	return files, nil
}

// sdkReplace checks that dir is a checkout of the library and returns
// the quoted replace targets of its three modules.
func sdkReplace(dir string) (root, mcp, pkg string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", "", err
	}
	if _, err := os.Stat(filepath.Join(abs, "toolpkg", "pkgtool", "pkgtool.go")); err != nil {
		return "", "", "", fmt.Errorf("--sdk-replace %s: not a checkout of github.com/gotoolset/toolset (no toolpkg/pkgtool/pkgtool.go)", dir)
	}
	if strings.ContainsAny(abs, "\n\r\x00") {
		return "", "", "", fmt.Errorf("--sdk-replace %q: a path go.mod cannot hold", dir)
	}
	return strconv.Quote(abs), strconv.Quote(filepath.Join(abs, "mcptoolset")), strconv.Quote(filepath.Join(abs, "toolpkg")), nil
}

// writeNew writes a file that must not exist yet.
func writeNew(p string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// The mode, whatever the umask: build.sh must be executable.
	return os.Chmod(p, mode)
}

// cliGoSum is this command's go.sum: it holds the sums of every module
// the library's toolpkg depends on, at the versions this command was
// built with.
//
//go:embed go.sum
var cliGoSum []byte

// goSum returns the go.sum of a Go scaffold: with a checkout of the
// library, the lines of its modules' go.sum files (root, mcptoolset,
// toolpkg), else this command's own; sorted, without duplicates. Lines
// a build does not need are harmless (go mod tidy drops them).
func goSum(sdk string) ([]byte, error) {
	sums := [][]byte{cliGoSum}
	if sdk != "" {
		sums = nil
		for _, m := range []string{".", "mcptoolset", "toolpkg"} {
			data, err := os.ReadFile(filepath.Join(sdk, m, "go.sum"))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("--sdk-replace: %w", err)
			}
			sums = append(sums, data)
		}
	}
	seen := map[string]bool{}
	var lines []string
	for _, data := range sums {
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
	}
	slices.Sort(lines)
	return []byte(strings.Join(lines, "\n") + "\n"), nil
}
