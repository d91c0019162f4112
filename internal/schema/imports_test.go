package schema

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The engine is the root module's own: the other modules of the
// repository (mcptoolset, toolpkg, ...) use it through the root package's
// public API (ParseSchema, NewRawTool, SchemaRefError, ArgumentError), so
// that one rule and one set of errors hold everywhere. Go's internal rule
// does not stop them, since they live under the root's path; this does.
func TestNoOtherModuleImportsTheEngine(t *testing.T) {
	const self = "github.com/gotoolset/toolset/internal/schema"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Skipf("not in the repository: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || moduleOf(root, path) == root {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return nil // not this test's business
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == self || strings.HasPrefix(p, self+"/") {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s imports %s; use the root package's API", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no file of another module was checked")
	}
}

// moduleOf returns the directory of the go.mod that holds path.
func moduleOf(root, path string) string {
	for dir := filepath.Dir(path); dir != root && len(dir) > len(root); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
	}
	return root
}
