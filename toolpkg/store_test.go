package toolpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// scriptTool is a #!/bin/sh tool: schemaCmd is what it runs for --schema;
// a call answers with a greeting naming the tool.
func scriptTool(schemaCmd string) string {
	return `#!/bin/sh
if [ "$1" = "--schema" ]; then
` + schemaCmd + `
exit 0
fi
result=$(sed -n 's/.*"result_file":"\([^"]*\)".*/\1/p' "$1")
name=$(sed -n 's/.*"tool_name":"\([^"]*\)".*/\1/p' "$1")
printf '{"result":{"_schema":"ToolResult","_schema_version":"1.0","status":"success","message":"hello from sh: %s","data":{"shell":true},"data_objects":[]},"error":""}' "$name" > "$result"
`
}

const scriptManifest = "version: 1\ntools:\n  sh:\n    runtime: python\n    executable: greet.sh\n    timeout_seconds: 2\n"

// scriptPackage is a package with one shell tool under python/bin/.
func scriptPackage(t testing.TB, schemaCmd string) []byte {
	return makeZip(t, manifestFile(scriptManifest), zfile{name: "python/bin/greet.sh", data: []byte(scriptTool(schemaCmd)), mode: 0o755})
}

func schemaEcho(doc string) string { return "cat <<'EOF'\n" + doc + "\nEOF" }

func TestScriptTool(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		info := upload(t, s, "shell", scriptPackage(t, schemaEcho(`{"tools":{"greet":{"description":"Say hello.","parameters":{"type":"object","properties":{"name":{"type":"string"}}}}}}`)))
		require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
		assert.Equal(t, "python/bin/greet.sh", info.Executables[0].File)
		res, err := callTool(context.Background(), t, s.Toolset("shell", nil), "shell__greet", `{"name":"x"}`)
		require.NoError(t, err)
		assert.Equal(t, "hello from sh: greet\n{\"shell\":true}", res.(*Result).ModelText())
	})
}

