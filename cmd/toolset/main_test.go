package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/proctest"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// jetstreamPutRace names the one goroutine nats.go v1.55.0 may leave
// behind after an Object Store Put: the Put starts a reconnect listener and
// clears its channel when it returns, and a listener scheduled only after
// that waits on a nil channel for ever. It is the library's, one per unlucky
// Put (a package publish), and not ours to stop.
var jetstreamPutRace = goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect")

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if code == 0 {
		if err := goleak.Find(jetstreamPutRace); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// skipPython is the skip message of the tests that need python3, the
// same as toolpkg's, so that a summary of the run counts them together.
const skipPython = "python3 not installed (apt-get install python3)"

// runCLI runs the command line in-process.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// sourceDir writes a package source directory with a Go tool (the test
// tool of package toolpkg, in its own module).
func sourceDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, writeSource(dir))
	return dir
}

// writeSource writes the source directory of sourceDir into dir.
func writeSource(dir string) error {
	src, err := os.ReadFile("../../toolpkg/testdata/tooldemo/main.go")
	if err != nil {
		return err
	}
	files := map[string]string{
		"manifest.yaml":    "version: 1\ntools:\n  demo:\n    runtime: go\n    executable: ./tooldemo\n    timeout_seconds: 5\n",
		"go.mod":           "module example.com/clitest\n\ngo 1.26\n",
		"tooldemo/main.go": string(src),
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

var (
	packagedOnce sync.Once
	packagedZip  []byte
	packagedErr  error
)

// packaged returns the path of the test package, built with the CLI
// once per test binary (a go build each time would cost seconds a test)
// and copied into a directory of t's own, so that no test sees another's
// changes. Its entries are stored, not deflated as toolset package writes
// them: each command given it inflates the executable again, which under
// the race detector costs a large part of a second (the zip as the
// command writes it is tested by TestPackageBuildsDistAndZipsDeterministically
// and the apply tests). The built command packages it (see runBuilt).
func packaged(t *testing.T) string {
	t.Helper()
	bin := cliBinary(t)
	packagedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolset-packaged-")
		if err != nil {
			packagedErr = err
			return
		}
		defer os.RemoveAll(dir)
		src := filepath.Join(dir, "src")
		zip := filepath.Join(dir, "demo.zip")
		if packagedErr = writeSource(src); packagedErr != nil {
			return
		}
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, "package", src, "-o", zip)
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		if stdout, stderr := out.String(), errb.String(); err != nil || !strings.Contains(stdout, "wrote "+zip) {
			packagedErr = fmt.Errorf("toolset package: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
			return
		}
		data, err := os.ReadFile(zip)
		if err != nil {
			packagedErr = err
			return
		}
		packagedZip, packagedErr = storedZip(data)
	})
	require.NoError(t, packagedErr)
	zip := filepath.Join(t.TempDir(), "demo.zip")
	require.NoError(t, os.WriteFile(zip, packagedZip, 0o644))
	return zip
}

// runBuilt runs the built command (see cliBinary) with args, for the
// commands that build and zip a package: the race detector slows
// compress/flate, which toolset package and apply spend most of their
// time in, about tenfold in the test's own process, and the commands
// start no goroutine of their own for it to watch. The platform and the
// stores they talk to stay in the test's process; cheap runs of the same
// commands (refusals, small packages) stay in-process too.
func runBuilt(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runBinary(t, cliBinary(t), args...)
}

// packagedWithManifest returns a copy of the test package (see packaged)
// whose manifest.yaml is edit's result: a package that differs from it
// only there, without building and zipping the tool again; its name is
// demo.zip, as that of packaged.
func packagedWithManifest(t *testing.T, edit func(manifest string) string) string {
	t.Helper()
	data, err := os.ReadFile(packaged(t))
	require.NoError(t, err)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	edited := false
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		body, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		if f.Name == "manifest.yaml" {
			changed := edit(string(body))
			require.NotEqual(t, string(body), changed, "the edit changes the manifest")
			body, edited = []byte(changed), true
		}
		h := f.FileHeader
		w, err := zw.CreateHeader(&h)
		require.NoError(t, err)
		_, err = w.Write(body)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.True(t, edited, "the package has a manifest.yaml")
	out := filepath.Join(t.TempDir(), "demo.zip")
	require.NoError(t, os.WriteFile(out, buf.Bytes(), 0o644))
	return out
}

