package platform

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The distinctive secrets of these tests: one an agent gives, one the
// toolset's configuration.
const (
	agentSecret   = "sk-agent-9f8e7d6c5b4a"
	toolsetSecret = "sk-toolset-0a1b2c3d4e5f"
)

const secretAgent = `name: support
toolsets: [fin-tools]
toolsetConfigs:
  - toolset: fin-tools
    configValues:
      greet: {api_key: ` + agentSecret + `, region: eu}  # the key is ` + agentSecret + `
      shout: {loud_key: LOUD}
`

// secretEnv is a platform with fin-tools ready, a toolset-level secret
// and the agent support put.
func secretEnv(t *testing.T, dir string) *testEnv {
	e := openEnv(t, dir, nil)
	e.upload("fin-tools", configPackage(t, 0, financeTools("Greets.")...))
	require.Equal(t, "ready", e.settle("fin-tools")["discoveryStatus"])
	r := e.do("PATCH", "/api/v1/platform/toolsets/fin-tools/config", []byte(`{"api_key":"`+toolsetSecret+`"}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = e.do("PUT", "/api/v1/platform/agents/support", []byte(secretAgent))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	return e
}

func (e *testEnv) storedSecrets(agent string) map[string]any {
	e.t.Helper()
	path := filepath.Join(e.dir, ".platform", "secrets", agent+".json")
	fi, err := os.Stat(path)
	require.NoError(e.t, err)
	assert.Equal(e.t, os.FileMode(0o600), fi.Mode().Perm())
	data, err := os.ReadFile(path)
	require.NoError(e.t, err)
	var m map[string]any
	require.NoError(e.t, json.Unmarshal(data, &m))
	return m
}

// A secret never appears in any answer, in the stored agent file nor in
// the logs, whatever route is asked: it is kept apart, 0600.
func TestSecretsNeverInAnyAnswer(t *testing.T) {
	t.Parallel()
	e := secretEnv(t, storeDir(t))
	var bodies []string
	ask := func(method, path string, body []byte, want int) response {
		t.Helper()
		r := e.do(method, path, body)
		require.Equal(t, want, r.status, "%s %s: %s", method, path, r.body)
		bodies = append(bodies, method+" "+path+": "+string(r.body))
		return r
	}
	put := ask("PUT", "/api/v1/platform/agents/support", []byte(secretAgent), http.StatusOK)
	assert.Contains(t, string(put.body), `api_key: \"<REDACTED>\"`)
	ask("POST", "/api/v1/platform/agents/support/check", []byte(secretAgent), http.StatusOK)
	ask("GET", "/api/v1/platform/agents/support", nil, http.StatusOK)
	ask("GET", "/api/v1/platform/agents", nil, http.StatusOK)
	ask("POST", "/api/v1/platform/agents/support/deploy", nil, http.StatusOK)
	ask("GET", "/api/v1/platform/agents/support/effective", nil, http.StatusOK)
	ask("GET", "/api/v1/platform/toolsets", nil, http.StatusOK)
	ask("GET", "/api/v1/platform/toolsets/fin-tools", nil, http.StatusOK)
	ask("GET", "/api/v1/platform/toolsets/fin-tools/config", nil, http.StatusOK)
	ask("PUT", "/api/v1/platform/toolsets/fin-tools/package", configPackage(t, 0, financeTools("Greets.")...), http.StatusConflict)

	// Problems: a secret of the wrong type, a secret with an unknown
	// key beside it, a deploy refused for a missing value; none quotes
	// the value.
	bad := strings.Replace(secretAgent, "api_key: "+agentSecret, "api_key: {nested: "+agentSecret+"}", 1)
	ask("PUT", "/api/v1/platform/agents/support", []byte(bad), http.StatusUnprocessableEntity)
	ask("POST", "/api/v1/platform/agents/support/check", []byte(bad), http.StatusUnprocessableEntity)
	bad = strings.Replace(secretAgent, "region: eu", "region: 12, nokey: "+agentSecret, 1)
	ask("PUT", "/api/v1/platform/agents/support", []byte(bad), http.StatusUnprocessableEntity)
	noShout := strings.Replace(secretAgent, "      shout: {loud_key: LOUD}\n", "", 1)
	ask("PUT", "/api/v1/platform/agents/support", []byte(noShout), http.StatusOK)
	ask("POST", "/api/v1/platform/agents/support/deploy", nil, http.StatusConflict)
	ask("GET", "/api/v1/platform/agents/support", nil, http.StatusOK)

	for _, path := range []string{"/", "/toolsets/fin-tools"} {
		r := e.page(path)
		require.Equal(t, http.StatusOK, r.status, "%s", path)
		bodies = append(bodies, "page "+path+": "+string(r.body))
	}
	for _, b := range bodies {
		assert.NotContains(t, b, agentSecret)
		assert.NotContains(t, b, toolsetSecret)
	}
	logs := e.logs.String()
	assert.NotContains(t, logs, agentSecret)
	assert.NotContains(t, logs, toolsetSecret)

	stored, err := os.ReadFile(filepath.Join(e.dir, ".platform", "agents", "support.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(stored), agentSecret, "not even in the comment that followed it")
	assert.Equal(t, agentSecret, e.storedSecrets("support")["fin-tools/greet/api_key"])
	fi, err := os.Stat(filepath.Join(e.dir, ".platform", "secrets"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}

// A file sent back as read, <REDACTED> in place of the secret, keeps the
// stored value; a new value replaces it; a placeholder with nothing
// stored behind it is a problem naming the tool and the key.
func TestRedactedRoundTrip(t *testing.T) {
	t.Parallel()
	e := secretEnv(t, storeDir(t))
	source := e.do("GET", "/api/v1/platform/agents/support", nil).json(t)["source"].(string)
	require.Contains(t, source, `"<REDACTED>"`)
	require.NotContains(t, source, agentSecret)

	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(source))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, source, r.json(t)["source"], "the same file back")
	assert.Equal(t, agentSecret, e.storedSecrets("support")["fin-tools/greet/api_key"])
	r = e.do("POST", "/api/v1/platform/agents/support/check", []byte(source))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	r = e.do("PUT", "/api/v1/platform/agents/support", []byte(strings.Replace(secretAgent, agentSecret, "sk-rotated", 2)))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "sk-rotated", e.storedSecrets("support")["fin-tools/greet/api_key"])

	// The placeholder where nothing is stored: region is no secret.
	doc := strings.Replace(source, "region: eu", "region: <REDACTED>", 1)
	require.NotEqual(t, source, doc)
	r = e.do("PUT", "/api/v1/platform/agents/support", []byte(doc))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	probs := problemTexts(problemsIn(t, r))
	assert.Contains(t, probs, `tool "greet": configuration key "region"`)
	assert.Contains(t, probs, "give the value")
	// Another agent cannot take this one's secret with the placeholder.
	r = e.do("PUT", "/api/v1/platform/agents/other", []byte(strings.Replace(source, "name: support", "name: other", 1)))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)

	// Deleting the agent deletes its secrets.
	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/platform/agents/support", nil).status)
	_, err := os.Stat(filepath.Join(e.dir, ".platform", "secrets", "support.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// A secret under a YAML anchor, or given by an alias, is refused: its
// text would be in the file twice.
func TestSecretUnderAnAnchorIsRefused(t *testing.T) {
	t.Parallel()
	e := secretEnv(t, storeDir(t))
	for _, greet := range []string{
		"greet: {api_key: &k sk-anchored, region: *k}",
		"greet: &g {api_key: sk-anchored, region: eu}",
		"greet: {region: &k sk-anchored, api_key: *k}",
	} {
		doc := strings.Replace(secretAgent, "greet: {api_key: "+agentSecret+", region: eu}  # the key is "+agentSecret, greet, 1)
		require.NotEqual(t, secretAgent, doc)
		r := e.do("PUT", "/api/v1/platform/agents/support", []byte(doc))
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s: %s", greet, r.body)
		assert.Contains(t, string(r.body), "anchor", greet)
		assert.NotContains(t, string(r.body), "sk-anchored")
	}
}

// A restart keeps the deployment and the secrets: the same effective
// document, and a file sent back with the placeholder still keeps the
// value.
func TestRestartKeepsDeploymentAndSecrets(t *testing.T) {
	dir := storeDir(t)
	e := secretEnv(t, dir)
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/platform/agents/support/deploy", nil).status)
	before, _ := e.effective("support")
	source := e.do("GET", "/api/v1/platform/agents/support", nil).json(t)["source"].(string)
	e.close()

	e = openEnv(t, dir, nil)
	require.Equal(t, "ready", e.settle("fin-tools")["discoveryStatus"])
	after, _ := e.effective("support")
	assert.Equal(t, before.Document, after.Document)
	assert.Equal(t, before.Versions, after.Versions)
	assert.True(t, before.DeployedAt.Equal(after.DeployedAt))
	var d AgentDetail
	require.NoError(t, json.Unmarshal(e.do("GET", "/api/v1/platform/agents/support", nil).body, &d))
	assert.True(t, d.Deployed)
	assert.False(t, d.NeedsRedeploy)
	assert.Equal(t, source, d.Source)

	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(source))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, agentSecret, e.storedSecrets("support")["fin-tools/greet/api_key"])
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/platform/agents/support/deploy", nil).status)
}

// Puts, checks, deploys and reads of an agent at the same time: each
// answer is whole, none is a failure of the server's, none shows the
// secret, and the secret is kept.
func TestConcurrentDeploysAndPuts(t *testing.T) {
	t.Parallel()
	e := secretEnv(t, storeDir(t))
	source := e.do("GET", "/api/v1/platform/agents/support", nil).json(t)["source"].(string)
	type req struct {
		method, path string
		body         []byte
	}
	reqs := []req{
		{"PUT", "/api/v1/platform/agents/support", []byte(secretAgent)},
		{"PUT", "/api/v1/platform/agents/support", []byte(source)},
		{"POST", "/api/v1/platform/agents/support/check", []byte(source)},
		{"POST", "/api/v1/platform/agents/support/deploy", nil},
		{"GET", "/api/v1/platform/agents/support/effective", nil},
		{"GET", "/api/v1/platform/agents/support", nil},
		{"GET", "/api/v1/platform/agents", nil},
	}
	errs := make(chan string, 8*len(reqs))
	done := make(chan struct{})
	for w := 0; w < 8; w++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i, q := range reqs {
				q = reqs[(i+w)%len(reqs)]
				r := e.do(q.method, q.path, q.body)
				switch {
				case r.status >= 500:
					errs <- q.method + " " + q.path + ": " + string(r.body)
				case strings.Contains(string(r.body), agentSecret):
					errs <- q.method + " " + q.path + " shows the secret"
				}
			}
		}()
	}
	for w := 0; w < 8; w++ {
		<-done
	}
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	assert.Equal(t, agentSecret, e.storedSecrets("support")["fin-tools/greet/api_key"])
}

// While a re-upload of a toolset is pending (or failed), the agent's
// entries of it are not checked, and the coming version may declare
// secret a key the serving one lacks: every value of that toolset is
// then kept apart, as for a toolset whose tools are not known yet, never
// stored in the agent file where every reader sees it.
func TestSecretOfAPendingReuploadIsKeptApart(t *testing.T) {
	t.Parallel()
	const pendingSecret = "sk-pending-7a6b5c4d"
	e := newEnv(t, nil)
	e.upload("fin-tools", configPackage(t, 0, financeTools("Greets.")...))
	require.Equal(t, "ready", e.settle("fin-tools")["discoveryStatus"])
	next := financeTools("Greets.")
	next[0].config = append(next[0].config, map[string]any{"key": "token", "type": "string", "secret": true})
	g := newGate(t)
	e.upload("fin-tools", gatedConfigPackage(t, g, next...))

	doc := strings.Replace(secretAgent, "region: eu}", "region: eu, token: "+pendingSecret+"}", 1)
	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(doc))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, "pending", e.do("GET", "/api/v1/platform/toolsets/fin-tools", nil).json(t)["discoveryStatus"], "the test needs the re-upload pending")
	assert.NotContains(t, string(r.body), pendingSecret)
	r = e.do("GET", "/api/v1/platform/agents/support", nil)
	assert.NotContains(t, string(r.body), pendingSecret)
	stored, err := os.ReadFile(filepath.Join(e.dir, ".platform", "agents", "support.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(stored), pendingSecret)
	assert.Equal(t, pendingSecret, e.storedSecrets("support")["fin-tools/greet/token"])
	g.open(t)
	require.Equal(t, "ready", e.settle("fin-tools")["discoveryStatus"])
}

// The platform keeps one secret per toolset, tool and key of an agent:
// a file whose two entries of one toolset give that key two secrets
// would have one of them stored for both, and the other lost (the
// placeholder handed to the tool). It is refused, naming the key.
func TestSecretGivenByTwoEntriesOfAToolsetIsRefused(t *testing.T) {
	t.Parallel()
	e := secretEnv(t, storeDir(t))
	doc := `name: support
toolsets:
  - package: fin-tools
    tools:
      greet: {api_key: sk-first-1111, region: eu}
      shout: {loud_key: LOUD}
  - package: fin-tools
    prefix: b_
    tools:
      greet: {api_key: sk-second-2222, region: eu}
      shout: {loud_key: LOUD}
`
	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(doc))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	assert.NotContains(t, string(r.body), "sk-first-1111")
	assert.NotContains(t, string(r.body), "sk-second-2222")
	assert.Contains(t, problemTexts(problemsIn(t, r)), `tool "greet": configuration key "api_key"`)
	assert.Equal(t, agentSecret, e.storedSecrets("support")["fin-tools/greet/api_key"], "the stored agent unchanged")
}
