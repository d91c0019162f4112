package main

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
)

// skillArchive zips a skill's files.
func skillArchive(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			h.SetMode(0o755)
		}
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = io.WriteString(w, files[name])
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

var glossaryFiles = map[string]string{
	"glossary/SKILL.md":            "---\nname: glossary\ndescription: The team's words.\n---\nLook each word up in references/words.md.\n",
	"glossary/references/words.md": "SLA: service level agreement\n",
}

// A runner serves a deployed agent's attached skills: it fetches each
// from the platform, and the client loads it and reads its files.
func TestServeDeployedAgentWithSkills(t *testing.T) {
	dir := t.TempDir()
	bin := cliBinary(t)
	ctx := context.Background()
	discard := slog.New(slog.DiscardHandler)

	ps, err := toolpkg.Open(filepath.Join(dir, "platform"), &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: discard})
	require.NoError(t, err)
	const token = "skilled-agent-token-0123456789abcdef"
	srv, err := platform.New(ps, &platform.Options{Token: token, Logger: discard})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer func() {
		hs.Close()
		srv.Close()
		require.NoError(t, ps.Close())
	}()
	do := func(method, path string, body []byte) int {
		req, _ := http.NewRequest(method, hs.URL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hs.Client().Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	require.Equal(t, http.StatusAccepted, do("PUT", "/api/v1/platform/skills/glossary", skillArchive(t, glossaryFiles)))
	require.Equal(t, http.StatusCreated, do("PUT", "/api/v1/platform/agents/writer", []byte("name: writer\ninstructions: Write plainly.\nskills: [glossary]\n")))
	require.Equal(t, http.StatusOK, do("POST", "/api/v1/platform/agents/writer/deploy", nil))
	// A version after the deploy: served, with a warning.
	require.Equal(t, http.StatusAccepted, do("PUT", "/api/v1/platform/skills/glossary", skillArchive(t, glossaryFiles)))
	tokenFile := writeFile(t, dir, "platform-token", token+"\n")

	r := startRunner(t, bin, "", testToken, "--agent", "writer", "--platform", hs.URL, "--platform-token-file", tokenFile)
	tools, err := toolset.BuildTools(ctx, "agent", client(t, r.base+"/mcp", testToken))
	require.NoError(t, err)
	assert.Equal(t, []string{"load_skill", "read_skill_file"}, tools.Names())
	text, err := callText(ctx, tools, "load_skill", `{"name":"glossary"}`)
	require.NoError(t, err)
	assert.Contains(t, text, "Look each word up in references/words.md.")
	assert.Contains(t, text, "references/words.md (29 bytes)")
	text, err = callText(ctx, tools, "read_skill_file", `{"skill":"glossary","path":"references/words.md"}`)
	require.NoError(t, err)
	assert.Equal(t, "SLA: service level agreement\n", text)
	_, err = callText(ctx, tools, "read_skill_file", `{"skill":"glossary","path":"../SKILL.md"}`)
	assert.Error(t, err, "no path escapes")
	require.NoError(t, r.terminate(t, 10*time.Second))
	assert.Contains(t, r.stderr.String(), `skill "glossary": the platform deployed version 1 and now has version 2`)

	// A skill removed (forced) since the deploy: the runner says so.
	require.Equal(t, http.StatusNoContent, do("DELETE", "/api/v1/platform/skills/glossary?force=true", nil))
	cmd := exec.Command(bin, "serve", "--sandbox", "direct", "--agent", "writer", "--platform", hs.URL, "--platform-token-file", tokenFile)
	cmd.Env = runnerEnv(t.TempDir(), "")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), `skill "glossary"`)
	assert.Contains(t, string(out), "NotFound")
}