// storedZip returns the zip with the same entries, each stored.
func storedZip(data []byte) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		h := f.FileHeader
		h.Method = zip.Store
		w, err := zw.CreateHeader(&h)
		if err != nil {
			return nil, err
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(w, rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, 2, "usage: toolset <command>"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"package", "dir"}, 2, "-o OUT.zip is required"},
		{[]string{"package", "-o", "x.zip"}, 2, "expected DIR, got 0 argument(s)"},
		{[]string{"validate"}, 2, "expected ZIP, got 0 argument(s)"},
		{[]string{"validate", "a.zip", "b.zip"}, 2, "expected ZIP, got 2 argument(s)"},
		{[]string{"call", "a.zip", "tool", "{not json"}, 2, `the arguments "{not json" are not valid JSON`},
		{[]string{"call", "a.zip", "tool", "{}", "--config", "novalue"}, 2, `--config "novalue": expected KEY=VALUE`},
		{[]string{"inspect", "--sandbox", "chroot", "a.zip"}, 2, `unknown sandbox mode "chroot"`},
		{[]string{"inspect", "--bogus", "a.zip"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"serve", "missing.zip"}, 1, "no such file"},
		{[]string{"serve"}, 2, "ZIP"},
		{[]string{"serve", "missing.zip", "--role", "staff"}, 2, "--role, --store and --broker go with --agent FILE"},
		{[]string{"serve", "missing.zip", "--store", "dir"}, 2, "--role, --store and --broker go with --agent FILE"},
		{[]string{"validate", "/does/not/exist.zip"}, 1, "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(tt.args...)
			assert.Equal(t, tt.code, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tt.stderr)
		})
	}
	code, stdout, _ := runCLI("--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "Exit codes: 0 success, 1 failure, 2 bad usage.")
	code, stdout, _ = runCLI("call", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "call ZIP TOOL JSON")
}

func TestValidate(t *testing.T) {
	zip := packaged(t)
	code, stdout, stderr := runCLI("validate", zip)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "valid package with 1 executable(s)\n  demo: tooldemo (go, profile standard, timeout 5s)")

	bad := filepath.Join(t.TempDir(), "bad.zip")
	require.NoError(t, os.WriteFile(bad, []byte("not a zip"), 0o644))
	code, stdout, stderr = runCLI("validate", bad)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "toolset validate: toolpkg: invalid package (1 problem):\n  - not a readable zip archive")
}

func TestInspectAndCall(t *testing.T) {
	zip := packaged(t)

	code, stdout, stderr := runCLI("inspect", zip)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `toolset "demo": 11 tool(s), sandbox `)
	assert.Contains(t, stdout, "demo__echo\n  Echo the text back, with the tool's configuration.\n  executable: demo (tooldemo, go), profile standard, timeout 5s\n  config:\n    greeting (string, default hello): Put before the text\n    api_key (string, secret)\n")
	assert.Contains(t, stdout, `"required": [`)

	code, stdout, stderr = runCLI("inspect", "--json", zip)
	require.Equal(t, 0, code, stderr)
	var info struct {
		Status string `json:"status"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &info))
	assert.Equal(t, "ready", info.Status)
	assert.Equal(t, "echo", info.Tools[0].Name)

	code, stdout, stderr = runCLI("call", zip, "echo", `{"text":"world"}`, "--config", "greeting=hey", "--config", "retries=3")
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasPrefix(stdout, "hey, world\n{"), stdout)
	assert.Contains(t, stdout, `"retries":3`)

	code, _, stderr = runCLI("call", "--name", "other", zip, "other__fail", `{"reason":"nope"}`)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "the tool returned an error (a model would see it):\ncannot do that: nope")

	code, _, stderr = runCLI("call", zip, "echo", `{"text":"x"}`, "--config", "retries=many")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--config "retries": expected an integer, got "many"`)

	code, _, stderr = runCLI("call", zip, "echo", `{"text":"x"}`, "--config", "colour=red")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `"colour" is not a configuration key of any tool`)

	code, _, stderr = runCLI("call", zip, "nosuch", `{}`)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `no tool "nosuch" in the package; `)
	assert.Contains(t, stderr, `its tools: demo__big, demo__connect`)

	code, _, stderr = runCLI("call", zip, "ehco", `{"text":"x"}`)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `no tool "ehco" in the package; did you mean "echo"?`, "a misspelt name gets the closest one")

	code, _, stderr = runCLI("call", zip, "crash", `{}`)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `tool "crash": exit code 1; stderr:`)
}

