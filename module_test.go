package toolset_test

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// heavyModules are the module path prefixes that belong to the integrations
// (mcptoolset, toolpkg, the provider adapters) and must stay out of the
// module graph of a program that uses only the core.
var heavyModules = []string{
	"github.com/modelcontextprotocol/", // the MCP SDK (mcptoolset)
	"github.com/openai/",               // openaitools
	"github.com/anthropics/",           // anthropictools
	"google.golang.org/genai",          // geminitools
	"google.golang.org/grpc",           // pulled in by the Gemini and Anthropic SDKs
}

// heavyPackages are module paths of which no package may be built into such
// a program. toolpkg's manifest parser go.yaml.in/yaml/v3 stays in the core's
// module graph as a requirement of testify, which the core's tests use; it
// must not be linked.
var heavyPackages = []string{
	"go.yaml.in/yaml/v3",
}

// TestCoreModuleGraphIsLight makes a fresh module that requires only the core
// and imports the root package and toolsettest, and checks that none of the
// integrations' dependencies end up in its module graph.
func TestCoreModuleGraphIsLight(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("the go command is not installed: %v", err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}

	// Blank imports: the graph is what matters, not which names are used.
	main := `package main

import (
	_ "github.com/gotoolset/toolset"
	_ "github.com/gotoolset/toolset/toolsettest"
)

func main() {}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd("mod", "init", "example.com/coreonly")
	goCmd("mod", "edit",
		"-require=github.com/gotoolset/toolset@v0.0.0-00010101000000-000000000000",
		"-replace=github.com/gotoolset/toolset="+root)
	goCmd("mod", "tidy")

	modules := strings.Fields(goCmd("list", "-m", "-f", "{{.Path}}", "all"))
	for _, m := range modules {
		for _, heavy := range heavyModules {
			if strings.HasPrefix(m, heavy) {
				t.Errorf("a program that uses only the core has %s in its module graph", m)
			}
		}
	}
	built := strings.Fields(goCmd("list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "."))
	for _, m := range built {
		for _, heavy := range heavyPackages {
			if m == heavy {
				t.Errorf("a program that uses only the core builds packages of %s", m)
			}
		}
	}
	if t.Failed() {
		t.Logf("go list -m all:\n%s", strings.Join(modules, "\n"))
	}
}

// frozenInternal are the packages under internal/ of the core that the
// other modules of the repository import. A module's go.mod requires the
// core at a version, not the tree's, so what they use of these packages is
// part of the core's API: each says in its doc that its exported API is
// frozen within a major version. No other internal package of the core
// may be imported from outside it.
var frozenInternal = map[string]bool{
	"textcut":     true,
	"canonjson":   true,
	"tracefields": true,
	"atomicfile":  true,
	"proctest":    true,
}

// TestOtherModulesImportOnlyTheFrozenInternalPackages parses the imports
// of every Go file of the repository outside the core module (in every
// module, in the workspace or not) and fails on an import of an internal
// package of the core other than the frozen ones.
func TestOtherModulesImportOnlyTheFrozenInternalPackages(t *testing.T) {
	const internalPrefix = "github.com/gotoolset/toolset/internal/"
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	// moduleOf caches, per directory, the directory of its nearest go.mod.
	moduleOf := map[string]string{}
	var nearest func(dir string) string
	nearest = func(dir string) string {
		if m, ok := moduleOf[dir]; ok {
			return m
		}
		m := dir
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil && dir != root {
			m = nearest(filepath.Dir(dir))
		}
		moduleOf[dir] = m
		return m
	}
	files, others := 0, 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		files++
		mod := nearest(filepath.Dir(p))
		if mod == root {
			return nil // the go command keeps the core's own imports of internal/ in bounds
		}
		others++
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			rest, ok := strings.CutPrefix(path, internalPrefix)
			if !ok {
				continue
			}
			pkg, _, _ := strings.Cut(rest, "/")
			if !frozenInternal[pkg] {
				rel, _ := filepath.Rel(root, p)
				modRel, _ := filepath.Rel(root, mod)
				t.Errorf("%s (module %s) imports %s: only %s may be imported from outside the core module",
					rel, modRel, path, strings.Join(slices.Sorted(maps.Keys(frozenInternal)), ", "))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if others == 0 {
		t.Fatalf("parsed %d Go files, none outside the core module: the walk found no other module", files)
	}
}
