package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
)

// runBinary runs the built command with args and returns its exit code
// and output.
func runBinary(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	return p
}

// TestAgentCommands runs the real binary on agent files, with an MCP
// server that is the binary itself serving a package over stdio, and a
// store holding the same package.
func TestAgentCommands(t *testing.T) {
	dir := t.TempDir()
	bin := cliBinary(t)
	zip := packaged(t)

	storeDir := filepath.Join(dir, "store")
	s, err := toolpkg.Open(storeDir, &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	_, err = s.UploadFile(context.Background(), "finance", zip)
	require.NoError(t, err)
	_, err = s.Create("draft")
	require.NoError(t, err)
	require.NoError(t, s.Close())

	agent := writeFile(t, dir, "helpdesk.yaml", `name: helpdesk
instructions: Help the staff.
toolsets:
  - local: orders
  - mcp:
      name: weather
      command: [`+bin+`, serve, `+zip+`, --sandbox, direct, --name, weather]
    prefix: wx
    rename: {weather__echo: say}
    roles: [staff]
  - package: finance
    exclude: [crash, hang, spin, big, slow, connect, garbage, noresult, fs]
`)

	t.Run("tools for a role", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, bin, "agent", "tools", agent, "--role", "staff", "--store", storeDir, "--sandbox", "direct")
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stderr, agent+`:4:5: note: local toolset "orders" is registered by the program that runs the agent; left out here`)
		assert.True(t, strings.HasPrefix(stdout, "agent \"helpdesk\": 13 tool(s)\n\nwx_say\n  Echo the text back, with the tool's configuration.\n\nwx_weather__fail\n"), stdout)
		assert.Contains(t, stdout, "\nfinance__echo\n  Echo the text back")
		assert.NotContains(t, stdout, "finance__crash")
	})
	t.Run("tools for another role", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, bin, "agent", "tools", agent, "--role", "guest", "--store", storeDir, "--sandbox", "direct")
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "agent \"helpdesk\": 2 tool(s)\n\nfinance__echo\n  Echo the text back, with the tool's configuration.\n\nfinance__fail\n  Return an error the model sees.\n", stdout)
	})
	t.Run("tools as JSON", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, bin, "agent", "tools", agent, "--role", "staff", "--json", "--store", storeDir, "--sandbox", "direct")
		require.Equal(t, 0, code, stderr)
		var tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &tools))
		require.Len(t, tools, 13)
		assert.Equal(t, "wx_say", tools[0].Name)
		assert.Contains(t, tools[0].Parameters["properties"], "text")
	})
	t.Run("tools with the environment", func(t *testing.T) {
		t.Setenv("AGENT_CLI_TEST_NAME", "weather")
		withEnv := writeFile(t, dir, "env.yaml", `name: env
toolsets:
  - mcp:
      command: [`+bin+`, serve, `+zip+`, --sandbox, direct, --name, weather]
      env: {TOOLSET_TEST_UNUSED: "${AGENT_CLI_TEST_NAME}"}
`)
		code, stdout, stderr := runBinary(t, bin, "agent", "tools", withEnv)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, "\nweather__echo\n")
	})
	t.Run("tools never give the platform's token", func(t *testing.T) {
		t.Setenv(platform.TokenEnv, "platform-token-0123456789")
		leaky := writeFile(t, dir, "leak.yaml", `name: leak
toolsets:
  - mcp:
      command: [`+bin+`, serve, `+zip+`, --sandbox, direct, --name, weather]
      env: {STOLEN: "${`+platform.TokenEnv+`}"}
`)
		code, stdout, _ := runBinary(t, bin, "agent", "tools", leaky)
		assert.Equal(t, 1, code)
		assert.Contains(t, stdout, platform.TokenEnv+" is not set")
		assert.NotContains(t, stdout, "platform-token-0123456789")
	})
	t.Run("tools without the store", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, bin, "agent", "tools", agent)
		assert.Equal(t, 1, code)
		assert.Equal(t, agent+":11:14: package \"finance\": no store to take it from\n", stdout)
		assert.Contains(t, stderr, "toolset agent: "+agent+": 1 problem\n")
	})
	t.Run("check ok", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, bin, "agent", "check", agent, "--store", storeDir)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "ok\n", stdout)
		assert.Contains(t, stderr, "note: local toolset \"orders\"")
	})
	t.Run("check without the store", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, bin, "agent", "check", agent)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "ok\n", stdout)
		assert.Contains(t, stderr, agent+": note: packages not checked: give --store DIR or --platform URL\n")
	})
	t.Run("check reports every problem", func(t *testing.T) {
		bad := writeFile(t, dir, "bad.yaml", `name: bad
toolsets:
  - package: finance
    tools:
      echo: {retries: lots}
  - package: draft
  - package: nope
  - mcp: {command: [`+bin+`, serve, `+zip+`]}
    timeout: 1y
`)
		code, stdout, stderr := runBinary(t, bin, "agent", "check", bad, "--store", storeDir)
		assert.Equal(t, 1, code)
		assert.Equal(t, bad+":9:14: timeout must be a duration such as \"30s\" or \"5m\", not \"1y\"\n", stdout)
		assert.Equal(t, "toolset agent: "+bad+": 1 problem\n", stderr)

		require.NoError(t, os.WriteFile(bad, bytes.Replace([]byte(must(os.ReadFile(bad))), []byte("1y"), []byte("1s"), 1), 0o644))
		code, stdout, stderr = runBinary(t, bin, "agent", "check", bad, "--store", storeDir)
		assert.Equal(t, 1, code)
		assert.Equal(t, ""+
			bad+":5:14: package \"finance\": tool \"echo\": \"retries\" must be an integer, and the string given is not one\n"+
			bad+":6:14: package \"draft\" is not ready (status created); an agent is deployed only with ready toolsets\n"+
			bad+":7:14: unknown package \"nope\": the store has no toolset of that name\n", stdout)
		assert.Equal(t, "toolset agent: "+bad+": 3 problems\n", stderr)
	})
	t.Run("check a SAM document", func(t *testing.T) {
		sam := writeFile(t, dir, "sam.yaml", "kind: agent\nname: sam\nspec:\n  deploy: true\n  toolsets: [finance, builtin_artifact_tools]\n")
		code, stdout, stderr := runBinary(t, bin, "agent", "check", sam, "--store", storeDir)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "ok\n", stdout)
		assert.Contains(t, stderr, sam+":4:3: warning: spec.deploy is kept but not acted on: deploying is the platform's\n")
		assert.Contains(t, stderr, sam+`:5:23: warning: built-in group "builtin_artifact_tools" is not provided here`)
	})
	t.Run("usage", func(t *testing.T) {
		code, _, stderr := runBinary(t, bin, "agent", "run", agent)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, `toolset agent: unknown agent command "run": expected check or tools`)
		code, _, stderr = runBinary(t, bin, "agent", "check")
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "expected FILE, got 0 argument(s)")
		code, _, stderr = runBinary(t, bin, "agent", "check", filepath.Join(dir, "missing.yaml"))
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "no such file or directory")
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A store a platform (or anything else) holds cannot be opened a second
// time; the error says to go through the platform instead.
func TestAgentCheckOnAHeldStoreSaysToUseThePlatform(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	held, err := toolpkg.Open(storeDir, &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer held.Close()
	agent := writeFile(t, dir, "a.yaml", "name: a\ninstructions: Help.\ntoolsets:\n  - package: finance\n")

	code, _, stderr := runCLI("agent", "check", agent, "--store", storeDir)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "in use by another process")
	assert.Contains(t, stderr, "give --platform URL instead of --store", "the way out is named")
}
