package main

import (
	"archive/zip"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
)

// pythonZip writes a Python package as the platform's tooling builds one:
// python/bin/hello is a pip console script whose "#!" names the build
// machine's interpreter, its module is under python/, and python/sdk is a
// small stand-in for the platform's Python SDK, with the status pipe. The
// manifest is written as the platform's documentation shows: no runtime.
func pythonZip(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip(skipPython)
	}
	files := map[string]string{
		"manifest.yaml": "tools:\n  hello:\n    executable: hello\n    timeout_seconds: 10\n    description: A Python tool\n    maintainer: someone\n",
		"python/bin/hello": `#!/opt/buildbox/bin/python3.12
import sys
from hello.cli import main
if __name__ == "__main__":
    sys.exit(main())
`,
		"python/hello/__init__.py": "",
		"python/hello/cli.py": `import sys
import sdk


def greet(args, status):
    for i in range(3):
        status("step %d" % (i + 1))
    return "hello, " + args.get("name", "world")


def main():
    return sdk.run(sys.argv[1:], {"greet": ("Greet someone.", {"type": "object", "properties": {"name": {"type": "string"}}}, greet)})
`,
		"python/sdk/__init__.py": `import json
import os
import sys


def run(argv, tools):
    if argv and argv[0] == "--schema":
        json.dump({"tools": {n: {"description": d, "parameters": p} for n, (d, p, _) in tools.items()}}, sys.stdout)
        return 0
    with open(argv[0]) as f:
        ra = json.load(f)
    fd = None
    if ra.get("status_pipe"):
        fd = os.open(ra["status_pipe"], os.O_WRONLY | os.O_NONBLOCK)

    def status(text):
        if fd is not None:
            try:
                os.write(fd, (json.dumps({"status": text}) + "\n").encode())
            except OSError:
                pass
    msg = tools[ra["tool_name"]][2](ra.get("args") or {}, status)
    with open(ra["result_file"], "w") as f:
        json.dump({"result": {"_schema": "ToolResult", "_schema_version": "1.0", "status": "success",
                              "message": msg, "data": None, "data_objects": []}, "error": ""}, f)
    return 0
`,
	}
	p := filepath.Join(t.TempDir(), "pyhello.zip")
	f, err := os.Create(p)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	for name, data := range files {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(0o644)
		if strings.HasPrefix(name, "python/bin/") {
			h.SetMode(0o755)
		}
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = w.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return p
}

// A Python package built by the platform's conventions runs unchanged
// through validate, inspect, call and serve; over serve, its status
// pipe reaches the MCP client as progress.
func TestPythonPackageThroughEveryCommand(t *testing.T) {
	zipPath := pythonZip(t)
	code, stdout, stderr := runCLI("validate", zipPath)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "valid package with 1 executable(s)")
	assert.Contains(t, stdout, "hello: hello (runtime inferred, profile standard, timeout 10s)")
	assert.Contains(t, stdout, "warning: manifest.yaml: tools.hello.maintainer: unknown field, ignored; known fields: ")

	code, stdout, stderr = runCLI("inspect", zipPath, "--sandbox", "direct")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "pyhello__greet")

	code, stdout, stderr = runCLI("call", zipPath, "greet", `{"name":"Ada"}`, "--sandbox", "direct")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "hello, Ada")

	// --python names the interpreter.
	code, _, stderr = runCLI("call", zipPath, "greet", `{"name":"Ada"}`, "--sandbox", "direct", "--python", "/no/such/python3")
	require.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, `the Python interpreter "/no/such/python3" was not found`)
	code, stdout, stderr = runCLI("call", zipPath, "greet", `{"name":"Ada"}`, "--sandbox", "direct", "--python", "python3")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "hello, Ada")

	bin := cliBinary(t)
	served := mcptoolset.NewCommand(exec.Command(bin, "serve", zipPath, "--sandbox", "direct"), mcptoolset.WithName("py"))
	defer served.Close()
	var mu sync.Mutex
	var got []string
	ctx := toolset.WithProgress(context.Background(), func(p toolset.Progress) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p.Message)
	})
	tools, err := toolset.BuildTools(ctx, "client", served)
	require.NoError(t, err)
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "pyhello__greet", Args: json.RawMessage(`{"name":"MCP"}`)})
	require.NoError(t, err)
	text, err := toolset.ResultText(res)
	require.NoError(t, err)
	assert.Contains(t, text, "hello, MCP")
	// The client handles notifications on a goroutine of its own: the
	// result may overtake the last of them, which are then dropped
	// (progress is best effort); the first ones were sent long before.
	mu.Lock()
	require.NotEmpty(t, got)
	for _, m := range got {
		assert.True(t, strings.HasPrefix(m, "step "), m)
	}
	mu.Unlock()
	require.NoError(t, served.Close())
}
