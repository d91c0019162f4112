package agentfile_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gotoolset/toolset/platform/agentfile"
)

// docExamples returns the YAML blocks of the package documentation that
// follow a line ending in ":".
func docExamples(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur []string
	for _, line := range strings.Split(string(src), "\n") {
		if code, ok := strings.CutPrefix(line, "//\t"); ok {
			cur = append(cur, code)
			continue
		}
		if len(cur) > 0 && strings.Contains(cur[0], ":") && !strings.Contains(cur[0], ":=") {
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		}
		cur = nil
	}
	return blocks
}

func TestTheDocumentedFilesParse(t *testing.T) {
	blocks := docExamples(t)
	if len(blocks) != 3 {
		t.Fatalf("%d YAML examples in doc.go, want 3", len(blocks))
	}
	for _, b := range blocks {
		d, err := agentfile.ParseDocument([]byte(b), "doc.go")
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		agents := []*agentfile.File{d.Agent}
		if d.Manifest != nil {
			agents = d.Manifest.Agents
		}
		for _, f := range agents {
			if f == nil || len(f.Toolsets) == 0 || len(f.Packages()) == 0 || len(f.Skills) == 0 && d.Manifest == nil {
				t.Errorf("parsed %+v", f)
			}
		}
	}
}
