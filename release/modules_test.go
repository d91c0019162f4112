package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeModules makes a repository of modules: dir -> go.mod text.
func writeModules(t *testing.T, mods map[string]string) string {
	t.Helper()
	repo := t.TempDir()
	for dir, gomod := range mods {
		d := filepath.Join(repo, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "go.mod"), []byte(gomod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

func TestModulesComeAfterTheSiblingsTheyRequire(t *testing.T) {
	repo := writeModules(t, map[string]string{
		".":        "module example.com/r\n",
		"a":        "module example.com/r/a\nrequire example.com/r/b v0.1.0\nrequire example.com/r v0.1.0\n",
		"b":        "module example.com/r/b\nrequire example.com/r v0.1.0\nrequire example.com/other v1.0.0\n",
		"testdata": "module example.com/r/testdata\n",
		".hidden":  "module example.com/r/hidden\n",
	})
	mods, err := findModules(repo)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range mods {
		order = append(order, m.Dir)
	}
	if got := strings.Join(order, " "); got != ". b a" {
		t.Errorf("order %q, want \". b a\"", got)
	}
	if got := mods[1].Siblings; len(got) != 1 || got[0] != "example.com/r" {
		t.Errorf("b's siblings: %q", got)
	}
	if mods[2].tag("v1.2.3") != "a/v1.2.3" || mods[0].tag("v1.2.3") != "v1.2.3" {
		t.Errorf("tags %q %q", mods[0].tag("v1.2.3"), mods[2].tag("v1.2.3"))
	}
}

func TestModulesInACycleOrMisplacedAreRefused(t *testing.T) {
	for name, mods := range map[string]map[string]string{
		"cycle": {
			".": "module example.com/r\n",
			"a": "module example.com/r/a\nrequire example.com/r/b v0.1.0\n",
			"b": "module example.com/r/b\nrequire example.com/r/a v0.1.0\n",
		},
		"path not its directory": {
			".": "module example.com/r\n",
			"a": "module example.com/r/b\n",
		},
		"no root": {
			"a": "module example.com/r/a\n",
		},
		"malformed": {
			".": "module example.com/r\nrequire (\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := findModules(writeModules(t, mods)); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestGoSumSiblingLines(t *testing.T) {
	sum := []byte("example.com/r v0.1.0 h1:a=\n" +
		"example.com/r v0.1.0/go.mod h1:b=\n" +
		"example.com/rx v1.0.0 h1:c=\n" +
		"example.com/r/a v0.1.0/go.mod h1:d=\n" +
		"golang.org/x/mod v0.9.0 h1:e=\n" +
		"golang.org/x/mod v0.10.0 h1:f=\n")
	if got, want := string(stripSiblings("example.com/r", sum)), "example.com/rx v1.0.0 h1:c=\ngolang.org/x/mod v0.9.0 h1:e=\ngolang.org/x/mod v0.10.0 h1:f=\n"; got != want {
		t.Errorf("stripSiblings:\n%s\nwant\n%s", got, want)
	}
	if got := string(onlySiblings("example.com/r", sum)); strings.Count(got, "\n") != 3 || strings.Contains(got, "rx") {
		t.Errorf("onlySiblings:\n%s", got)
	}
	sorted := string(sortSum(sum))
	if !strings.Contains(sorted, "golang.org/x/mod v0.9.0 h1:e=\ngolang.org/x/mod v0.10.0 h1:f=\n") {
		t.Errorf("sortSum orders versions as strings:\n%s", sorted)
	}
	if !strings.HasPrefix(sorted, "example.com/r v0.1.0 h1:a=\nexample.com/r v0.1.0/go.mod h1:b=\nexample.com/r/a") {
		t.Errorf("sortSum:\n%s", sorted)
	}
	if d := lineDiff("go.sum", sum, sum); d != "" {
		t.Errorf("lineDiff of equal texts: %q", d)
	}
	if d := lineDiff("go.mod", []byte("a\nb\n"), []byte("a\nc\n")); !strings.Contains(d, "-b") || !strings.Contains(d, "+c") {
		t.Errorf("lineDiff: %q", d)
	}
}
