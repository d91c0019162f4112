package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
)

// applyPlatform starts a platform on loopback with a store of its own and
// returns its URL and a token file.
func applyPlatform(t *testing.T) (url, tokenFile string, get func(path string) (int, string)) {
	t.Helper()
	dir := t.TempDir()
	discard := slog.New(slog.DiscardHandler)
	s, err := toolpkg.Open(filepath.Join(dir, "store"), &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: discard})
	require.NoError(t, err)
	const token = "apply-test-token-0123456789abcdef"
	srv, err := platform.New(s, &platform.Options{Token: token, Logger: discard})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		require.NoError(t, s.Close())
	})
	get = func(path string) (int, string) {
		req, _ := http.NewRequest("GET", hs.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hs.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	return hs.URL, writeFile(t, dir, "token", token), get
}

// samProject lays out a project as SAM's CLI leaves it: toolsets/NAME.yaml
// beside toolsets/NAME/src/, and an agent document.
func samProject(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join(root, "toolsets", "finance-tools", "src")
	require.NoError(t, os.MkdirAll(filepath.Dir(src), 0o755))
	require.NoError(t, os.Rename(sourceDir(t), src))
	writeFile(t, filepath.Join(root, "toolsets"), "finance-tools.yaml", `kind: toolset
name: finance-tools
description: Market data
spec:
  config:
    greeting: hi
    retries: 3
`)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "agents"), 0o755))
	writeFile(t, filepath.Join(root, "agents"), "analyst.yaml", `kind: agent
name: analyst
description: Looks at markets
spec:
  type: standard
  systemPrompt: You look at markets.
  deploy: true
  toolsets: [finance-tools]
  toolsetConfigs:
    - toolset: finance-tools
      excludedTools: [crash, hang, spin, big, slow, connect, garbage, noresult, fs]
`)
	// Not documents: a CI file and the package's own manifest are left.
	writeFile(t, root, "ci.yaml", "steps: [build]\n")
	return root
}

// The built command runs apply here (see runBuilt): each run builds and
// zips the package again.
func TestApplyPlansThenAppliesThenHasNothingToDo(t *testing.T) {
	// Its processes, ports and files are its own: it waits on them beside
	// the other tests that are.
	t.Parallel()
	url, tokenFile, get := applyPlatform(t)
	root := samProject(t)

	link := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.Symlink(root, link))
	code, stdout, stderr := runBuilt(t, "apply", link, "--platform", url, "--token-file", tokenFile, "--plan")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "+ create agent analyst", "a project named by a link is walked")

	code, stdout, stderr = runBuilt(t, "apply", root, "--platform", url, "--token-file", tokenFile, "--plan")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "+ create toolset finance-tools: upload the package built from "+filepath.Join(root, "toolsets", "finance-tools", "src"))
	assert.Contains(t, stdout, "~ configure toolset finance-tools: set greeting, retries\n")
	assert.Contains(t, stdout, "~ wait for toolset finance-tools: its discovery\n")
	assert.Contains(t, stdout, "+ create agent analyst: from "+filepath.Join(root, "agents", "analyst.yaml")+"\n")
	assert.Contains(t, stdout, "> deploy agent analyst: spec.deploy is true; toolsets changed: finance-tools\n")
	assert.Contains(t, stdout, "5 change(s) planned")
	status, _ := get("/api/v1/platform/toolsets/finance-tools")
	assert.Equal(t, http.StatusNotFound, status, "a plan changes nothing")

	code, stdout, stderr = runBuilt(t, "apply", root, "--platform", url, "--token-file", tokenFile)
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stdout, "done: create agent analyst\n")
	status, body := get("/api/v1/platform/toolsets/finance-tools")
	require.Equal(t, http.StatusOK, status, body)
	var ts platform.ToolsetDetail
	require.NoError(t, json.Unmarshal([]byte(body), &ts))
	assert.Equal(t, toolpkg.StatusReady, ts.DiscoveryStatus)
	assert.Equal(t, map[string]any{"greeting": "hi", "retries": float64(3)}, ts.Config)
	status, body = get("/api/v1/platform/agents/analyst")
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, "systemPrompt: You look at markets.")
	assert.Contains(t, body, `"deployed":true`)
	status, body = get("/api/v1/platform/agents/analyst/effective")
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, "finance-tools__echo")

	// The same project again: the build is deterministic, so nothing
	// changed.
	code, stdout, stderr = runBuilt(t, "apply", root, "--platform", url, "--token-file", tokenFile, "--plan")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "= keep toolset finance-tools: package unchanged (version 1, ready)\n")
	assert.Contains(t, stdout, "= keep agent analyst: unchanged\n")
	assert.True(t, strings.HasSuffix(stdout, "nothing to change\n"), stdout)

	// A changed source, while an agent uses the toolset: refused, with
	// nothing changed, unless forced.
	main := filepath.Join(root, "toolsets", "finance-tools", "src", "tooldemo", "main.go")
	data, err := os.ReadFile(main)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(main, append(data, []byte("\n// changed\nvar _ = 1\n")...), 0o644))
	writeFile(t, filepath.Join(root, "toolsets"), "finance-tools.yaml", "kind: toolset\nname: finance-tools\nspec:\n  config:\n    greeting: hey\n")
	code, stdout, stderr = runBuilt(t, "apply", root, "--platform", url, "--token-file", tokenFile)
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "~ re-upload toolset finance-tools: the package built from")
	assert.Contains(t, stdout, "(used by agents analyst: give --force-toolset to re-upload it)\n")
	assert.Contains(t, stdout, "~ configure toolset finance-tools: set greeting; unset retries\n")
	assert.Contains(t, stderr, "toolset apply: re-upload toolset finance-tools: used by agents analyst: give --force-toolset to re-upload it\n")
	_, body = get("/api/v1/platform/toolsets/finance-tools/config")
	assert.Contains(t, body, `"greeting":"hi"`, "nothing applied")

	code, stdout, stderr = runBuilt(t, "apply", root, "--platform", url, "--token-file", tokenFile, "--force-toolset")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stdout, "agents using it, redeployed: analyst")
	assert.Contains(t, stdout, "done: re-upload toolset finance-tools\n")
	_, body = get("/api/v1/platform/toolsets/finance-tools")
	var after platform.ToolsetDetail
	require.NoError(t, json.Unmarshal([]byte(body), &after))
	assert.Equal(t, 2, after.Version)
	assert.Equal(t, map[string]any{"greeting": "hey"}, after.Config)
}

