package pkgtool_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg/internal/demotools"
	"github.com/gotoolset/toolset/toolpkg/pkgtool"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// gopkg builds testdata/gopkg, the demo tools packaged with pkgtool.
func gopkg(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pkgtool-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "gopkg")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = "../testdata/gopkg"
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			binPath = string(out)
		}
	})
	require.NoError(t, buildErr, binPath)
	return binPath
}

// writeArgs writes runner_args.json for a call in dir.
func writeArgs(t *testing.T, dir, tool, args string, extra map[string]any) string {
	t.Helper()
	ra := map[string]any{"tool_name": tool, "args": json.RawMessage(args), "tool_config": map[string]any{},
		"result_file": filepath.Join(dir, "result.json"), "output_dir": filepath.Join(dir, "output")}
	for k, v := range extra {
		ra[k] = v
	}
	b, err := json.Marshal(ra)
	require.NoError(t, err)
	p := filepath.Join(dir, "runner_args.json")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "output"), 0o755))
	return p
}

type resultFile struct {
	Result *struct {
		Status      string           `json:"status"`
		Message     string           `json:"message"`
		Data        map[string]any   `json:"data"`
		DataObjects []map[string]any `json:"data_objects"`
	} `json:"result"`
	Error string `json:"error"`
}

func readResult(t *testing.T, dir string) resultFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	require.NoError(t, err)
	var rf resultFile
	require.NoError(t, json.Unmarshal(b, &rf), string(b))
	return rf
}

func TestSchemaListsToolsWithTheirConfig(t *testing.T) {
	var out, errb bytes.Buffer
	code := pkgtool.Run(context.Background(), []string{"--schema"}, &out, &errb, demotools.Options, demotools.Tools...)
	require.Equal(t, 0, code, errb.String())
	var doc struct {
		Tools map[string]map[string]json.RawMessage `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Len(t, doc.Tools, len(demotools.Tools))
	require.JSONEq(t, `[{"key":"api_key","type":"string","required":true,"secret":true}]`, string(doc.Tools["secure"]["config_schema"]))
	require.JSONEq(t, `{"doc":{"required":true}}`, string(doc.Tools["count"]["artifact_params"]))
	require.Contains(t, string(doc.Tools["greet"]["parameters"]), `"required":["name"]`)
}

// A tool whose description depends on its configuration shows the
// configured one under --schema --config.
func TestSchemaWithConfigShowsTheConfiguredTool(t *testing.T) {
	type in struct {
		Q string `json:"q"`
	}
	sql := toolset.NewTool("query", "Query a database.", func(ctx context.Context, a in) (string, error) {
		return "ran on " + pkgtool.Config(ctx)["database"].(string), nil
	}, toolset.WithPrepare(func(ctx context.Context, t toolset.Tool) (toolset.Tool, bool, error) {
		if db, ok := pkgtool.Config(ctx)["database"].(string); ok {
			t.Description = "Query the " + db + " database."
		}
		return t, true, nil
	}))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"database": "sales"}`), 0o600))
	var out, errb bytes.Buffer
	require.Equal(t, 0, pkgtool.Run(context.Background(), []string{"--schema", "--config", cfg}, &out, &errb, nil, sql), errb.String())
	require.Contains(t, out.String(), `"query":{"description":"Query the sales database."`)

	args := writeArgs(t, dir, "query", `{"q": "select 1"}`, map[string]any{"tool_config": map[string]any{"database": "sales"}})
	require.Equal(t, 0, pkgtool.Run(context.Background(), []string{args}, &out, &errb, nil, sql), errb.String())
	rf := readResult(t, dir)
	require.Empty(t, rf.Error)
	require.Equal(t, "ran on sales", rf.Result.Message)
}

// Arguments the schema refuses never reach the handler: the error is
// written as the SDKs write it, exit 0 with "error" set, on one line.
func TestInvalidArgumentsAreAnErrorResult(t *testing.T) {
	dir := t.TempDir()
	args := writeArgs(t, dir, "greet", `{"name": 7, "extra": true}`, nil)
	var out, errb bytes.Buffer
	require.Equal(t, 0, pkgtool.Run(context.Background(), []string{args}, &out, &errb, demotools.Options, demotools.Tools...), errb.String())
	rf := readResult(t, dir)
	require.Nil(t, rf.Result)
	require.NotEmpty(t, rf.Error)
	require.NotContains(t, rf.Error, "\n")
}

func TestPanicIsAnErrorResult(t *testing.T) {
	boom := toolset.NewTool("boom", "Panic.", func(context.Context, struct{}) (string, error) { panic("line one\nline two") })
	dir := t.TempDir()
	args := writeArgs(t, dir, "boom", `{}`, nil)
	var out, errb bytes.Buffer
	require.Equal(t, 0, pkgtool.Run(context.Background(), []string{args}, &out, &errb, nil, boom))
	rf := readResult(t, dir)
	require.Contains(t, rf.Error, "line one | line two")
}

