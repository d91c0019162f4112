package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
)

// servePlatform serves a platform for a new store on loopback, with the
// admin token given ("" for none: without authentication).
func servePlatform(t *testing.T, token string) *httptest.Server {
	t.Helper()
	discard := slog.New(slog.DiscardHandler)
	s, err := toolpkg.Open(filepath.Join(t.TempDir(), "store"), &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: discard})
	require.NoError(t, err)
	srv, err := platform.New(s, &platform.Options{Token: token, InsecureNoAuth: token == "", Logger: discard})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		require.NoError(t, s.Close())
	})
	return hs
}

// The real binary's "platform token" create, list and revoke against a
// platform on loopback: the secret printed once works with its scopes,
// the listing shows no secret, the revoked token opens nothing.
func TestPlatformTokenCommands(t *testing.T) {
	bin := cliBinary(t)
	const admin = "cli-admin-token-0123456789abcdef"
	hs := servePlatform(t, admin)
	dir := t.TempDir()
	adminFile := writeFile(t, dir, "admin", admin+"\n")
	status := func(secret, method, path, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err := hs.Client().Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}

	code, stdout, stderr := runBinary(t, bin, "platform", "token", "create", "ci", "--scope", "read,publish", "--platform", hs.URL, "--token-file", adminFile)
	require.Equal(t, 0, code, stderr)
	secret := strings.TrimSpace(stdout)
	assert.Equal(t, secret+"\n", stdout, "the secret alone on stdout")
	assert.True(t, strings.HasPrefix(secret, platform.TokenPrefix), secret)
	assert.Contains(t, stderr, "token ci created with the scopes read,publish")
	assert.Contains(t, stderr, "shown this once")
	assert.Equal(t, http.StatusCreated, status(secret, "POST", "/api/v1/platform/toolsets", `{"name":"weather"}`))
	assert.Equal(t, http.StatusForbidden, status(secret, "DELETE", "/api/v1/platform/agents/x", ""))

	// The admin token from the environment.
	t.Setenv(platform.TokenEnv, admin)
	code, _, stderr = runBinary(t, bin, "platform", "token", "create", "--platform", hs.URL, "bot", "--scope", "agents")
	require.Equal(t, 0, code, stderr)

	code, stdout, stderr = runBinary(t, bin, "platform", "token", "list", "--platform", hs.URL)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 3, stdout)
	assert.Regexp(t, `^NAME\s+SCOPES\s+CREATED\s+LAST USED$`, lines[0])
	assert.Regexp(t, `^bot\s+agents\s+\S+\s+never$`, lines[1])
	assert.Regexp(t, `^ci\s+read,publish\s+\S+\s+\d{4}-`, lines[2])
	assert.NotContains(t, stdout, secret)

	code, stdout, stderr = runBinary(t, bin, "platform", "token", "list", "--json", "--platform", hs.URL)
	require.Equal(t, 0, code, stderr)
	var list []platform.TokenInfo
	require.NoError(t, json.Unmarshal([]byte(stdout), &list), stdout)
	require.Len(t, list, 2)
	assert.Equal(t, "bot", list[0].Name)
	assert.Equal(t, []platform.Scope{platform.ScopeAgents}, list[0].Scopes)
	assert.NotContains(t, stdout, secret)

	// A token without admin manages no tokens.
	ciFile := writeFile(t, dir, "ci", secret)
	code, _, stderr = runBinary(t, bin, "platform", "token", "create", "evil", "--scope", "admin", "--platform", hs.URL, "--token-file", ciFile)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "this token lacks the admin scope")

	code, _, stderr = runBinary(t, bin, "platform", "token", "revoke", "ci", "--platform", hs.URL)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "token ci revoked")
	assert.Equal(t, http.StatusUnauthorized, status(secret, "GET", "/api/v1/platform/toolsets", ""))
	code, _, stderr = runBinary(t, bin, "platform", "token", "revoke", "ci", "--platform", hs.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "NotFound: no such token")

	// A second create of a name is refused.
	code, _, stderr = runBinary(t, bin, "platform", "token", "create", "bot", "--scope", "read", "--platform", hs.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "Conflict")
}

// Bad usage is refused before anything is sent; a wrong or missing
// admin token is said plainly, and never shown.
func TestPlatformTokenCommandsRefuse(t *testing.T) {
	bin := cliBinary(t)
	hs := servePlatform(t, "cli-admin-token-0123456789abcdef")
	t.Setenv(platform.TokenEnv, "")
	for _, args := range [][]string{
		{"platform", "token"},
		{"platform", "token", "rotate", "x"},
		{"platform", "token", "create", "x"},
		{"platform", "token", "create", "x", "--scope", "root"},
		{"platform", "token", "create", "x", "--scope", "read,read"},
		{"platform", "token", "create", "../x", "--scope", "read"},
		{"platform", "token", "create", "--scope", "read"},
		{"platform", "token", "revoke"},
		{"platform", "token", "revoke", "a", "b"},
		{"platform", "token", "list", "extra"},
		{"platform", "token", "list", "--platform", "ftp://127.0.0.1"},
		{"platform", "token", "list", "--platform", "http://user:pw@127.0.0.1"},
	} {
		code, _, stderr := runBinary(t, bin, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
	}
	code, _, stderr := runBinary(t, bin, "platform", "token", "list", "--platform", hs.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "requires a bearer token")
	wrong := writeFile(t, t.TempDir(), "wrong", "wrong-admin-token-0123456789abcdef")
	code, _, stderr = runBinary(t, bin, "platform", "token", "list", "--platform", hs.URL, "--token-file", wrong)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "refused the bearer token (401 Unauthorized)")
	assert.NotContains(t, stderr, "wrong-admin-token")

	// Without authentication on the platform, no token is needed.
	open := servePlatform(t, "")
	code, stdout, stderr := runBinary(t, bin, "platform", "token", "create", "later", "--scope", "read", "--platform", open.URL)
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasPrefix(stdout, platform.TokenPrefix))

	// What answers is not a platform: a bounded, printable error.
	junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("\x1b]0;pwned\x07" + strings.Repeat("x", 10000)))
	}))
	defer junk.Close()
	code, _, stderr = runBinary(t, bin, "platform", "token", "list", "--platform", junk.URL)
	assert.Equal(t, 1, code)
	assert.NotContains(t, stderr, "\x1b")
	assert.Less(t, len(stderr), 1024)
}
