package toolpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoConfig calls demo__echo and returns the configuration it got.
func echoConfig(t *testing.T, ts toolset.Toolset) map[string]any {
	t.Helper()
	res, err := callTool(context.Background(), t, ts, "demo__echo", `{"text":"x"}`)
	require.NoError(t, err)
	cfg, _ := resultData(t, res)["config"].(map[string]any)
	return cfg
}

// TestStoredConfigIsTheLowestLayer: agent overlay > Config.Toolset >
// stored > default, and a SetConfig is picked up on the next turn by a
// Toolset made before it.
func TestStoredConfigIsTheLowestLayer(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	plain := readyToolset(t, s, "demo", nil)
	agent := s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"greeting": "agent"}})
	overlay := s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"greeting": "agent"}, Tools: map[string]map[string]any{"echo": {"greeting": "overlay"}}})
	assert.Equal(t, map[string]any{"greeting": "hello", "retries": float64(2)}, echoConfig(t, plain), "schema defaults")

	got, err := s.SetConfig("demo", map[string]any{"greeting": "stored", "retries": 5})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"greeting": "stored", "retries": json.Number("5")}, got)
	assert.Equal(t, map[string]any{"greeting": "stored", "retries": float64(5)}, echoConfig(t, plain), "picked up with no new Toolset")
	assert.Equal(t, map[string]any{"greeting": "agent", "retries": float64(5)}, echoConfig(t, agent))
	assert.Equal(t, map[string]any{"greeting": "overlay", "retries": float64(5)}, echoConfig(t, overlay))

	// A merge patch: nil removes, others replace, the rest stays.
	got, err = s.SetConfig("demo", map[string]any{"greeting": nil, "verbose": true})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"retries": json.Number("5"), "verbose": true}, got)
	assert.Equal(t, map[string]any{"greeting": "hello", "retries": float64(5), "verbose": true}, echoConfig(t, plain))

	// A re-upload keeps the stored configuration.
	upload(t, s, "demo", demoPackage(t, demoManifest("")))
	assert.Equal(t, map[string]any{"greeting": "hello", "retries": float64(5), "verbose": true}, echoConfig(t, plain))
}

// TestStoredHilOnlyTightens: the agent's configuration cannot lift the
// approval the stored configuration asks for.
func TestStoredHilOnlyTightens(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	readyToolset(t, s, "demo", nil)
	_, err := s.SetConfig("demo", map[string]any{"hil": true, "required_scopes": "admin"})
	require.NoError(t, err)
	ts := s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"hil": false}, Tools: map[string]map[string]any{"echo": {"hil": false}}})
	without := toolset.NewRun("stored-no", toolset.WithValue(Scopes, []string{"audit"}))
	defer without.End()
	_, tools := turnTools(t, without, ts)
	assert.Empty(t, tools.Names(), "without the stored scope, no tool is shown")

	with := toolset.NewRun("stored-yes", toolset.WithValue(Scopes, []string{"admin"}))
	defer with.End()
	ctx, tools := turnTools(t, with, ts)
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "demo__echo", Args: json.RawMessage(`{"text":"x"}`)})
	var are *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &are, "the stored hil holds")
}

func TestSetConfigRefusesBadPatches(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	readyToolset(t, s, "demo", nil)
	_, err := s.SetConfig("demo", map[string]any{"greeting": "kept"})
	require.NoError(t, err)
	deep := map[string]any{"v": "x"}
	for range 10 {
		deep = map[string]any{"n": deep}
	}
	for name, patch := range map[string]map[string]any{
		"unknown key and wrong type": {"colour": "red", "retries": "many", "verbose": 3},
		"oversize":                   {"greeting": strings.Repeat("x", MaxStoredConfigBytes)},
		"deep":                       {"auth": deep},
		"bad reserved":               {"hil": "perhaps", "auth": "sk-not-a-form-of-auth"},
		"not JSON":                   {"greeting": make(chan int)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.SetConfig("demo", patch)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			got, err := s.Config("demo")
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"greeting": "kept"}, got, "nothing changed")
			switch name {
			case "unknown key and wrong type":
				assert.Equal(t, []string{
					`"colour" is not a configuration key of any tool; known keys: "api_key", "greeting", "retries", "verbose"`,
					`"retries": expected integer, got string "many"`,
					`"verbose": expected boolean, got number 3`,
				}, ce.Problems, "every problem at once")
			case "bad reserved":
				assert.Len(t, ce.Problems, 2)
				assert.NotContains(t, ce.Error(), "sk-not-a-form-of-auth")
			}
		})
	}
	_, err = s.SetConfig("nope", map[string]any{"x": 1})
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Config("nope")
	assert.ErrorIs(t, err, ErrNotFound)
}