func TestUnknownToolAndBadUsage(t *testing.T) {
	dir := t.TempDir()
	args := writeArgs(t, dir, "nope", `{}`, nil)
	var out, errb bytes.Buffer
	require.Equal(t, 0, pkgtool.Run(context.Background(), []string{args}, &out, &errb, nil, demotools.Tools...))
	require.Contains(t, readResult(t, dir).Error, `no tool "nope"`)
	require.Equal(t, 1, pkgtool.Run(context.Background(), []string{"--bogus"}, &out, &errb, nil, demotools.Tools...))
	require.Equal(t, 1, pkgtool.Run(context.Background(), []string{filepath.Join(dir, "missing.json")}, &out, &errb, nil, demotools.Tools...))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o600))
	require.Equal(t, 1, pkgtool.Run(context.Background(), []string{filepath.Join(dir, "bad.json")}, &out, &errb, nil, demotools.Tools...))
}

// The same tool runs in-process: no invocation, no configuration, Status
// does nothing.
func TestToolRunsInProcessUnchanged(t *testing.T) {
	out, err := demotools.Greet.Execute(context.Background(), toolset.ToolCall{Name: "greet", Args: json.RawMessage(`{"name": "Ada"}`)})
	require.NoError(t, err)
	require.Equal(t, "hello Ada", out.(map[string]any)["text"])
	pkgtool.Status(context.Background(), "nothing happens")
}

// SIGTERM cancels the tool's context; the tool's cleanup result is
// written before the process exits.
func TestSIGTERMCancelsTheToolContext(t *testing.T) {
	bin := gopkg(t)
	dir := t.TempDir()
	pipe := filepath.Join(dir, "status.pipe")
	require.NoError(t, syscall.Mkfifo(pipe, 0o600))
	// Open the reading end first (read-write, so that it never sees an
	// end of file between writers), as a runtime does.
	reader, err := os.OpenFile(pipe, os.O_RDWR, 0)
	require.NoError(t, err)
	defer reader.Close()

	args := writeArgs(t, dir, "wait", `{"status": "half way"}`, map[string]any{"status_pipe": pipe})
	cmd := exec.Command(bin, args)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	// Wait for the progress line, then stop the tool.
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(reader).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		require.JSONEq(t, `{"status": "half way"}`, strings.TrimSpace(s))
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("no progress line on the status pipe")
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), errb.String())
	rf := readResult(t, dir)
	require.Contains(t, rf.Error, "canceled, cleaned up")
}

// A status pipe nobody reads never blocks the tool.
func TestStatusWithoutReaderDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "status.pipe")
	require.NoError(t, syscall.Mkfifo(pipe, 0o600))
	args := writeArgs(t, dir, "wait", `{"status": "x"}`, map[string]any{"status_pipe": pipe})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	start := time.Now()
	require.Equal(t, 0, pkgtool.Run(ctx, []string{args}, &out, &errb, nil, demotools.Wait))
	require.Less(t, time.Since(start), 10*time.Second)
	require.Contains(t, readResult(t, dir).Error, "canceled")
}

func TestResultForms(t *testing.T) {
	content := toolset.NewTool("content", "Content.", func(context.Context, struct{}) (*toolset.Content, error) {
		return &toolset.Content{Parts: []toolset.Part{{Text: "see image"}, {MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0}}}, Structured: map[string]int{"n": 1}}, nil
	})
	list := toolset.NewTool("list", "List.", func(context.Context, struct{}) ([]int, error) { return []int{1, 2}, nil })
	for _, c := range []struct{ tool, want string }{
		{"content", `"message":"see image"`},
		{"list", `"data":{"result":[1,2]}`},
	} {
		dir := t.TempDir()
		args := writeArgs(t, dir, c.tool, `{}`, nil)
		var out, errb bytes.Buffer
		require.Equal(t, 0, pkgtool.Run(context.Background(), []string{args}, &out, &errb, nil, content, list))
		b, _ := os.ReadFile(filepath.Join(dir, "result.json"))
		require.Contains(t, string(b), c.want)
		if c.tool == "content" {
			require.Contains(t, string(b), `"is_binary":true`)
			require.Contains(t, string(b), `"disposition":"inline"`)
		}
	}
}

// A tool that reports progress through the core, unaware of packaging,
// reaches the status pipe when packaged.
func TestReportProgressReachesTheStatusPipe(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "status.pipe")
	require.NoError(t, syscall.Mkfifo(pipe, 0o600))
	reader, err := os.OpenFile(pipe, os.O_RDWR, 0)
	require.NoError(t, err)
	defer reader.Close()
	step := toolset.NewTool("step", "Reports progress.", func(ctx context.Context, _ struct{}) (string, error) {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "indexing", Fraction: 0.5})
		return "done", nil
	})
	args := writeArgs(t, dir, "step", `{}`, map[string]any{"status_pipe": pipe})
	var out, errb bytes.Buffer
	require.Equal(t, 0, pkgtool.Run(context.Background(), []string{args}, &out, &errb, nil, step), errb.String())
	require.Empty(t, readResult(t, dir).Error)
	// The tool has exited: what it wrote is in the pipe, or never will be.
	require.NoError(t, reader.SetReadDeadline(time.Now().Add(5*time.Second)))
	line, err := bufio.NewReader(reader).ReadString('\n')
	require.NoError(t, err, "no progress line on the status pipe")
	require.JSONEq(t, `{"status": "indexing"}`, strings.TrimSpace(line))
}
