package agentfile_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	builtDir  string
	builtBin  []byte
	buildErr  error
)

// toolBinary builds the test tool of package toolpkg once (a static
// binary, as a package carries) and returns its bytes.
func toolBinary(t *testing.T) []byte {
	t.Helper()
	buildOnce.Do(func() {
		if builtDir, buildErr = os.MkdirTemp("", "agentfile-test-"); buildErr != nil {
			return
		}
		out := filepath.Join(builtDir, "tooldemo")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./testdata/tooldemo")
		cmd.Dir = "../../toolpkg"
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // in the workspace: toolpkg requires its siblings at their release
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, b)
			return
		}
		builtBin, buildErr = os.ReadFile(out)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// demoPackage is a zip of the test tool with its manifest and extra
// files (schema.json replaces the tool's schema, version.txt is echoed).
func demoPackage(t *testing.T, extra map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, data []byte, mode os.FileMode) {
		h := &zip.FileHeader{Name: name, Method: zip.Store}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	add("manifest.yaml", []byte("version: 1\ntools:\n  demo:\n    runtime: go\n    executable: ./tooldemo\n    timeout_seconds: 10\n"), 0o644)
	add("tooldemo", toolBinary(t), 0o755)
	for name, data := range extra {
		add(name, []byte(data), 0o644)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// openStore opens a store in a temporary directory, running tools as
// plain subprocesses.
func openStore(t *testing.T) *toolpkg.Store {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := toolpkg.Open(dir, &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func upload(t *testing.T, s *toolpkg.Store, name string, zipData []byte) toolpkg.Info {
	t.Helper()
	info, err := s.Upload(context.Background(), name, bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// schema is a schema for the test tool with echo, crash and more tools.
func schema(more ...string) string {
	tools := []string{`"echo": {"description": "Echo the text back.", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "config_schema": [{"key": "greeting", "type": "string", "default": "hello"}]}`,
		`"crash": {"description": "Exit 1.", "parameters": {"type": "object", "properties": {}}}`}
	for _, name := range more {
		tools = append(tools, fmt.Sprintf(`%q: {"description": "The tool %s.", "parameters": {"type": "object", "properties": {}}}`, name, name))
	}
	return `{"tools": {` + strings.Join(tools, ",\n") + `}}`
}

func TestCheckReportsPackageProblems(t *testing.T) {
	s := openStore(t)
	if info := upload(t, s, "finance", demoPackage(t, nil)); info.Status != toolpkg.StatusReady {
		t.Fatalf("finance: %+v", info)
	}
	if _, err := s.Create("draft"); err != nil {
		t.Fatal(err)
	}
	if info := upload(t, s, "broken", demoPackage(t, map[string]string{"schema.json": "{not json"})); info.Status != toolpkg.StatusFailed {
		t.Fatalf("broken: %+v", info)
	}
	file := `name: a
toolsets:
  - package: nope
  - package: draft
  - package: broken
  - package: finance
    config:
      greeting: hi
      colour: blue
    tools:
      echo:
        retries: many
        verbose: "true"
        api_key: 7
        hil: true
      nosuch: {k: v}
    exclude: [crash, ghost]
    rename:
      finance__echo: say
      echo: said
    prefix: ` + strings.Repeat("p", 60) + `
  - finance
`
	f, err := agentfile.Parse([]byte(file), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = agentfile.Check(context.Background(), f, &agentfile.Options{Store: s})
	got := lines(t, err)
	want := []string{
		`3:14: unknown package "nope": the store has no toolset of that name`,
		`4:14: package "draft" is not ready (status created); an agent is deployed only with ready toolsets`,
		`5:14: package "broken" is not ready (status failed); an agent is deployed only with ready toolsets; its discovery failed: `,
		`9:7: package "finance": no tool takes the configuration key "colour"`,
		`12:9: package "finance": tool "echo": "retries" must be an integer, and the string given is not one`,
		`14:9: package "finance": tool "echo": "api_key" must be a string, not a number`,
		`16:7: package "finance" has no tool "nosuch"; its tools: `,
		`17:22: package "finance" has no tool "ghost" to exclude; its tools: `,
		`20:7: rename: package "finance" has no tool "echo" (its tools are named finance__TOOL)`,
		`21:13: prefix "` + strings.Repeat("p", 60) + `" makes the tool name "`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s...", i, got[i], want[i])
		}
	}
}

func TestReuploadReachesTheAgentOnItsNextTurn(t *testing.T) {
	s := openStore(t)
	upload(t, s, "finance", demoPackage(t, map[string]string{"version.txt": "one", "schema.json": schema()}))
	a := resolve(t, `
name: a
toolsets:
  - package: finance
    tools:
      echo: {greeting: Dear customer}
    exclude: [crash]
    timeout: 30s
`, &agentfile.Options{Store: s})
	turn := func() *toolset.ToolList {
		tools, err := toolset.BuildTools(context.Background(), a.Name, a.Toolsets...)
		if err != nil {
			t.Fatal(err)
		}
		return tools
	}
	echo := func(tools *toolset.ToolList) map[string]any {
		res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "finance__echo", Args: json.RawMessage(`{"text":"your invoice"}`)})
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]any
		if err := json.Unmarshal(res.(*toolpkg.Result).Data, &data); err != nil {
			t.Fatal(err)
		}
		return data
	}
	first := turn()
	if got := first.Names(); !reflect.DeepEqual(got, []string{"finance__echo"}) {
		t.Fatalf("first version: %v", got)
	}
	data := echo(first)
	if data["version"] != "one" || data["config"].(map[string]any)["greeting"] != "Dear customer" {
		t.Fatalf("first version's echo: %v", data)
	}

	upload(t, s, "finance", demoPackage(t, map[string]string{"version.txt": "two", "schema.json": schema("added")}))
	second := turn()
	if got := second.Names(); !reflect.DeepEqual(got, []string{"finance__echo", "finance__added"}) {
		t.Fatalf("second version: %v", got)
	}
	if data := echo(second); data["version"] != "two" {
		t.Fatalf("second version's echo: %v", data)
	}
}

func TestPlatformAgentDocumentResolves(t *testing.T) {
	s := openStore(t)
	upload(t, s, "finance", demoPackage(t, nil))
	upload(t, s, "weather", demoPackage(t, nil))
	a, err := agentfile.Load(context.Background(), "testdata/platform-agent.yaml", &agentfile.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tools, err := toolset.BuildTools(context.Background(), a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(tools.Names(), " ")
	if !strings.HasPrefix(got, "finance__echo finance__fail finance__hang") || strings.Contains(got, "finance__crash") ||
		!strings.Contains(got, "finance__fs weather__echo weather__fail") {
		t.Fatalf("tools: %s", got)
	}
	res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "finance__echo", Args: json.RawMessage(`{"text":"hi"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if txt := text(res); !strings.Contains(txt, "Dear customer, hi") {
		t.Fatalf("echo: %s", txt)
	}
}

func TestPackagePoliciesApplyToPackagedTools(t *testing.T) {
	s := openStore(t)
	upload(t, s, "finance", demoPackage(t, nil))
	a := resolve(t, "name: a\ntoolsets:\n  - package: finance\n    timeout: 300ms\n", &agentfile.Options{Store: s})
	run := toolset.NewRun("package-timeout")
	defer run.End()
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "1", Name: "finance__slow", Args: json.RawMessage(`{"ms": 20000, "until": "/nonexistent"}`)})
	if msg, ok := toolset.ErrorText(err); !ok || !strings.Contains(msg, "timed out after 300ms") {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the timeout took %v", d)
	}
}