// TestStoredSecretNeverShows: a secret set in the stored configuration
// never appears in Config, Info, errors or the log, and sending back
// what Config showed keeps it.
func TestStoredSecretNeverShows(t *testing.T) {
	t.Parallel()
	const secret, token = "sk-stored-secret-4711", "oauth-stored-token-0815"
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := storeDir(t)
	s, err := Open(dir, &Options{Sandbox: ModeDirect, Logger: logger})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	ts := readyToolset(t, s, "demo", nil)

	got, err := s.SetConfig("demo", map[string]any{"api_key": secret, "auth": map[string]any{"oauth_token": token}, "greeting": "hi"})
	require.NoError(t, err)
	want := map[string]any{"api_key": RedactedValue, "auth": RedactedValue, "greeting": "hi"}
	assert.Equal(t, want, got)
	got, err = s.Config("demo")
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// What a UI read, sent back with a change, keeps the secrets.
	got["greeting"] = "hey"
	_, err = s.SetConfig("demo", got)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "demo", "config.json"))
	require.NoError(t, err)
	assert.Contains(t, string(data), secret)
	assert.Contains(t, string(data), token)
	fi, err := os.Stat(filepath.Join(dir, "demo", "config.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	cfg := echoConfig(t, ts)
	assert.Equal(t, "[secret]", cfg["api_key"], "the tool got the stored key, hidden from its result")
	assert.Equal(t, "hey", cfg["greeting"])
	_, err = callTool(context.Background(), t, ts, "demo__crash", `{}`)
	require.Error(t, err, "the tool prints the key to stderr and exits 1")
	assert.NotContains(t, err.Error(), secret)

	_, err = s.SetConfig("demo", map[string]any{"api_key": 123456789, "retries": "many"})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.NotContains(t, err.Error(), "123456789")

	info, err := s.Info("demo")
	require.NoError(t, err)
	infoJSON, _ := json.Marshal(info)
	for _, text := range []string{string(infoJSON), logs.String()} {
		assert.NotContains(t, text, secret)
		assert.NotContains(t, text, token)
	}
	assert.NotEmpty(t, logs.String())

	// Kept across a restart, and dropped by Remove.
	require.NoError(t, s.Close())
	s, err = Open(dir, &Options{Sandbox: ModeDirect, Logger: logger})
	require.NoError(t, err)
	got, err = s.Config("demo")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"api_key": RedactedValue, "auth": RedactedValue, "greeting": "hey"}, got)
	assert.Equal(t, "hey", echoConfig(t, s.Toolset("demo", nil))["greeting"])
	require.NoError(t, s.Remove("demo"))
	assert.NoFileExists(t, filepath.Join(dir, "demo", "config.json"))
	_, err = s.Config("demo")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Create("demo")
	require.NoError(t, err)
	got, err = s.Config("demo")
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.NotContains(t, logs.String(), secret)
}

// TestConfigSetBeforeAnyVersionIsCheckedWhenListed: keys are kept
// unchecked (and hidden) until a version is discovered; a version whose
// tools do not declare a key fails, and the values stay hidden.
func TestConfigSetBeforeAnyVersionIsCheckedWhenListed(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	_, err := s.Create("demo")
	require.NoError(t, err)
	got, err := s.SetConfig("demo", map[string]any{"greeting": "early", "colour": "red"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"greeting": RedactedValue, "colour": RedactedValue}, got, "with no schema, every value counts as secret")

	info := upload(t, s, "demo", demoPackage(t, demoManifest("")))
	assert.Equal(t, StatusFailed, info.Status)
	assert.Equal(t, []string{`the store's configuration of the toolset does not fit this version (change it with SetConfig, then upload again): "colour" is not a configuration key of any tool; known keys: "api_key", "greeting", "retries", "verbose"`}, info.Errors)
	_, err = s.Toolset("demo", nil).GetTools(context.Background())
	var nre *NotReadyError
	require.ErrorAs(t, err, &nre)

	got, err = s.SetConfig("demo", map[string]any{"colour": nil})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"greeting": RedactedValue}, got, "set while it counted as secret, it stays hidden")
	info = upload(t, s, "demo", demoPackage(t, demoManifest("")))
	require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	assert.Equal(t, "[secret]", echoConfig(t, s.Toolset("demo", nil))["greeting"], "the tool got it, hidden from its result")
}

func TestDamagedStoredConfigIsIgnoredWithoutShowingIt(t *testing.T) {
	t.Parallel()
	const secret = "sk-in-a-damaged-file"
	var logs bytes.Buffer
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	readyToolset(t, s, "demo", nil)
	require.NoError(t, s.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "demo", "config.json"), []byte(`{"api_key":"`+secret), 0o600))
	s, err = Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Config("demo")
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Contains(t, logs.String(), "stored configuration cannot be read")
	assert.NotContains(t, logs.String(), secret)
}

