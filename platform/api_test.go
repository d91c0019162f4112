package platform

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCreateListGetDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"weather"}`))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	m := r.json(t)
	assert.Equal(t, "weather", m["name"])
	assert.Equal(t, "created", m["discoveryStatus"])
	assert.Equal(t, []any{}, m["discoveryErrors"])
	assert.Equal(t, []any{}, m["usedBy"])
	assert.Nil(t, m["uploadedAt"])
	assert.Equal(t, "/api/v1/platform/toolsets/weather", r.header.Get("Location"))

	r = e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"weather"}`))
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, "Conflict", r.errCode(t))

	for _, n := range []string{"b", "c", "d"} {
		r = e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"`+n+`"}`))
		require.Equal(t, http.StatusCreated, r.status)
	}
	r = e.do("GET", "/api/v1/platform/toolsets?page=2&pageSize=3", nil)
	require.Equal(t, http.StatusOK, r.status)
	m = r.json(t)
	assert.Equal(t, map[string]any{"page": 2.0, "pageSize": 3.0, "total": 4.0}, m["meta"])
	data := m["data"].([]any)
	require.Len(t, data, 1)
	assert.Equal(t, "weather", data[0].(map[string]any)["name"])
	r = e.do("GET", "/api/v1/platform/toolsets?page=9", nil)
	assert.Equal(t, []any{}, r.json(t)["data"])
	for _, q := range []string{"page=0", "pageSize=0", "pageSize=100000", "page=x"} {
		r = e.do("GET", "/api/v1/platform/toolsets?"+q, nil)
		assert.Equal(t, http.StatusBadRequest, r.status, q)
		assert.Equal(t, "InvalidRequest", r.errCode(t), q)
	}

	r = e.do("GET", "/api/v1/platform/toolsets/b", nil)
	require.Equal(t, http.StatusOK, r.status)
	m = r.json(t)
	assert.Equal(t, []any{}, m["tools"])
	assert.Equal(t, []any{}, m["versions"])
	assert.Equal(t, map[string]any{}, m["config"])

	r = e.do("DELETE", "/api/v1/platform/toolsets/b", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "removed", r.json(t)["discoveryStatus"])
	r = e.do("DELETE", "/api/v1/platform/toolsets/b", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotFound", r.errCode(t))
	r = e.do("GET", "/api/v1/platform/toolsets/b", nil)
	assert.Equal(t, "removed", r.json(t)["discoveryStatus"])
	r = e.do("GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, 3.0, r.json(t)["meta"].(map[string]any)["total"])
	// A removed name can be created again.
	r = e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"b"}`))
	assert.Equal(t, http.StatusCreated, r.status)

	r = e.do("GET", "/api/v1/platform/toolsets/nosuch", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotFound", r.errCode(t))
}

func TestCreateRefusesBadBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for body, code := range map[string]string{
		``:                          "InvalidRequest",
		`{`:                         "InvalidRequest",
		`{"name":"a","extra":1}`:    "InvalidRequest",
		`{"name":"a"} {"name":"b"}`: "InvalidRequest",
		`["a"]`:                     "InvalidRequest",
		`{"name":"../x"}`:           "InvalidName",
		`{"name":""}`:               "InvalidName",
		`{"name":"buildTarget"}`:    "InvalidName",
		`{"name":"` + strings.Repeat("a", 65) + `"}`: "InvalidName",
	} {
		r := e.do("POST", "/api/v1/platform/toolsets", []byte(body))
		assert.Equal(t, http.StatusBadRequest, r.status, body)
		assert.Equal(t, code, r.errCode(t), body)
	}
	big := `{"name":"` + strings.Repeat("a", MaxJSONBody) + `"}`
	r := e.do("POST", "/api/v1/platform/toolsets", []byte(big))
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	assert.Equal(t, "RequestTooLarge", r.errCode(t))
	assert.Empty(t, e.store.List())
}

func TestBuildTarget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do("GET", "/api/v1/platform/toolsets/buildTarget", nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, map[string]any{"os": runtime.GOOS, "arch": runtime.GOARCH}, r.json(t))
}

