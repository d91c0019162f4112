package toolsettest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
)

// defaultAgent is the agent name Build builds for.
const defaultAgent = "test-agent"

// updateFlag rewrites golden files. Its name is this package's own, so that
// a test package may define a flag named "update" of its own and import
// this one; that flag, when it is a boolean, rewrites them too (see
// updating).
var updateFlag = flag.Bool("toolsettest.update", false, "rewrite toolsettest golden files with the current tool lists")

// updating reports whether golden files are to be rewritten: with
// -toolsettest.update, or with a boolean -update flag the test binary
// defines itself, as many test packages do for golden files of their own.
func updating() bool {
	if *updateFlag {
		return true
	}
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag() && f.Value.String() == "true"
}

// Build builds the turn's tools from entries as [toolset.BuildTools] does,
// for the agent "test-agent", and fails the test at once if the build
// fails. Give it the context of a turn (see [NewRun]), or one that carries
// no run.
func Build(t testing.TB, ctx context.Context, entries ...toolset.Toolset) *toolset.ToolList {
	t.Helper()
	tools, err := toolset.BuildTools(ctx, defaultAgent, entries...)
	if err != nil {
		t.Fatalf("toolsettest: building the tools: %v", err)
	}
	return tools
}

// modelTool is one tool as a model sees it.
type modelTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ModelView returns the tools as the model sees them, in order: name,
// description and parameter schema of each, as indented JSON ending in a
// newline. It is what golden files hold. Metadata and result schemas are
// not sent to a model and are left out.
func ModelView(tools *toolset.ToolList) ([]byte, error) {
	list := make([]modelTool, 0, tools.Len())
	for t := range tools.All() {
		params, err := t.ParametersJSON()
		if err != nil {
			return nil, fmt.Errorf("toolsettest: tool %q: %w", t.Name, err)
		}
		list = append(list, modelTool{t.Name, t.Description, params})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(list); err != nil {
		return nil, fmt.Errorf("toolsettest: encoding the tool list: %w", err)
	}
	return b.Bytes(), nil
}

// AssertGolden compares the tools as the model sees them ([ModelView]) with
// the golden file at path, and reports a line diff when they differ. Run
// the tests with -toolsettest.update (or with -update, if the test package
// defines a boolean flag of that name) to write the file instead:
//
//	go test ./agent -run TestAgentTools -toolsettest.update
//
// It reports whether the tools match.
func AssertGolden(t testing.TB, path string, tools *toolset.ToolList) bool {
	t.Helper()
	got, err := ModelView(tools)
	if err != nil {
		t.Errorf("%v", err)
		return false
	}
	if updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Errorf("toolsettest: %v", err)
			return false
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Errorf("toolsettest: %v", err)
			return false
		}
		t.Logf("toolsettest: wrote %s", path)
		return true
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("toolsettest: golden file %s does not exist; create it with\n\tgo test -run '^%s$' -toolsettest.update", path, topName(t))
		return false
	}
	if err != nil {
		t.Errorf("toolsettest: %v", err)
		return false
	}
	wantText := strings.ReplaceAll(string(want), "\r\n", "\n")
	if wantText == string(got) {
		return true
	}
	t.Errorf("toolsettest: the tools the model sees differ from %s:\n%s\nIf the change is intended, update the file with\n\tgo test -run '^%s$' -toolsettest.update",
		path, lineDiff(path, wantText, "current tools", string(got)), topName(t))
	return false
}

// topName is the name of the top-level test, which -run selects.
func topName(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}