func TestDiscoveryFailures(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"bad JSON", `echo '{"tools": {'`, `executable "sh": --schema printed invalid JSON (unexpected end of JSON input); output starts "{\"tools\": {"`},
		{"timeout", `sleep 5`, `executable "sh": --schema did not finish within 1s (discovery timeout)`},
		{"exit 1", `echo boom >&2; exit 1`, "executable \"sh\": --schema failed (exit code 1); stderr:\nboom"},
		{"empty description", schemaEcho(`{"tools":{"t":{"description":"  "}}}`), `executable "sh": tool "t": description is empty; the model needs one to know when to use the tool`},
		{"missing description", schemaEcho(`{"tools":{"t":{}}}`), `executable "sh": tool "t": description is empty`},
		{"no tools", schemaEcho(`{"tools":{}}`), `executable "sh": --schema output lists no tools`},
		{"tools not an object", schemaEcho(`{"tools":["t"]}`), `executable "sh": --schema output: "tools" must be an object mapping tool names to their schemas`},
		{"reserved config key", schemaEcho(`{"tools":{"t":{"description":"d","config_schema":[{"key":"hil","type":"boolean"}]}}}`),
			`executable "sh": tool "t": config_schema: key "hil" is reserved (auth, hil, required_scopes are reserved keys)`},
		{"bad config type", schemaEcho(`{"tools":{"t":{"description":"d","config_schema":[{"key":"ratio","type":"number"}]}}}`),
			`executable "sh": tool "t": config_schema: key "ratio": type "number" is not supported; use string, integer or boolean`},
		{"bad config default", schemaEcho(`{"tools":{"t":{"description":"d","config_schema":[{"key":"n","type":"integer","default":"ten"}]}}}`),
			`executable "sh": tool "t": config_schema: key "n": default expected integer, got string "ten"`},
		{"parameters not an object schema", schemaEcho(`{"tools":{"t":{"description":"d","parameters":{"type":"string"}}}}`),
			`executable "sh": tool "t": parameters: the arguments must be an object ("type": "object"), got "type": "string"`},
		{"invalid JSON Schema", schemaEcho(`{"tools":{"t":{"description":"d","parameters":{"type":"object","properties":{"a":{"type":"nope"}}}}}}`),
			`executable "sh": tool "t": parameters: invalid JSON Schema`},
		{"bad timeout", schemaEcho(`{"tools":{"t":{"description":"d","timeout_seconds":-1}}}`),
			`executable "sh": tool "t": timeout_seconds must be a positive integer, got -1`},
		{"bad tool name", schemaEcho(`{"tools":{"a b":{"description":"d"}}}`),
			`executable "sh": tool "a b": invalid name; tool names must match ^[a-zA-Z0-9_-]{1,64}$`},
		{"name too long for a model", schemaEcho(`{"tools":{"` + strings.Repeat("x", 60) + `":{"description":"d"}}}`),
			`the model would see "shell__` + strings.Repeat("x", 60) + `", 67 characters; names may have at most 64`},
	}
	s := openStore(t, Options{Sandbox: ModeDirect, DiscoveryTimeout: time.Second})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := upload(t, s, "shell", scriptPackage(t, tt.schema))
			assert.Equal(t, StatusFailed, info.Status)
			require.NotEmpty(t, info.Errors)
			assert.Contains(t, strings.Join(info.Errors, "\n"), tt.want)
			errs, err := s.DiscoveryErrors("shell")
			require.NoError(t, err)
			assert.Equal(t, info.Errors, errs)

			_, err = s.Toolset("shell", nil).GetTools(context.Background())
			var nr *NotReadyError
			require.ErrorAs(t, err, &nr)
			assert.Equal(t, StatusFailed, nr.Status)
			assert.Contains(t, err.Error(), `toolset "shell": not ready (status failed): discovery failed:`)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestDiscoveryReportsEveryProblem(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect})
	info := upload(t, s, "shell", scriptPackage(t, schemaEcho(`{"tools":{
		"a":{"description":""},
		"b":{"description":"ok","config_schema":[{"key":"auth","type":"string"},{"key":"x","type":"date"}]},
		"c":{"description":"fine"}}}`)))
	assert.Equal(t, StatusFailed, info.Status)
	assert.Equal(t, []string{
		`executable "sh": tool "a": description is empty; the model needs one to know when to use the tool`,
		`executable "sh": tool "b": config_schema: key "auth" is reserved (auth, hil, required_scopes are reserved keys)`,
		`executable "sh": tool "b": config_schema: key "x": type "date" is not supported; use string, integer or boolean`,
	}, info.Errors)
	assert.Empty(t, info.Tools, "a failed toolset offers no tools")
}

func TestStatusLifecycle(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect})
	ctx := context.Background()
	ts := s.Toolset("life", nil) // an agent may reference it before it exists

	_, err := ts.GetTools(ctx)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Status("life")
	require.ErrorIs(t, err, ErrNotFound)

	info, err := s.Create("life")
	require.NoError(t, err)
	assert.Equal(t, StatusCreated, info.Status)
	_, err = s.Create("life")
	assert.EqualError(t, err, `toolpkg: toolset "life" already exists (status created)`)
	_, err = ts.GetTools(ctx)
	assert.EqualError(t, err, `toolpkg: toolset "life": not ready (status created): no package was uploaded yet`)

	// A slow discovery shows pending.
	slow := scriptPackage(t, "sleep 1\n"+schemaEcho(`{"tools":{"greet":{"description":"Say hello."}}}`))
	done := make(chan Info)
	go func() { done <- upload(t, s, "life", slow) }()
	require.Eventually(t, func() bool { st, _ := s.Status("life"); return st == StatusPending }, 2*time.Second, 5*time.Millisecond)
	_, err = ts.GetTools(ctx)
	assert.EqualError(t, err, `toolpkg: toolset "life": not ready (status pending): discovery is running; its tools are available once it finishes`)
	info = <-done
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 1, info.Version)
	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, "life__greet", tools[0].Name)

	// ready → pending → failed, then back to ready.
	info = upload(t, s, "life", scriptPackage(t, `echo nope`))
	assert.Equal(t, StatusFailed, info.Status)
	assert.Equal(t, 2, info.Version)
	info = upload(t, s, "life", scriptPackage(t, schemaEcho(`{"tools":{"hello":{"description":"Say hello again."}}}`)))
	assert.Equal(t, StatusReady, info.Status)
	tools, err = ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, "life__hello", tools[0].Name, "the re-upload is picked up with no change to the agent")

	names := func() []string {
		var n []string
		for _, i := range s.List() {
			n = append(n, i.Name+":"+string(i.Status))
		}
		return n
	}
	_, err = s.Create("other")
	require.NoError(t, err)
	assert.Equal(t, []string{"life:ready", "other:created"}, names())

	require.NoError(t, s.Remove("life"))
	st, err := s.Status("life")
	require.NoError(t, err)
	assert.Equal(t, StatusRemoved, st)
	_, err = ts.GetTools(ctx)
	assert.EqualError(t, err, `toolpkg: toolset "life": not ready (status removed): it was removed`)
	assert.Equal(t, []string{"other:created"}, names())
	assert.NoDirExists(t, filepath.Join(s.Dir(), "life", "v3"))
	assert.ErrorIs(t, s.Remove("never"), ErrNotFound)

	info = upload(t, s, "life", scriptPackage(t, schemaEcho(`{"tools":{"greet":{"description":"Back."}}}`)))
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 4, info.Version, "version numbers are never reused")
}