func TestApplyManifest(t *testing.T) {
	url, tokenFile, get := applyPlatform(t)
	dir := t.TempDir()
	manifest := writeFile(t, dir, "manifest.yaml", `kind: manifest
resources:
  toolsets:
    - name: drafts
      spec:
        config: {}
  agents:
    - kind: agent
      name: writer
      spec:
        systemPrompt: You write.
        toolsets: [drafts]
`)
	code, stdout, stderr := runCLI("apply", manifest, "--platform", url, "--token-file", tokenFile)
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stdout, "+ create toolset drafts: no package yet\n")
	status, body := get("/api/v1/platform/toolsets/drafts")
	assert.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"discoveryStatus":"created"`)
}

func TestApplyRefusesBadInputAtOnce(t *testing.T) {
	url, tokenFile, _ := applyPlatform(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "kind: toolset\nname: dup\n")
	writeFile(t, dir, "b.yaml", "kind: toolset\nname: dup\n")
	writeFile(t, dir, "c.yaml", "kind: agent\nname: broken\nspec:\n  toolsets: 7\n")
	writeFile(t, dir, "d.yaml", `kind: manifest
resources:
  agents:
    - &a
      kind: agent
      name: one
      spec: {systemPrompt: x}
`)
	code, stdout, stderr := runCLI("apply", dir, "--platform", url, "--token-file", tokenFile)
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stderr, "toolset dup is declared twice")
	assert.Contains(t, stderr, filepath.Join(dir, "c.yaml")+":4:")
	assert.Contains(t, stderr, "may not use YAML anchors or aliases")

	fifo := filepath.Join(t.TempDir(), "fifo.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	code, _, stderr = runCLI("apply", fifo, "--platform", url, "--token-file", tokenFile)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "neither a file nor a directory", "a pipe is not read, which would block")

	code, _, stderr = runCLI("apply", t.TempDir(), "--platform", url, "--token-file", tokenFile)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no document of kind agent, toolset or manifest")

	code, _, stderr = runCLI("apply", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--platform URL is required")
}

// A platform's listing of agents is untrusted: one that answers every
// page with more agents than asked, and never ends, is refused at its
// first page rather than read page after page into memory.
func TestApplyRefusesAnEndlessAgentListing(t *testing.T) {
	var pages atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/platform/agents" {
			http.NotFound(w, r)
			return
		}
		pages.Add(1)
		var b strings.Builder
		b.WriteString(`{"data":[`)
		for i := range 2000 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"name":"a%d","packages":["drafts","x%d"]}`, i, i)
		}
		b.WriteString(`],"meta":{"page":1,"pageSize":0,"total":1000000000}}`)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, b.String())
	}))
	defer hs.Close()
	dir := t.TempDir()
	doc := writeFile(t, dir, "drafts.yaml", "kind: toolset\nname: drafts\n")
	code, stdout, stderr := runCLI("apply", doc, "--platform", hs.URL, "--plan")
	assert.Equal(t, 1, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stderr, "more agents than asked")
	assert.Equal(t, int32(1), pages.Load())
}
