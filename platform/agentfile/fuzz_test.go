package agentfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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