func TestPackageOfARemovedOrReplacedVersion(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	v1 := demoPackage(t, demoManifest(""))
	upload(t, s, "demo", v1)
	r, size, err := s.Package("demo", 0)
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, v1, got)
	assert.Equal(t, int64(len(v1)), size)
	_, err = r.Seek(0, io.SeekStart)
	require.NoError(t, err)

	// Replaced while open: what was opened reads whole; the version is
	// gone for a new Package.
	v2 := demoPackage(t, demoManifest(""), zfile{name: "extra.txt", data: []byte("v2")})
	upload(t, s, "demo", v2)
	got, err = io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, v1, got)
	require.NoError(t, r.Close())
	_, _, err = s.Package("demo", 1)
	assert.ErrorIs(t, err, ErrNotFound)
	r, _, err = s.Package("demo", 2)
	require.NoError(t, err)
	got, _ = io.ReadAll(r)
	r.Close()
	assert.Equal(t, v2, got)

	require.NoError(t, s.Remove("demo"))
	_, _, err = s.Package("demo", 0)
	assert.ErrorIs(t, err, ErrNotFound)
	_, _, err = s.Package("demo", 2)
	assert.ErrorIs(t, err, ErrNotFound)
	assert.NoFileExists(t, filepath.Join(s.Dir(), "demo", "v2.zip"))
	_, _, err = s.Package("never", 0)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestPackageSymlinkIsRefused(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	upload(t, s, "demo", demoPackage(t, demoManifest("")))
	p := filepath.Join(s.Dir(), "demo", "v1.zip")
	outside := filepath.Join(t.TempDir(), "secret.zip")
	require.NoError(t, os.WriteFile(outside, []byte("not yours"), 0o600))
	require.NoError(t, os.Remove(p))
	require.NoError(t, os.Symlink(outside, p))
	r, _, err := s.Package("demo", 1)
	if r != nil {
		r.Close()
	}
	require.Error(t, err, "the link is not followed")
}

func TestStoredConfigAtTheLimitReloads(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	readyToolset(t, s, "demo", nil)
	long := strings.Repeat("x", MaxStoredConfigBytes-len(`{"greeting":""}`))
	_, err = s.SetConfig("demo", map[string]any{"greeting": long})
	require.NoError(t, err)
	_, err = s.SetConfig("demo", map[string]any{"verbose": true})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce, "one byte more is refused")
	require.NoError(t, s.Close())
	s, err = Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Config("demo")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"greeting": long}, got)
}

// TestExportConfigGivesSecretsInClear: what Config redacts, ExportConfig
// gives as stored, in a copy the caller may change; a removed toolset
// has none.
func TestExportConfigGivesSecretsInClear(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	readyToolset(t, s, "demo", nil)
	got, err := s.ExportConfig("demo")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{}, got, "nothing stored yet")

	_, err = s.SetConfig("demo", map[string]any{"greeting": "stored", "api_key": "sk-export", "auth": map[string]any{"headers": map[string]any{"X-Key": "h"}}})
	require.NoError(t, err)
	shown, err := s.Config("demo")
	require.NoError(t, err)
	assert.Equal(t, RedactedValue, shown["api_key"])
	got, err = s.ExportConfig("demo")
	require.NoError(t, err)
	assert.Equal(t, "sk-export", got["api_key"])
	assert.Equal(t, "stored", got["greeting"])
	got["auth"].(map[string]any)["headers"].(map[string]any)["X-Key"] = "changed"
	again, err := s.ExportConfig("demo")
	require.NoError(t, err)
	assert.Equal(t, "h", again["auth"].(map[string]any)["headers"].(map[string]any)["X-Key"], "a copy")

	require.NoError(t, s.Remove("demo"))
	_, err = s.ExportConfig("demo")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.ExportConfig("nosuch")
	assert.ErrorIs(t, err, ErrNotFound)
}

const configSchema = `{"tools":{"t":{"description":"d","config_schema":[
	{"key":"api_url","type":"string","required":true,"description":"The API"},
	{"key":"port","type":"integer","default":443},
	{"key":"debug","type":"boolean"},
	{"key":"token","type":"string","secret":true,"required":true}]}}}`

func TestConfigIsChecked(t *testing.T) {
	t.Parallel()
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
	assert.EqualError(t, err, "toolset: agent \"a\": Toolset#0 \"toolpkg:cfg\": invalid configuration:\n  - \"token\" is required by tool \"t\": string")

	tools, err := s.Toolset("cfg", map[string]any{"api_url": "https://x", "token": "t0k3n", "port": 8080.0}).GetTools(context.Background())
	require.NoError(t, err, "integers may come as float64 from JSON")
	require.Len(t, tools, 1)
}

func TestToolConfigReachesTheTool(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := readyToolset(t, s, "demo", map[string]any{"retries": json.Number("5"), "api_key": "k-123"})
	res, err := callTool(context.Background(), t, ts, "demo__echo", `{"text":"x"}`)
	require.NoError(t, err)
	// The tool got api_key (unset keys are left out); the value it echoed
	// is a secret, hidden from its result.
	assert.Equal(t, map[string]any{"greeting": "hello", "retries": float64(5), "api_key": "[secret]"}, resultData(t, res)["config"])
}

func TestSecretsNeverReachErrorsOrLogs(t *testing.T) {
	t.Parallel()
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
