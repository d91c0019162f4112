package platform

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A credential written in clear in an agent's MCP entry would be shown to
// every token that may read agents: the platform refuses it, without
// quoting it, and takes the ${NAME} the runner gives instead.
func TestMCPCredentialsInClearAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const leaked = "sk-live-credential-in-clear-1234"
	for what, doc := range map[string]string{
		"a header":                "name: docs\ntoolsets:\n  - mcp:\n      url: https://mcp.example.com/mcp\n      headers: {Authorization: \"Bearer " + leaked + "\"}\n",
		"an environment variable": "name: docs\ntoolsets:\n  - mcp:\n      command: [mcp-server]\n      env: {LOG_LEVEL: warn, API_KEY: " + leaked + "}\n",
		"SAM's shape":             "kind: agent\nname: docs\nspec:\n  tools:\n    - tool_type: mcp\n      connection_params:\n        type: streamable-http\n        url: https://mcp.example.com/mcp\n        headers: {X-Api-Token: " + leaked + "}\n",
	} {
		for _, route := range []string{"PUT /api/v1/platform/agents/docs", "POST /api/v1/platform/agents/docs/check"} {
			method, path, _ := strings.Cut(route, " ")
			r := e.do(method, path, []byte(doc))
			require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s, %s: %s", what, route, r.body)
			assert.Contains(t, string(r.body), "is given in clear: write it as ${NAME}", what)
			assert.NotContains(t, string(r.body), leaked, what)
		}
	}
	r := e.do("GET", "/api/v1/platform/agents/docs", nil)
	assert.Equal(t, http.StatusNotFound, r.status, "nothing stored")

	ok := "name: docs\ntoolsets:\n  - mcp:\n      url: https://mcp.example.com/mcp\n      headers: {Authorization: \"Bearer ${DOCS_TOKEN}\"}\n  - mcp:\n      command: [mcp-server]\n      env: {LOG_LEVEL: warn, API_KEY: \"${FILES_KEY}\"}\n"
	r = e.do("PUT", "/api/v1/platform/agents/docs", []byte(ok))
	assert.Equal(t, http.StatusCreated, r.status, "%s", r.body)
}