// A skill archive is the platform's answer, untrusted: too large, not a
// zip, not the skill named, without its version, or named to escape, it
// is refused with a message.
func TestFetchSkillRefusesHostileAnswers(t *testing.T) {
	good := skillArchive(t, glossaryFiles)
	var body []byte
	version := "1"
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/archive") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set(platform.SkillVersionHeader, version)
		w.Write(body)
	}))
	defer hs.Close()
	base, err := url.Parse(hs.URL)
	require.NoError(t, err)
	ctx := context.Background()

	body = good
	sk, v, err := fetchSkill(ctx, base, "", "glossary", 1<<20)
	require.NoError(t, err)
	assert.Equal(t, "glossary", sk.Name())
	assert.Equal(t, 1, v)

	_, _, err = fetchSkill(ctx, base, "", "glossary", int64(len(good)-1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than")

	body = []byte("this is not a zip")
	_, _, err = fetchSkill(ctx, base, "", "glossary", 1<<20)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not read")

	body = good
	_, _, err = fetchSkill(ctx, base, "", "other", 1<<20)
	require.Error(t, err, "the archive of another skill")

	version = "x"
	_, _, err = fetchSkill(ctx, base, "", "glossary", 1<<20)
	require.Error(t, err)
	assert.Contains(t, err.Error(), platform.SkillVersionHeader)
	version = "1"

	for _, name := range []string{"..", "../agents/x", "a/b", "Glossary", ""} {
		_, _, err = fetchSkill(ctx, base, "", name, 1<<20)
		assert.Error(t, err, name)
	}

	// A document attaching too many skills, or one twice.
	doc := &platform.EffectiveDocument{Name: "a", Spec: platform.EffectiveSpec{Skills: []string{"glossary", "glossary"}}}
	_, err = fetchSkills(ctx, base, "", &platform.EffectiveAgent{}, doc, io.Discard)
	assert.ErrorContains(t, err, "twice")
	doc.Spec.Skills = make([]string, 65)
	_, err = fetchSkills(ctx, base, "", &platform.EffectiveAgent{}, doc, io.Discard)
	assert.ErrorContains(t, err, "more than this runner takes")
}

// A shell tool bundled with a skill: "--schema" describes greet, a call
// answers hello.
const (
	greetManifest = "version: 1\ntools:\n  sh:\n    runtime: python\n    executable: greet.sh\n    timeout_seconds: 5\n"
	greetScript   = "#!/bin/sh\nif [ \"$1\" = \"--schema\" ]; then\n" +
		`echo '{"tools":{"greet":{"description":"Say hello.","parameters":{"type":"object","properties":{"who":{"type":"string"}}}}}}'` +
		"\nexit 0\nfi\n" +
		`result=$(sed -n 's/.*"result_file":"\([^"]*\)".*/\1/p' "$1")` + "\n" +
		`printf '{"result":{"status":"success","message":"hello"}}' > "$result"` + "\n"
)

// A skill's bundled tools run on a runner with a store: installed in a
// store of the run's own, they are offered once the session loaded the
// skill. A runner without a store serves the skill without them, and
// says so.
func TestServeDeployedSkillWithTools(t *testing.T) {
	dir := t.TempDir()
	bin := cliBinary(t)
	ctx := context.Background()
	discard := slog.New(slog.DiscardHandler)

	ps, err := toolpkg.Open(filepath.Join(dir, "platform"), &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: discard})
	require.NoError(t, err)
	const token = "skilled-agent-token-0123456789abcdef"
	srv, err := platform.New(ps, &platform.Options{Token: token, Logger: discard})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer func() {
		hs.Close()
		srv.Close()
		require.NoError(t, ps.Close())
	}()
	do := func(method, path string, body []byte) int {
		req, _ := http.NewRequest(method, hs.URL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hs.Client().Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	files := map[string]string{"tools/manifest.yaml": greetManifest, "tools/python/bin/greet.sh": greetScript}
	for k, v := range glossaryFiles {
		files[strings.TrimPrefix(k, "glossary/")] = v
	}
	require.Equal(t, http.StatusAccepted, do("PUT", "/api/v1/platform/skills/glossary", skillArchive(t, files)))
	require.Equal(t, http.StatusCreated, do("PUT", "/api/v1/platform/agents/writer", []byte("name: writer\nskills: [glossary]\n")))
	deadline := time.Now().Add(30 * time.Second)
	for do("POST", "/api/v1/platform/agents/writer/deploy", nil) != http.StatusOK {
		require.True(t, time.Now().Before(deadline), "the skill's tools are never discovered")
		time.Sleep(50 * time.Millisecond)
	}
	tokenFile := writeFile(t, dir, "platform-token", token+"\n")
	store := filepath.Join(dir, "runner")

	// Over stdio, one session: one run, which loads the skill. The
	// server does not say that the session's list changed: the client
	// lists the tools again each turn.
	cmd := exec.Command(bin, "serve", "--sandbox", "direct", "--agent", "writer", "--platform", hs.URL, "--platform-token-file", tokenFile, "--store", store)
	cmd.Env = runnerEnv(t.TempDir(), "")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	served := mcptoolset.NewCommand(cmd, mcptoolset.WithName("writer"), mcptoolset.WithoutCache())
	defer served.Close()
	tools, err := toolset.BuildTools(ctx, "client", served)
	require.NoError(t, err, "%s", stderr.String())
	assert.Equal(t, []string{"load_skill", "read_skill_file"}, tools.Names(), "its tools come once the skill is loaded")
	text, err := callText(ctx, tools, "load_skill", `{"name":"glossary"}`)
	require.NoError(t, err)
	assert.Contains(t, text, "glossary__greet")
	tools, err = toolset.BuildTools(ctx, "client", served)
	require.NoError(t, err)
	assert.Equal(t, []string{"load_skill", "read_skill_file", "glossary__greet"}, tools.Names())
	text, err = callText(ctx, tools, "glossary__greet", `{"who":"you"}`)
	require.NoError(t, err)
	assert.Equal(t, "hello", text)
	require.NoError(t, served.Close())
	des, err := os.ReadDir(filepath.Join(dir, "runner"))
	require.NoError(t, err)
	for _, de := range des {
		assert.NotEqual(t, "glossary", de.Name(), "the skill's tools are not installed in the runner's store")
	}

	// Without a store: instructions and files, and a note.
	cmd = exec.Command(bin, "serve", "--sandbox", "direct", "--agent", "writer", "--platform", hs.URL, "--platform-token-file", tokenFile)
	cmd.Env = runnerEnv(t.TempDir(), "")
	stderr = &lockedBuffer{}
	cmd.Stderr = stderr
	served = mcptoolset.NewCommand(cmd, mcptoolset.WithName("writer"))
	defer served.Close()
	tools, err = toolset.BuildTools(ctx, "client", served)
	require.NoError(t, err, "%s", stderr.String())
	text, err = callText(ctx, tools, "load_skill", `{"name":"glossary"}`)
	require.NoError(t, err)
	assert.NotContains(t, text, "glossary__greet")
	require.NoError(t, served.Close())
	assert.Contains(t, stderr.String(), `skill "glossary" bundles tools, which only a runner with --store runs`)
}
