package toolpkg_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

func ExampleParseManifest() {
	_, err := toolpkg.ParseManifest([]byte(`
version: 1
tools:
  correlator:
    runtime: rust
    executable: ./correlate
    timeout_seconds: 0
`))
	fmt.Println(err)

	// As the platform's documentation writes them: no version, no
	// runtime; an unknown key is a warning.
	m, err := toolpkg.ParseManifest([]byte(`
description: Finance tools
tools:
  finance_tools:
    executable: ./finance-tools
    sandbox_prfile: standard
`))
	fmt.Println(err, m.Executables[0].Path)
	for _, w := range m.Warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// toolpkg: invalid manifest.yaml:
	//   - tools.correlator.runtime: unknown runtime "rust"; use go or python (line 5)
	//   - tools.correlator.timeout_seconds: must be a positive number of seconds, got 0 (line 7)
	// <nil> finance-tools
	// warning: tools.finance_tools.sandbox_prfile: unknown field, ignored; known fields: runtime, executable, timeout_seconds, sandbox_profile, resource_limits, description, tool_dir, schema_refresh_seconds (line 6)
}

func ExampleValidateZip() {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"manifest.yaml", "../../etc/cron.d/job", ".venv/bin/python"} {
		w, _ := zw.Create(name)
		w.Write([]byte("version: 1\ntools:\n  t: {runtime: go, executable: ./tool}\n"))
	}
	zw.Close()
	_, err := toolpkg.ValidateZip(bytes.NewReader(buf.Bytes()), int64(buf.Len()), nil)
	fmt.Println(err)
	// Output:
	// toolpkg: invalid package (3 problems):
	//   - "../../etc/cron.d/job": ".." escapes the package
	//   - ".venv/bin/python": .venv/ is a virtual environment; extract dependencies into the package instead (pip install --target)
	//   - "tool": missing: the executable of tools.t (looked for "tool", "python/bin/tool")
}

// A package with one shell-script tool, uploaded, attached to an agent and
// called.
func ExampleStore() {
	const script = `#!/bin/sh
if [ "$1" = "--schema" ]; then
  echo '{"tools": {"greet": {"description": "Say hello.", "parameters": {"type": "object", "properties": {}}}}}'
  exit 0
fi
result=$(sed -n 's/.*"result_file":"\([^"]*\)".*/\1/p' "$1")
echo '{"result": {"status": "success", "message": "hello from a package"}, "error": ""}' > "$result"
`
	var pkg bytes.Buffer
	zw := zip.NewWriter(&pkg)
	w, _ := zw.Create("manifest.yaml")
	w.Write([]byte("version: 1\ntools:\n  hello:\n    runtime: python\n    executable: hello.sh\n"))
	h := &zip.FileHeader{Name: "hello.sh"}
	h.SetMode(0o755)
	w, _ = zw.CreateHeader(h)
	w.Write([]byte(script))
	zw.Close()

	dir, _ := os.MkdirTemp("", "toolpkg-example-")
	defer os.RemoveAll(dir)
	store, err := toolpkg.Open(dir, &toolpkg.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	ctx := context.Background()
	info, err := store.Upload(ctx, "hello", bytes.NewReader(pkg.Bytes()), int64(pkg.Len()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("status:", info.Status)

	tools, err := toolset.BuildTools(ctx, "agent", store.Toolset("hello", nil))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tools:", tools.Names())
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "hello__greet", Args: []byte(`{}`)})
	if err != nil {
		log.Fatal(err)
	}
	text, _ := toolset.ResultText(res)
	fmt.Println("result:", text)
	// Output:
	// status: ready
	// tools: [hello__greet]
	// result: hello from a package
}
