package toolset_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