// TestBuiltBinary builds the command and runs it as a user would.
func TestBuiltBinary(t *testing.T) {
	bin := cliBinary(t)

	zip := filepath.Join(t.TempDir(), "weather-tools.zip")
	cmd := exec.Command(bin, "package", sourceDir(t), "-o", zip)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	cmd = exec.Command(bin, "call", zip, "echo", `{"text":"from a real process"}`)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.True(t, strings.HasPrefix(stdout.String(), "hello, from a real process\n"), stdout.String())

	cmd = exec.Command(bin, "call", zip, "weather-tools__fail", `{}`)
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 1, ee.ExitCode())

	err = exec.Command(bin).Run()
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode())

	// serve: an MCP client starts the command and uses its tools.
	served := mcptoolset.NewCommand(exec.Command(bin, "serve", zip, "--sandbox", "direct"), mcptoolset.WithName("weather"))
	defer served.Close()
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "client", served.Prefixed("remote"))
	require.NoError(t, err)
	assert.Contains(t, tools.Names(), "remote_weather-tools__echo")
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "remote_weather-tools__echo", Args: json.RawMessage(`{"text":"over MCP"}`)})
	require.NoError(t, err)
	text, err := toolset.ResultText(res)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(text, "hello, over MCP"), text)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "remote_weather-tools__fail", Args: json.RawMessage(`{}`)})
	_, forModel := toolset.ErrorText(err)
	assert.True(t, forModel, "a tool's error reaches the client as a result the model sees: %v", err)
	require.NoError(t, served.Close())
}

// withFile returns a copy of the zip at path with one more file.
func withFile(t *testing.T, path, name string, data []byte) string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	require.NoError(t, err)
	defer zr.Close()
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	f, err := os.Create(out)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	for _, e := range zr.File {
		require.NoError(t, zw.Copy(e))
	}
	w, err := zw.Create(name)
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return out
}

func TestInspectNeverPrintsASecretDefault(t *testing.T) {
	schema, err := os.ReadFile("../../toolpkg/testdata/hostile/schema.json")
	require.NoError(t, err)
	zip := withFile(t, packaged(t), "schema.json", schema)
	for _, args := range [][]string{{"inspect", "--json", "--sandbox", "direct", zip}, {"inspect", "--sandbox", "direct", zip}} {
		code, stdout, stderr := runCLI(args...)
		require.Equal(t, 0, code, stderr)
		assert.NotContains(t, stdout, "dflt", "the secret default of password")
		assert.Contains(t, stdout, "password")
		if args[1] == "--json" {
			assert.Contains(t, stdout, `"default": "[secret]"`)
		}
	}
}

func TestCallStaysResponsiveToSIGTERM(t *testing.T) {
	bin := cliBinary(t)
	schema, err := os.ReadFile("../../toolpkg/testdata/hostile/schema.json")
	require.NoError(t, err)
	zip := packaged(t)
	hostile := withFile(t, zip, "schema.json", schema)

	for _, mode := range []string{"direct", "auto"} {
		t.Run(mode, func(t *testing.T) {
			// A result.json that is a named pipe ends the call at once.
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "call", hostile, "fiforesult", `{}`, "--sandbox", mode)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			assert.Equal(t, 1, ee.ExitCode())
			assert.Less(t, time.Since(start), 5*time.Second)

			// SIGTERM during a call ends the command and the tool's
			// processes.
			marker := fmt.Sprintf("%d.%d", 400+time.Now().Nanosecond()%1000, os.Getpid())
			t.Cleanup(func() {
				for _, pid := range proctest.WithArg(marker) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			cmd = exec.Command(bin, "call", zip, "hang", fmt.Sprintf(`{"marker":%q}`, marker), "--sandbox", mode)
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Real time, not synctest: the command and its tool are real processes.
			require.Eventually(t, func() bool { return len(proctest.WithArg("sleep\x00"+marker)) > 0 }, 5*time.Second, 10*time.Millisecond)
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err := <-done:
				require.ErrorAs(t, err, &ee)
				assert.Equal(t, 1, ee.ExitCode())
			case <-time.After(3 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("the command ignored SIGTERM")
			}
			assert.Eventually(t, func() bool { return len(proctest.WithArg("sleep\x00"+marker)) == 0 }, 2*time.Second, 10*time.Millisecond)
		})
	}
}

func TestInspectAndCallShowNoTerminalEscapes(t *testing.T) {
	// OSC 52 writes the terminal's clipboard; CSI 2J clears the screen;
	// U+202E reverses the text that follows.
	const evil = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\u202e"
	doc := map[string]any{"tools": map[string]any{"echo": map[string]any{
		"description":   "Echo " + evil + " back.",
		"parameters":    map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}},
		"config_schema": []any{map[string]any{"key": "greeting", "type": "string", "description": "\x1b[31mred", "default": "hello"}},
	}}}
	schema, err := json.Marshal(doc)
	require.NoError(t, err)
	zip := withFile(t, packaged(t), "schema.json", schema)
	code, stdout, stderr := runCLI("inspect", "--sandbox", "direct", zip)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Echo ")
	assert.NotContains(t, stdout, "\x1b")
	assert.NotContains(t, stdout, "\u202e")

	args, err := json.Marshal(map[string]any{"text": evil})
	require.NoError(t, err)
	code, stdout, stderr = runCLI("call", "--sandbox", "direct", zip, "echo", string(args))
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `\x1b]52`)
	assert.NotContains(t, stdout, "\x1b")
	assert.NotContains(t, stdout, "\x07")
}

