package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
)

// A runner loads a deployed agent by name from the platform: the tools
// of its effective document, with their configuration, its secrets from
// the --secrets file.
func TestServeDeployedAgentFromThePlatform(t *testing.T) {
	dir := t.TempDir()
	bin := cliBinary(t)
	zip := packaged(t)
	ctx := context.Background()
	discard := slog.New(slog.DiscardHandler)

	// The platform, with the agent deployed.
	ps, err := toolpkg.Open(filepath.Join(dir, "platform"), &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: discard})
	require.NoError(t, err)
	info, err := ps.UploadFile(ctx, "demo", zip)
	require.NoError(t, err)
	require.Equal(t, toolpkg.StatusReady, info.Status, info.Errors)
	const token = "deployed-agent-token-0123456789abcdef"
	srv, err := platform.New(ps, &platform.Options{Token: token, Logger: discard})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer func() {
		hs.Close()
		srv.Close()
		require.NoError(t, ps.Close())
	}()
	do := func(method, path, body string) int {
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hs.Client().Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	require.Equal(t, http.StatusCreated, do("PUT", "/api/v1/platform/agents/helper", `name: helper
instructions: Echo what you are told.
toolsets: [demo]
toolsetConfigs:
  - toolset: demo
    configValues:
      echo: {greeting: hi, api_key: sk-deployed-123}
    excludedTools: [crash, hang, spin, big, slow, connect, garbage, noresult, fs]
`))
	require.Equal(t, http.StatusCreated, do("PUT", "/api/v1/platform/agents/draft", "name: draft\ntoolsets: [demo]\n"))
	require.Equal(t, http.StatusOK, do("POST", "/api/v1/platform/agents/helper/deploy", ""))
	tokenFile := writeFile(t, dir, "platform-token", token+"\n")

	// The runner's own store has the same package.
	runnerStore := filepath.Join(dir, "runner")
	rs, err := toolpkg.Open(runnerStore, &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: discard})
	require.NoError(t, err)
	_, err = rs.UploadFile(ctx, "demo", zip)
	require.NoError(t, err)
	require.NoError(t, rs.Close())

	fail := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"serve", "--sandbox", "direct"}, args...)...)
		cmd.Env = runnerEnv(t.TempDir(), "")
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s", out)
		return string(out)
	}
	base := []string{"--agent", "helper", "--platform", hs.URL, "--platform-token-file", tokenFile, "--store", runnerStore}
	msg := fail(base...)
	assert.Contains(t, msg, "agent/demo/echo/api_key", "the secret the runner lacks")
	assert.NotContains(t, msg, "sk-deployed-123")
	msg = fail("--agent", "draft", "--platform", hs.URL, "--platform-token-file", tokenFile, "--store", runnerStore)
	assert.Contains(t, msg, "not deployed")
	msg = fail("--agent", "helper", "--platform", hs.URL, "--store", runnerStore)
	assert.Contains(t, msg, "requires a bearer token")
	msg = fail("--platform", hs.URL, "demo.zip")
	assert.Contains(t, msg, "go with --agent NAME")

	secrets := writeFile(t, dir, "secrets.json", `{"agent/demo/echo/api_key": "sk-deployed-123"}`)
	r := startRunner(t, bin, "", testToken, append(base, "--secrets", secrets)...)
	tools, err := toolset.BuildTools(ctx, "agent", client(t, r.base+"/mcp", testToken))
	require.NoError(t, err)
	names := tools.Names()
	slices.Sort(names)
	assert.Equal(t, []string{"demo__echo", "demo__fail"}, names, "the tools of the effective document")
	text, err := callText(ctx, tools, "demo__echo", `{"text":"from the platform"}`)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(text, "hi, from the platform"), text)
	assert.NotContains(t, r.stderr.String(), "sk-deployed-123")
	require.NoError(t, r.terminate(t, 10*time.Second))
}