func TestInvalidNames(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect})
	for _, name := range []string{"", ".hidden", "a/b", "..", "_x", strings.Repeat("a", 65), "sp ace"} {
		_, err := s.Create(name)
		assert.ErrorContains(t, err, "invalid toolset name", name)
		_, err = s.Upload(context.Background(), name, bytes.NewReader(nil), 0)
		assert.ErrorContains(t, err, "invalid toolset name", name)
	}
}

func TestFailedValidationKeepsThePreviousVersion(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := readyToolset(t, s, "demo", nil)
	bad := makeZip(t, manifestFile(demoManifest("")), zfile{name: "../x", data: []byte("x")})
	_, err := s.Upload(context.Background(), "demo", bytes.NewReader(bad), int64(len(bad)))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	info, err := s.Info("demo")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 1, info.Version)
	_, err = callTool(context.Background(), t, ts, "demo__echo", `{"text":"still here"}`)
	require.NoError(t, err)
}

func TestStorePersistsAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	readyToolset(t, s, "demo", nil)
	before, err := s.Info("demo")
	require.NoError(t, err)

	_, err = Open(dir, opts)
	assert.ErrorContains(t, err, "is in use by another process", "one owner at a time")
	require.NoError(t, s.Close())

	// A crash left a half-extracted upload and a work directory behind.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".tmp", "junk"), []byte("x"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".calls", "call-1", "work"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "demo", "v9"), 0o755))

	s2, err := Open(dir, opts)
	require.NoError(t, err)
	after, err := s2.Info("demo")
	require.NoError(t, err)
	assert.Equal(t, before.Status, after.Status)
	assert.Equal(t, before.Tools, after.Tools)
	assert.Equal(t, before.Executables, after.Executables)
	assert.NoFileExists(t, filepath.Join(dir, ".tmp", "junk"))
	assert.NoDirExists(t, filepath.Join(dir, ".calls", "call-1"))
	assert.NoDirExists(t, filepath.Join(dir, "demo", "v9"), "a version that never became current is deleted")
	_, err = callTool(context.Background(), t, s2.Toolset("demo", nil), "demo__echo", `{"text":"again"}`)
	require.NoError(t, err)
	require.NoError(t, s2.Close())

	// A process that stopped during discovery left the toolset pending,
	// in the state.json of an earlier release (no serving version, no
	// history): it is discovered again, not failed.
	statePath := filepath.Join(dir, "demo", "state.json")
	data, err := os.ReadFile(statePath)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(data, &rec))
	rec["status"] = "pending"
	delete(rec, "tools")
	delete(rec, "serving")
	delete(rec, "versions")
	delete(rec, "uploaded")
	data, _ = json.Marshal(rec)
	require.NoError(t, os.WriteFile(statePath, data, 0o644))
	s3, err := Open(dir, opts)
	require.NoError(t, err)
	defer s3.Close()
	info, err := s3.Wait(context.Background(), "demo")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	assert.Equal(t, 1, info.Serving)
	assert.Equal(t, before.Tools, info.Tools)
}