// TestCallSaysWhichConfigurationAToolNeeds: a tool whose required
// configuration value is not set is left out of the toolset, and
// calling it says so, naming the key, not that the package lacks it.
func TestCallSaysWhichConfigurationAToolNeeds(t *testing.T) {
	schema := `{"tools": {
  "echo": {"description": "Echo the text back.", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "config_schema": [{"key": "api_token", "type": "string", "required": true, "secret": true}, {"key": "greeting", "type": "string", "default": "hello"}]},
  "fail": {"description": "Fail.", "parameters": {"type": "object", "properties": {}}}
}}`
	zip := withFile(t, packaged(t), "schema.json", []byte(schema))
	code, _, stderr := runCLI("call", "--sandbox", "direct", zip, "echo", `{"text":"x"}`)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "tool echo needs api_token: it is in the package, left out while that required configuration is not set; give --config api_token=VALUE")
	assert.NotContains(t, stderr, "no tool")

	code, stdout, stderr := runCLI("call", "--sandbox", "direct", zip, "echo", `{"text":"x"}`, "--config", "api_token=t0ken")
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasPrefix(stdout, "hello, x\n"), stdout)
	assert.NotContains(t, stdout, "t0ken")

	code, _, stderr = runCLI("call", "--sandbox", "direct", zip, "nosuch", `{}`)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `no tool "nosuch" in the package;`)
	assert.Contains(t, stderr, `its tools: demo__fail`)
}

// TestErrorsSayEachThingOnce checks that an error the command prints
// names the command, the agent, the toolset and each package once.
func TestErrorsSayEachThingOnce(t *testing.T) {
	zip := packaged(t)
	code, _, stderr := runCLI("call", zip, "echo", `{"text":"x"}`, "--config", "colour=red")
	assert.Equal(t, 1, code)
	first, _, _ := strings.Cut(stderr, "\n")
	assert.Equal(t, `toolset call: agent "toolset-cli": Toolset#0 "toolpkg:demo": invalid configuration:`, first)

	code, _, stderr = runCLI("call", zip, "crash", `{}`)
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasPrefix(stderr, `toolset call: tool "demo__crash": `), stderr)
	for _, prefix := range []string{"toolset: ", "toolpkg: "} {
		assert.LessOrEqual(t, strings.Count(stderr, prefix), 1, "%q said twice: %s", prefix, stderr)
	}
}

// package builds DIR into DIST/<os>-<arch>/ by the platform's
// conventions and zips it the same way every time.
func TestPackageBuildsDistAndZipsDeterministically(t *testing.T) {
	src := sourceDir(t)
	dist := t.TempDir()
	first := filepath.Join(t.TempDir(), "a.zip")
	code, stdout, stderr := runBuilt(t, "package", src, "-o", first, "--dist", dist, "--os", "linux", "--arch", "arm64")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "built "+filepath.Join(dist, "linux-arm64")+" (go)")
	assert.FileExists(t, filepath.Join(dist, "linux-arm64", "tooldemo"))
	assert.FileExists(t, filepath.Join(dist, "linux-arm64", "manifest.yaml"))
	second := filepath.Join(t.TempDir(), "b.zip")
	code, _, stderr = runBuilt(t, "package", src, "-o", second, "--dist", dist, "--os", "linux", "--arch", "arm64")
	require.Equal(t, 0, code, stderr)
	a, err := os.ReadFile(first)
	require.NoError(t, err)
	b, err := os.ReadFile(second)
	require.NoError(t, err)
	assert.Equal(t, a, b, "the same source gives the same zip")

	// A build.sh wins, and gets the target in the platform's variables.
	require.NoError(t, os.WriteFile(filepath.Join(src, "build.sh"), []byte(`#!/bin/sh
cp -r "$SAM_TOOL_BUILD_OUT/../linux-arm64/." "$SAM_TOOL_BUILD_OUT/" 2>/dev/null
echo "$SAM_TOOL_TARGET_OS/$SAM_TOOL_TARGET_ARCH" > "$SAM_TOOL_BUILD_OUT/target.txt"
`), 0o755))
	code, stdout, stderr = runBuilt(t, "package", src, "-o", second, "--dist", dist, "--os", "linux", "--arch", "riscv64")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "(build.sh)")
	got, err := os.ReadFile(filepath.Join(dist, "linux-riscv64", "target.txt"))
	require.NoError(t, err)
	assert.Equal(t, "linux/riscv64\n", string(got))
}