func TestUploadDiscoversInTheBackground(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m := e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 300_000_000))
	assert.Equal(t, "pending", m["discoveryStatus"])
	assert.Equal(t, 1.0, m["version"])

	m = e.settle("greeter")
	require.Equal(t, "ready", m["discoveryStatus"], "%v", m["discoveryErrors"])
	assert.Equal(t, 1.0, m["servingVersion"])
	assert.Equal(t, 1.0, m["toolCount"])
	assert.NotNil(t, m["uploadedAt"])
	tools := m["tools"].([]any)
	require.Len(t, tools, 1)
	tool := tools[0].(map[string]any)
	assert.Equal(t, "greet", tool["toolName"])
	assert.Equal(t, "Greets someone.", tool["description"])
	assert.Equal(t, "object", tool["parameters"].(map[string]any)["type"])
	versions := m["versions"].([]any)
	require.Len(t, versions, 1)
	assert.Equal(t, "ready", versions[0].(map[string]any)["discoveryStatus"])

	// Export: the zip as uploaded.
	r := e.do("GET", "/api/v1/platform/toolsets/greeter/package", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "application/zip", r.header.Get("Content-Type"))
	assert.Contains(t, r.header.Get("Content-Disposition"), "greeter.zip")
	zr, err := zip.NewReader(bytes.NewReader(r.body), int64(len(r.body)))
	require.NoError(t, err)
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	assert.Contains(t, names, "manifest.yaml")
	r = e.do("GET", "/api/v1/platform/toolsets/greeter/package?version=1", nil)
	assert.Equal(t, http.StatusOK, r.status)
	r = e.do("GET", "/api/v1/platform/toolsets/greeter/package?version=7", nil)
	assert.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	assert.Equal(t, "NotFound", r.errCode(t))
	r = e.do("GET", "/api/v1/platform/toolsets/nosuch/package", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	r = e.do("GET", "/api/v1/platform/toolsets/greeter/package?version=-1", nil)
	assert.Equal(t, http.StatusBadRequest, r.status)
}

func TestFailedReuploadKeepsThePreviousVersionServing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	require.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])

	e.upload("greeter", brokenPackage(t))
	m := e.settle("greeter")
	assert.Equal(t, "failed", m["discoveryStatus"])
	assert.Equal(t, 2.0, m["version"])
	assert.Equal(t, 1.0, m["servingVersion"], "the previous version still serves")
	errs := m["discoveryErrors"].([]any)
	require.NotEmpty(t, errs)
	assert.Contains(t, fmt.Sprint(errs), "the database is unreachable")
	tools := m["tools"].([]any)
	require.Len(t, tools, 1, "the serving version's tools are shown")
	assert.Equal(t, "greet", tools[0].(map[string]any)["toolName"])
	assert.Len(t, m["versions"].([]any), 2)
}

func TestInvalidPackagesAre422(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for name, data := range map[string][]byte{
		"empty":       {},
		"notzip":      []byte("this is not a zip file at all"),
		"nomanifest":  makeZip(t, zfile{name: "tool", data: []byte("#!/bin/sh\n"), mode: 0o755}),
		"badmanifest": makeZip(t, zfile{name: "manifest.yaml", data: []byte("version: [\n")}),
		"traversal":   makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)}, zfile{name: "../../etc/evil", data: []byte("x")}),
	} {
		r := e.do("PUT", "/api/v1/platform/toolsets/"+name+"/package", data)
		assert.Equal(t, http.StatusUnprocessableEntity, r.status, "%s: %s", name, r.body)
		assert.Equal(t, "InvalidPackage", r.errCode(t), name)
		var eb ErrorBody
		require.NoError(t, jsonUnmarshal(r.body, &eb))
		assert.NotEmpty(t, eb.Error.Problems, name)
	}
	assert.Empty(t, e.store.List(), "nothing was stored")
}

func TestConfigPatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do("PATCH", "/api/v1/platform/toolsets/nosuch/config", []byte(`{"greeting":"hi"}`))
	assert.Equal(t, http.StatusNotFound, r.status, "%s", r.body)

	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	require.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])
	r = e.do("PATCH", "/api/v1/platform/toolsets/greeter/config", []byte(`{"greeting":"hi","api_key":"s3cr3t-value"}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.NotContains(t, string(r.body), "s3cr3t-value")
	cfg := r.json(t)["config"].(map[string]any)
	assert.Equal(t, "hi", cfg["greeting"])
	assert.Equal(t, "<REDACTED>", cfg["api_key"])

	r = e.do("GET", "/api/v1/platform/toolsets/greeter", nil)
	assert.NotContains(t, string(r.body), "s3cr3t-value")
	assert.Equal(t, "<REDACTED>", r.json(t)["config"].(map[string]any)["api_key"])
	r = e.do("GET", "/api/v1/platform/toolsets/greeter/config", nil)
	assert.Equal(t, "hi", r.json(t)["config"].(map[string]any)["greeting"])

	// A merge patch: null removes a key.
	r = e.do("PATCH", "/api/v1/platform/toolsets/greeter/config", []byte(`{"greeting":null}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.NotContains(t, r.json(t)["config"], "greeting")

	r = e.do("PATCH", "/api/v1/platform/toolsets/greeter/config", []byte(`{"greeting":42,"nosuchkey":"x"}`))
	assert.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	assert.Equal(t, "InvalidConfig", r.errCode(t))
	for _, body := range []string{`[1]`, `"x"`, `null`, `{`} {
		r = e.do("PATCH", "/api/v1/platform/toolsets/greeter/config", []byte(body))
		assert.Equal(t, http.StatusBadRequest, r.status, body)
		assert.Equal(t, "InvalidRequest", r.errCode(t), body)
	}
}

func TestAgentsAndPackageInUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	require.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])

	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "greeter")))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	m := r.json(t)
	assert.Equal(t, []any{"greeter"}, m["packages"])
	assert.Contains(t, m["source"], "package: greeter")
	r = e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "greeter")))
	assert.Equal(t, http.StatusOK, r.status, "replaced")

	r = e.do("GET", "/api/v1/platform/agents", nil)
	require.Equal(t, http.StatusOK, r.status)
	m = r.json(t)
	assert.Equal(t, 1.0, m["meta"].(map[string]any)["total"])
	assert.Equal(t, "support", m["data"].([]any)[0].(map[string]any)["name"])
	r = e.do("GET", "/api/v1/platform/agents/support", nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, agentYAML("support", "greeter"), r.json(t)["source"])

	r = e.do("GET", "/api/v1/platform/toolsets/greeter", nil)
	assert.Equal(t, []any{"support"}, r.json(t)["usedBy"])

	// In use: a re-upload and a removal need force.
	r = e.do("PUT", "/api/v1/platform/toolsets/greeter/package", goodPackage(t, "greet", "v2", 0))
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, "PackageInUse", r.errCode(t))
	assert.Contains(t, string(r.body), "support")
	r = e.do("DELETE", "/api/v1/platform/toolsets/greeter", nil)
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, "PackageInUse", r.errCode(t))
	r = e.do("PUT", "/api/v1/platform/toolsets/greeter/package?force=maybe", goodPackage(t, "greet", "v2", 0))
	assert.Equal(t, http.StatusBadRequest, r.status)
	r = e.do("PUT", "/api/v1/platform/toolsets/greeter/package?force=true", goodPackage(t, "greet", "v2", 0))
	assert.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	assert.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])

	r = e.do("DELETE", "/api/v1/platform/agents/support", nil)
	assert.Equal(t, http.StatusNoContent, r.status)
	r = e.do("DELETE", "/api/v1/platform/agents/support", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotFound", r.errCode(t))
	r = e.do("GET", "/api/v1/platform/agents/support", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	r = e.do("DELETE", "/api/v1/platform/toolsets/greeter", nil)
	assert.Equal(t, http.StatusOK, r.status, "no longer in use")
}

func TestAgentWithAnUnknownPackageIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("broken", brokenPackage(t))
	require.Equal(t, "failed", e.settle("broken")["discoveryStatus"])

	doc := "name: support\ntoolsets:\n  - package: nosuch\n  - package: broken\n  - prefix: x\n"
	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(doc))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	assert.Equal(t, "InvalidAgent", r.errCode(t))
	var eb ErrorBody
	require.NoError(t, jsonUnmarshal(r.body, &eb))
	require.NotEmpty(t, eb.Error.Problems)
	for _, p := range eb.Error.Problems {
		assert.NotZero(t, p.Line, "%+v", p)
	}

	// A toolset the store lacks is a problem; one that failed is not
	// (the agent may be created, and waits for it to deploy).
	doc = "name: support\ntoolsets:\n  - package: nosuch\n  - package: broken\n"
	r = e.do("PUT", "/api/v1/platform/agents/support", []byte(doc))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	eb = ErrorBody{}
	require.NoError(t, jsonUnmarshal(r.body, &eb))
	require.Len(t, eb.Error.Problems, 1, "%s", r.body)
	assert.Equal(t, 3, eb.Error.Problems[0].Line)
	assert.Contains(t, eb.Error.Problems[0].Message, "nosuch")

	// The name in the file must be the one it is stored under.
	r = e.do("PUT", "/api/v1/platform/agents/other", []byte("name: support\ntoolsets: []\n"))
	assert.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	r = e.do("GET", "/api/v1/platform/agents", nil)
	assert.Equal(t, 0.0, r.json(t)["meta"].(map[string]any)["total"])
}

