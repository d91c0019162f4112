package agentfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset/platform/agentfile"
)

// FuzzParse feeds Parse arbitrary bytes: it must return a file or a
// *CheckError of bounded problems, quickly, and never panic. The seed
// corpus is in testdata/fuzz/FuzzParse, and every file of testdata.
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "testdata/hostile/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil && len(data) < 4<<10 {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		file, err := agentfile.Parse(data, "fuzz.yaml")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Parse took %v", d)
		}
		if err != nil {
			var ce *agentfile.CheckError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 || len(ce.Problems) > 101 {
				t.Fatalf("error %T with bad problems: %v", err, err)
			}
			for _, p := range ce.Problems {
				if p.File != "fuzz.yaml" || len(p.Message) > 1024 || p.Line < 0 || p.Column < 0 {
					t.Fatalf("problem %+v", p)
				}
			}
			if file != nil {
				t.Fatal("a file and an error")
			}
			return
		}
		if file == nil || file.Name == "" || len(file.Toolsets) > agentfile.MaxToolsets {
			t.Fatalf("file %+v", file)
		}
		pkgs := file.Packages()
		if !slices.IsSorted(pkgs) || len(slices.Compact(slices.Clone(pkgs))) != len(pkgs) {
			t.Fatalf("Packages() = %v", pkgs)
		}
		for _, e := range file.Toolsets {
			n := 0
			if e.Local != "" {
				n++
			}
			if e.MCP != nil {
				n++
			}
			if e.Package != nil {
				n++
			}
			if n != 1 {
				t.Fatalf("entry with %d sources: %+v", n, e)
			}
		}
	})
}

// FuzzParseDocument feeds ParseDocument arbitrary bytes: it must return
// a document of one kind or a *CheckError of bounded problems, quickly,
// and never panic. The seed corpus is in
// testdata/fuzz/FuzzParseDocument, and every file of testdata.
func FuzzParseDocument(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "testdata/hostile/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil && len(data) < 4<<10 {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		d, err := agentfile.ParseDocument(data, "fuzz.yaml")
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("ParseDocument took %v", el)
		}
		if err != nil {
			var ce *agentfile.CheckError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 || len(ce.Problems) > 101 || len(ce.Warnings) > 101 {
				t.Fatalf("error %T with bad problems: %v", err, err)
			}
			if d != nil {
				t.Fatal("a document and an error")
			}
			return
		}
		if len(d.Warnings) > 101 {
			t.Fatalf("%d warnings", len(d.Warnings))
		}
		var agents []*agentfile.File
		switch d.Kind {
		case agentfile.KindAgent:
			if d.Agent == nil || d.Toolset != nil || d.Manifest != nil {
				t.Fatalf("agent document %+v", d)
			}
			agents = append(agents, d.Agent)
		case agentfile.KindToolset:
			if d.Toolset == nil || d.Toolset.Name == "" || d.Agent != nil || d.Manifest != nil {
				t.Fatalf("toolset document %+v", d)
			}
		case agentfile.KindManifest:
			if d.Manifest == nil || d.Agent != nil || d.Toolset != nil {
				t.Fatalf("manifest %+v", d)
			}
			agents = append(agents, d.Manifest.Agents...)
		default:
			t.Fatalf("kind %q", d.Kind)
		}
		for _, a := range agents {
			if a.Name == "" || len(a.Toolsets) > agentfile.MaxToolsets {
				t.Fatalf("agent %+v", a)
			}
			for _, e := range a.Toolsets {
				if (e.Local != "") == (e.Package != nil) && e.MCP == nil || e.Package != nil && e.MCP != nil {
					t.Fatalf("entry %+v", e)
				}
				for _, o := range e.Only {
					if e.Package != nil && !strings.HasPrefix(o, e.Package.Name+"__") {
						t.Fatalf("entry of %s limited to %q", e.Package.Name, o)
					}
				}
			}
		}
	})
}
