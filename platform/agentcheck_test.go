package platform

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The check of a bad agent answers what its PUT answers: the same 422,
// every problem with its line, and nothing stored either way.
func TestAgentCheckGivesThePutsProblems(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("broken", brokenPackage(t))
	require.Equal(t, "failed", e.settle("broken")["discoveryStatus"])

	for _, tc := range []struct{ name, path, doc string }{
		{"store problems", "support", "name: support\ntoolsets:\n  - package: nosuch\n  - package: broken\n"},
		{"parse problems", "support", "name: support\ntoolsets:\n  - package: nosuch\n  - prefix: x\n"},
		{"another name", "other", "name: support\ntoolsets: []\n"},
		{"not YAML", "support", "name: [\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := e.do("POST", "/api/v1/platform/agents/"+tc.path+"/check", []byte(tc.doc))
			put := e.do("PUT", "/api/v1/platform/agents/"+tc.path, []byte(tc.doc))
			require.Equal(t, http.StatusUnprocessableEntity, put.status, "%s", put.body)
			assert.Equal(t, put.status, check.status, "%s", check.body)
			assert.Equal(t, "InvalidAgent", check.errCode(t))
			assert.JSONEq(t, string(put.body), string(check.body))
		})
	}
	r := e.do("GET", "/api/v1/platform/agents", nil)
	assert.Equal(t, 0.0, r.json(t)["meta"].(map[string]any)["total"])
}

// A good agent's check answers what its PUT would store, but stores
// nothing: the agent is not found afterwards, and its package is not in
// use, so a re-upload needs no force.
func TestAgentCheckStoresNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	require.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])

	doc := agentYAML("support", "greeter")
	r := e.do("POST", "/api/v1/platform/agents/support/check", []byte(doc))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Empty(t, r.header.Get("Location"))
	m := r.json(t)
	assert.Equal(t, "support", m["name"])
	assert.Equal(t, []any{"greeter"}, m["packages"])
	assert.Equal(t, doc, m["source"])
	assert.NotEmpty(t, m["updatedAt"])

	r = e.do("GET", "/api/v1/platform/agents/support", nil)
	assert.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	r = e.do("GET", "/api/v1/platform/agents", nil)
	assert.Equal(t, 0.0, r.json(t)["meta"].(map[string]any)["total"])
	r = e.do("GET", "/api/v1/platform/toolsets/greeter", nil)
	assert.Equal(t, []any{}, r.json(t)["usedBy"])
	r = e.do("PUT", "/api/v1/platform/toolsets/greeter/package", goodPackage(t, "greet", "v2", 0))
	assert.Equal(t, http.StatusAccepted, r.status, "not in use: %s", r.body)
	assert.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])

	// A stored agent stays as it is when another version is checked.
	r = e.do("PUT", "/api/v1/platform/agents/support", []byte(doc))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = e.do("POST", "/api/v1/platform/agents/support/check", []byte("name: support\ntoolsets: []\n"))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, []any{}, r.json(t)["packages"])
	r = e.do("GET", "/api/v1/platform/agents/support", nil)
	assert.Equal(t, doc, r.json(t)["source"])
}

// The check is bounded, named and authenticated as the PUT is.
func TestAgentCheckLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{MaxAgentBytes: 100})
	r := e.do("POST", "/api/v1/platform/agents/big/check", []byte("name: big\n# "+string(make([]byte, 200))+"\n"))
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	assert.Equal(t, "RequestTooLarge", r.errCode(t))
	r = e.do("POST", "/api/v1/platform/agents/no%20such/check", []byte("name: x\n"))
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, "InvalidName", r.errCode(t))
	r = e.doToken("", "POST", "/api/v1/platform/agents/x/check", []byte("name: x\n"))
	assert.Equal(t, http.StatusUnauthorized, r.status)
	r = e.do("GET", "/api/v1/platform/agents/x/check", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
}