// An agent file is data to the platform: an MCP server it names is never
// started, however its command is spelled.
func TestAgentFileCommandIsNeverRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	marker := filepath.Join(t.TempDir(), "ran")
	doc := fmt.Sprintf("name: evil\ntoolsets:\n  - mcp:\n      name: evil\n      command: [/bin/sh, -c, 'touch %s']\n", marker)
	r := e.do("PUT", "/api/v1/platform/agents/evil", []byte(doc))
	t.Logf("answer: %d %s", r.status, r.body)
	assert.Contains(t, []int{http.StatusCreated, http.StatusUnprocessableEntity}, r.status)
	r = e.do("GET", "/api/v1/platform/agents/evil", nil)
	_, err := os.Stat(marker)
	assert.ErrorIs(t, err, os.ErrNotExist, "the agent's command ran on the platform host")
}

func TestAgentsPersist(t *testing.T) {
	dir := storeDir(t)
	e := openEnv(t, dir, nil)
	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	require.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])
	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "greeter")))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	e.close()

	e = openEnv(t, dir, nil)
	r = e.do("GET", "/api/v1/platform/toolsets/greeter", nil)
	assert.Equal(t, []any{"support"}, r.json(t)["usedBy"])
	r = e.do("DELETE", "/api/v1/platform/toolsets/greeter", nil)
	assert.Equal(t, http.StatusConflict, r.status)
}

func TestAgentTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{MaxAgentBytes: 100})
	r := e.do("PUT", "/api/v1/platform/agents/big", []byte("name: big\n# "+strings.Repeat("x", 200)+"\n"))
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	assert.Equal(t, "RequestTooLarge", r.errCode(t))
}

func TestUnknownRoutesAndMethodsAreJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do("GET", "/api/v1/platform/nosuch", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotFound", r.errCode(t))
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	r = e.do("GET", "/nosuch", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotFound", r.errCode(t))
	r = e.do("POST", "/api/v1/platform/toolsets/x", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
	assert.Equal(t, "MethodNotAllowed", r.errCode(t))
	assert.Contains(t, r.header.Get("Allow"), "GET")
	r = e.do("PATCH", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
	assert.Equal(t, "MethodNotAllowed", r.errCode(t))
}

// The API's root without its slash is the API's, in JSON, not a
// redirect of the mux's.
func TestAPIRootWithoutSlashIsNotRedirected(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tok := range []string{"", testToken} {
		req, err := http.NewRequest("GET", e.hs.URL+"/api/v1/platform", nil)
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := noRedirect(e, nil).Do(req)
		require.NoError(t, err)
		r := response{status: res.StatusCode, header: res.Header, body: readBody(t, res)}
		want := map[string]int{"": http.StatusUnauthorized, testToken: http.StatusNotFound}[tok]
		assert.Equal(t, want, r.status, "%s", r.body)
		assert.Equal(t, "application/json", r.header.Get("Content-Type"))
		assert.NotEmpty(t, r.errCode(t))
	}
}

// Asking for a version the store does not keep says so, not that the
// toolset does not exist.
func TestExportOfAMissingVersionNamesTheVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("greeter", goodPackage(t, "greet", "x", 0))
	e.settle("greeter")
	r := e.do("GET", "/api/v1/platform/toolsets/greeter/package?version=7", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotFound", r.errCode(t))
	assert.Contains(t, string(r.body), "version 7")
	r = e.do("GET", "/api/v1/platform/toolsets/nosuch/package?version=1", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Contains(t, string(r.body), "no such toolset")
}

// An agent is checked when it is stored, but its package moves on: a
// forced re-upload that drops the tool the agent configures leaves the
// agent broken, and its detail says how, where in the file.
func TestAgentBrokenByAReuploadShowsItsProblems(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	require.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])
	agent := "name: support\ntoolsets:\n  - package: greeter\n    tools:\n      greet: {greeting: hey}\n"
	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(agent))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	assert.Equal(t, []any{}, r.json(t)["problems"], "a stored agent checks")
	r = e.do("GET", "/api/v1/platform/agents/support", nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, []any{}, r.json(t)["problems"])

	r = e.do("PUT", "/api/v1/platform/toolsets/greeter/package?force=true", goodPackage(t, "wave", "Waves.", 0))
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])
	r = e.do("GET", "/api/v1/platform/agents/support", nil)
	require.Equal(t, http.StatusOK, r.status)
	problems, _ := r.json(t)["problems"].([]any)
	require.NotEmpty(t, problems, "%s", r.body)
	first := problems[0].(map[string]any)
	assert.Contains(t, first["message"], "greet", "%s", r.body)
	assert.Equal(t, float64(5), first["line"], "the problem points at the tool's config: %s", r.body)
}