const configSchema = `{"tools":{"t":{"description":"d","config_schema":[
	{"key":"api_url","type":"string","required":true,"description":"The API"},
	{"key":"port","type":"integer","default":443},
	{"key":"debug","type":"boolean"},
	{"key":"token","type":"string","secret":true,"required":true}]}}}`

func TestConfigIsChecked(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect})
	info := upload(t, s, "cfg", scriptPackage(t, schemaEcho(configSchema)))
	require.Equal(t, StatusReady, info.Status, "%v", info.Errors)

	// Text is coerced by the field's type ("80" for an integer); auth is
	// reserved with a meaning, and "x" is not one of its forms.
	_, err := s.Toolset("cfg", map[string]any{"port": "eighty", "debug": 1, "token": 123456789, "colour": "red", "auth": "x-auth-value"}).GetTools(context.Background())
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{
		`"api_url" is required by tool "t": string (The API)`,
		`"auth": expected true, "run" or an object {"oauth_token", "headers", "from_run"}, got a string (not shown)`,
		`"colour" is not a configuration key of any tool; known keys: "api_url", "debug", "port", "token"`,
		`"debug": expected boolean, got number 1`,
		`"port": expected integer, got string "eighty"`,
		`"token": expected string, got a secret value (not shown)`,
	}, ce.Problems)
	assert.NotContains(t, err.Error(), "123456789")
	assert.NotContains(t, err.Error(), "x-auth-value")

	_, err = s.Toolset("cfg", map[string]any{"api_url": "https://x"}).GetTools(context.Background())
	assert.EqualError(t, err, "toolpkg: toolset \"cfg\": invalid configuration:\n  - \"token\" is required by tool \"t\": string")
	// Built for a turn, the error names the agent, the toolset and each
	// package once.
	_, err = toolset.BuildTools(context.Background(), "a", s.Toolset("cfg", map[string]any{"api_url": "https://x"}))
	require.ErrorAs(t, err, &ce)
	assert.EqualError(t, err, "toolset: agent \"a\": toolset \"cfg\" (toolpkg, entry 0): invalid configuration:\n  - \"token\" is required by tool \"t\": string")

	tools, err := s.Toolset("cfg", map[string]any{"api_url": "https://x", "token": "t0k3n", "port": 8080.0}).GetTools(context.Background())
	require.NoError(t, err, "integers may come as float64 from JSON")
	require.Len(t, tools, 1)
}

func TestToolConfigReachesTheTool(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := readyToolset(t, s, "demo", map[string]any{"retries": json.Number("5"), "api_key": "k-123"})
	res, err := callTool(context.Background(), t, ts, "demo__echo", `{"text":"x"}`)
	require.NoError(t, err)
	// The tool got api_key (unset keys are left out); the value it echoed
	// is a secret, hidden from its result.
	assert.Equal(t, map[string]any{"greeting": "hello", "retries": float64(5), "api_key": "[secret]"}, resultData(t, res)["config"])
}

func TestSecretsNeverReachErrorsOrLogs(t *testing.T) {
	const secret = "sk-very-secret-42"
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := openStore(t, Options{Sandbox: ModeDirect, Logger: logger})
	ctx := context.Background()

	upload(t, s, "cfg", scriptPackage(t, schemaEcho(configSchema)))
	_, err := s.Toolset("cfg", map[string]any{"token": []string{secret}}).GetTools(ctx)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)

	ts := readyToolset(t, s, "demo", map[string]any{"api_key": secret})
	_, err = callTool(ctx, t, ts, "demo__crash", `{}`)
	require.Error(t, err, "the tool prints the key to stderr and exits 1")
	assert.NotContains(t, err.Error(), secret)
	assert.Contains(t, err.Error(), "[secret]")
	_, err = callTool(ctx, t, ts, "demo__fail", `{"reason":"`+secret+`"}`)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret, "a tool's error text is redacted too")

	assert.Contains(t, logs.String(), "call finished", "calls are logged")
	assert.NotContains(t, logs.String(), secret)
}