// What a platform answers is untrusted: an effective document whose
// tools do not fit its toolsets, or of a type this runner does not
// serve, is refused with a message, never a panic.
func TestDeployedAgentFileRefusesWhatDoesNotFit(t *testing.T) {
	base, err := platformURL("http://127.0.0.1:1")
	require.NoError(t, err)
	ea := &platform.EffectiveAgent{Name: "a", Versions: map[string]int{}}
	for _, c := range []struct {
		doc  platform.EffectiveDocument
		want string
	}{
		{platform.EffectiveDocument{Spec: platform.EffectiveSpec{Toolsets: []string{"../x"}}}, "not valid"},
		{platform.EffectiveDocument{Spec: platform.EffectiveSpec{Toolsets: []string{"t", "t"}}}, "listed twice"},
		{platform.EffectiveDocument{Spec: platform.EffectiveSpec{Toolsets: []string{"t"}, Tools: []platform.EffectiveTool{{ToolType: "mcp", ToolName: "t__x"}}}}, "builtin tools only"},
		{platform.EffectiveDocument{Spec: platform.EffectiveSpec{Toolsets: []string{"t"}, Tools: []platform.EffectiveTool{{ToolType: "builtin", ToolName: "u__x"}}}}, "not named <toolset>__<tool>"},
		{platform.EffectiveDocument{Spec: platform.EffectiveSpec{Toolsets: []string{"t"}, Tools: []platform.EffectiveTool{{ToolType: "builtin", ToolName: "t__"}}}}, "not named <toolset>__<tool>"},
		{platform.EffectiveDocument{Spec: platform.EffectiveSpec{Toolsets: []string{"t"}, Tools: []platform.EffectiveTool{{ToolType: "builtin", ToolName: "t__x"}, {ToolType: "builtin", ToolName: "t__x"}}}}, "listed twice"},
		{platform.EffectiveDocument{Spec: platform.EffectiveSpec{Toolsets: []string{"t"}, Tools: []platform.EffectiveTool{{ToolType: "builtin", ToolName: "t__x",
			ToolConfig: map[string]any{"k": platform.AgentSecretRef("t", "x", "k"), "s": platform.ToolsetSecretRef("t", "s")}}}}}, "agent/t/x/k are not given"},
	} {
		c.doc.Kind, c.doc.Name = "agent", "a"
		_, err := deployedAgentFile(base, ea, &c.doc, nil, map[string]any{}, io.Discard)
		require.Error(t, err, "%+v", c.doc)
		assert.Contains(t, err.Error(), c.want)
	}

	// A toolset's secret is left to the store, the agent's comes from
	// the secrets, the rest as given.
	doc := platform.EffectiveDocument{Kind: "agent", Name: "a", Spec: platform.EffectiveSpec{SystemPrompt: "Be brief.", Toolsets: []string{"t"}, Tools: []platform.EffectiveTool{{ToolType: "builtin", ToolName: "t__x",
		ToolConfig: map[string]any{"k": platform.AgentSecretRef("t", "x", "k"), "s": platform.ToolsetSecretRef("t", "s"), "n": 3, "m": map[string]any{"l": []any{1}}}}}}}
	f, err := deployedAgentFile(base, ea, &doc, nil, map[string]any{"agent/t/x/k": "v"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "Be brief.", f.Instructions)
	require.Len(t, f.Toolsets, 1)
	assert.Equal(t, map[string]map[string]any{"x": {"k": "v", "n": int64(3), "m": map[string]any{"l": []any{int64(1)}}}}, f.Toolsets[0].Package.Config.Tools)
}

// An agent's secret is handed only to the tool and key it was given
// for: an effective document whose value for one tool is the reference
// of another's secret (a platform's, or an agent file's plain value
// "${secret:agent/...}") would make the runner give that tool a secret
// of another toolset from the --secrets file. It is refused.
func TestDeployedAgentFileRefusesAnotherToolsSecretRef(t *testing.T) {
	base, err := platformURL("http://127.0.0.1:1")
	require.NoError(t, err)
	ea := &platform.EffectiveAgent{Name: "a", Versions: map[string]int{}}
	secrets := map[string]any{"agent/bank/pay/api_key": "sk-bank-secret", "agent/t/x/k": "v"}
	for _, ref := range []string{
		platform.AgentSecretRef("bank", "pay", "api_key"),
		platform.AgentSecretRef("t", "x", "other"),
		platform.AgentSecretRef("t", "y", "k"),
	} {
		doc := platform.EffectiveDocument{Kind: "agent", Name: "a", Spec: platform.EffectiveSpec{Toolsets: []string{"t", "bank"}, Tools: []platform.EffectiveTool{
			{ToolType: "builtin", ToolName: "t__x", ToolConfig: map[string]any{"k": ref}},
			{ToolType: "builtin", ToolName: "bank__pay", ToolConfig: map[string]any{"api_key": platform.AgentSecretRef("bank", "pay", "api_key")}},
		}}}
		f, err := deployedAgentFile(base, ea, &doc, nil, secrets, io.Discard)
		if err == nil {
			for _, e := range f.Toolsets {
				if e.Package.Name == "t" {
					assert.NotEqual(t, "sk-bank-secret", e.Package.Config.Tools["x"]["k"], "another tool's secret handed to t__x")
				}
			}
		}
		require.Error(t, err, ref)
		assert.Contains(t, err.Error(), "not its own")
	}
}