func TestUnknownToolsetAndClosedStore(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{Sandbox: ModeDirect})
	require.NoError(t, err)
	_, err = s.Toolset("nope", nil).GetTools(context.Background())
	assert.EqualError(t, err, `toolpkg: toolset "nope": no such toolset`)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = toolset.BuildTools(context.Background(), "a", s.Toolset("nope", nil))
	assert.EqualError(t, err, `toolset: agent "a": toolset "nope" (toolpkg, entry 0): no such toolset`)
	assert.Equal(t, "toolpkg:nope", s.Toolset("nope", nil).Label())
	require.NoError(t, s.Close())
	_, err = s.Create("x")
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, s.Remove("x"), ErrClosed)
}

func TestBuildToolsWithALocalToolset(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect})
	pkg := readyToolset(t, s, "demo", nil)
	local := toolset.NewFunction(toolset.NewTool("echo", "Local echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return "local " + in.Text, nil
	}))
	_, err := toolset.BuildTools(context.Background(), "a", local, toolset.NewFiltered(pkg, func(_ context.Context, t toolset.Tool) (bool, error) {
		return t.Name == "demo__echo", nil
	}))
	require.NoError(t, err)

	_, err = toolset.BuildTools(context.Background(), "a", local.Prefixed("demo_"), pkg)
	var nc *toolset.NameConflictError
	require.True(t, errors.As(err, &nc))
	assert.Contains(t, err.Error(), `"demo__echo" contributed by: Prefixed#0 "demo_", Toolset#1 "toolpkg:demo"`)
}

func TestDamagedStateFailsOnlyItsToolset(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	upload(t, s, "good", demoPackage(t, demoManifest("")))
	upload(t, s, "bad", demoPackage(t, demoManifest("")))
	upload(t, s, "bad", demoPackage(t, demoManifest(""))) // version 2
	require.NoError(t, s.Close())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad", "state.json"), []byte(`{"name":"bad","status":"ready","vers`), 0o644))
	s2, err := Open(dir, opts)
	require.NoError(t, err, "one damaged record does not take the store down")
	defer s2.Close()

	info, err := s2.Info("bad")
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, info.Status)
	require.Len(t, info.Errors, 1)
	assert.Contains(t, info.Errors[0], "state.json cannot be read (unexpected end of JSON input)")
	_, err = s2.Toolset("bad", nil).GetTools(context.Background())
	var nr *NotReadyError
	require.ErrorAs(t, err, &nr)
	assert.DirExists(t, filepath.Join(dir, "bad", "v2"), "the damaged toolset's files are kept")

	good, err := s2.Info("good")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, good.Status)
	_, err = callTool(context.Background(), t, s2.Toolset("good", nil), "good__echo", `{"text":"x"}`)
	require.NoError(t, err)

	// A new upload replaces the record, with a version never used before.
	info = upload(t, s2, "bad", demoPackage(t, demoManifest("")))
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 3, info.Version)
}

// TestNilToolsetIsAnError uses a nil *Toolset as a toolset: its methods and
// BuildTools report the nil instead of panicking.
func TestNilToolsetIsAnError(t *testing.T) {
	var ts *Toolset
	assert.Equal(t, "", ts.Name())
	assert.Equal(t, "", ts.Label())
	_, err := ts.GetTools(context.Background())
	require.EqualError(t, err, "toolpkg: nil *Toolset")
	_, err = toolset.BuildTools(context.Background(), "a", ts)
	require.ErrorContains(t, err, "nil *Toolset")
	assert.NotContains(t, err.Error(), "panic")
}

// ListAll is List with the removed toolsets, which keep their record.
func TestListAllKeepsRemovedToolsets(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect})
	readyToolset(t, s, "kept", nil)
	readyToolset(t, s, "gone", nil)
	require.NoError(t, s.Remove("gone"))
	names := func(infos []Info) (out []string) {
		for _, i := range infos {
			out = append(out, i.Name+":"+string(i.Status))
		}
		return out
	}
	assert.Equal(t, []string{"kept:ready"}, names(s.List()))
	assert.Equal(t, []string{"gone:removed", "kept:ready"}, names(s.ListAll()))
}
