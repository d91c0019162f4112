package platform

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gotoolset/toolset/toolpkg"
)

// pageClient GETs a page with the client.
func (e *testEnv) pageWith(c *http.Client, path string) response {
	e.t.Helper()
	res, err := c.Get(e.hs.URL + path)
	require.NoError(e.t, err)
	return response{status: res.StatusCode, header: res.Header, body: readBody(e.t, res)}
}

// postForm posts a form of the page with the client.
func (e *testEnv) postForm(c *http.Client, path string, v url.Values) response {
	e.t.Helper()
	res, err := c.PostForm(e.hs.URL+path, v)
	require.NoError(e.t, err)
	return response{status: res.StatusCode, header: res.Header, body: readBody(e.t, res)}
}

// attachTools are the tools of the "crm" package of these tests: lookup
// takes a string, an integer, a boolean and a secret.
func attachTools() []configTool {
	return []configTool{
		{name: "lookup", description: "Looks a customer up.", config: []map[string]any{
			{"key": "region", "type": "string", "required": true, "description": "where the customers are"},
			{"key": "limit", "type": "integer", "default": 10},
			{"key": "verbose", "type": "boolean"},
			{"key": "api_key", "type": "string", "required": true, "secret": true},
		}},
		{name: "note", description: "Writes a note.", config: []map[string]any{
			{"key": "signature", "type": "string"},
		}},
	}
}

// storedAgent is an agent's stored file and secrets, to tell that
// nothing changed.
func (e *testEnv) storedAgent(name string) string {
	e.t.Helper()
	data, _, err := e.srv.agents.read(name)
	require.NoError(e.t, err)
	sec, err := e.srv.agents.secrets.load(name)
	require.NoError(e.t, err)
	return string(data) + "\n---\n" + strings.Join(sortedMapKeys(sec), ",")
}

const distinctSecret = "sk-page-ZQ7x9-never-shown"

// The agents page and an agent's: deploy state, toolsets with their
// dots, reasons, source redacted, the Deploy button only with the agents
// scope.
func TestPageAgents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("crm", configPackage(t, 0, attachTools()...))
	require.Equal(t, "ready", e.settle("crm")["discoveryStatus"])
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"billing"}`)).status)
	doc := "kind: agent\nname: support\nspec:\n  toolsets: [crm, billing]\n  toolsetConfigs:\n    - toolset: crm\n      configValues:\n        lookup: {region: eu, api_key: " + distinctSecret + "}\n"
	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(doc))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	admin := e.login(testToken)
	reader := e.login(e.createToken("viewer", ScopeRead).Secret)

	r = e.pageWith(admin, "/agents")
	require.Equal(t, http.StatusOK, r.status)
	body := string(r.body)
	assert.Contains(t, body, `data-agent="support" data-deployed="false"`)
	assert.Contains(t, body, `href="/agents/support"`)
	assert.Contains(t, body, "not deployed")

	r = e.pageWith(admin, "/agents/support")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	body = string(r.body)
	assert.Contains(t, body, `data-toolset="crm" data-status="ready"`)
	assert.Contains(t, body, `data-toolset="billing" data-status="created"`)
	assert.Contains(t, body, "dot-created")
	// The reasons are the deploy API's.
	api := e.do("POST", "/api/v1/platform/agents/support/deploy", nil)
	require.Equal(t, http.StatusConflict, api.status)
	reasons := problemsIn(t, api)
	require.NotEmpty(t, reasons)
	for _, p := range reasons {
		assert.Contains(t, body, strings.ReplaceAll(p.Message, `"`, "&#34;"))
	}
	assert.Contains(t, body, "no package was uploaded yet")
	assert.Contains(t, body, `id="deploy"`)
	assert.Contains(t, body, "&lt;REDACTED&gt;")
	assert.NotContains(t, body, distinctSecret)

	// Without the agents scope: no button, and the post is refused.
	r = e.pageWith(reader, "/agents/support")
	require.Equal(t, http.StatusOK, r.status)
	assert.NotContains(t, string(r.body), `id="deploy"`)
	assert.NotContains(t, string(r.body), `action="/agents/support/attach"`)
	assert.Equal(t, http.StatusForbidden, e.postForm(reader, "/agents/support/deploy", nil).status)
	assert.Equal(t, http.StatusForbidden, e.postForm(reader, "/agents/support/attach", url.Values{"toolset": {"crm"}}).status)
	assert.Equal(t, http.StatusForbidden, e.pageWith(reader, "/agents/support/attach?toolset=crm").status)

	// Not deployable: the button says why, and nothing is deployed.
	r = e.postForm(admin, "/agents/support/deploy", nil)
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Contains(t, string(r.body), "no package was uploaded yet")
	assert.False(t, e.do("GET", "/api/v1/platform/agents/support", nil).json(t)["deployed"].(bool))

	// Ready: deployed from the button.
	r = e.do("PUT", "/api/v1/platform/toolsets/billing/package?force=true", configPackage(t, 0, configTool{name: "charge", description: "Charges."}), "Content-Type", "application/zip")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.Equal(t, "ready", e.settle("billing")["discoveryStatus"])
	r = e.postForm(admin, "/agents/support/deploy", nil)
	require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
	assert.Equal(t, "/agents/support", r.header.Get("Location"))
	assert.True(t, e.do("GET", "/api/v1/platform/agents/support", nil).json(t)["deployed"].(bool))
	r = e.pageWith(admin, "/agents/support")
	assert.Contains(t, string(r.body), `data-deployed="true" data-needs-redeploy="false"`)
	assert.Contains(t, string(r.body), "badge-ok")

	for _, p := range []string{"/", "/agents", "/agents/support", "/toolsets/crm", "/agents/support/attach?toolset=crm", "/skills"} {
		r := e.pageWith(admin, p)
		require.Equal(t, http.StatusOK, r.status, p)
		assert.NotContains(t, string(r.body), distinctSecret, p)
	}
	assert.Equal(t, http.StatusNotFound, e.pageWith(admin, "/agents/nobody").status)
	assert.Equal(t, http.StatusBadRequest, e.pageWith(admin, "/agents/.bad").status)
}

// The attach form: a ready toolset, then its tools' fields; a secret is
// never filled back and, left empty, keeps its value; the file changes
// as a PUT would.
func TestPageAttach(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("crm", configPackage(t, 0, attachTools()...))
	require.Equal(t, "ready", e.settle("crm")["discoveryStatus"])
	doc := "kind: agent\nname: support\nspec:\n  systemPrompt: Help.\n  toolsets: []\n"
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/support", []byte(doc)).status)
	admin := e.login(testToken)

	r := e.pageWith(admin, "/agents/support")
	assert.Contains(t, string(r.body), `<option value="crm">crm</option>`)
	r = e.pageWith(admin, "/agents/support/attach?toolset=crm")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	body := string(r.body)
	assert.Contains(t, body, `type="password" name="v:lookup:api_key"`)
	assert.Contains(t, body, `name="v:lookup:verbose"`)
	assert.Contains(t, body, `type="number" step="1" name="v:lookup:limit"`)

	r = e.postForm(admin, "/agents/support/attach", url.Values{"toolset": {"crm"},
		"v:lookup:region": {"eu"}, "v:lookup:limit": {"25"}, "v:lookup:verbose": {"true"}, "v:lookup:api_key": {distinctSecret}, "v:note:signature": {""}})
	require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
	d := e.do("GET", "/api/v1/platform/agents/support", nil).json(t)
	src := d["source"].(string)
	assert.Contains(t, src, "crm")
	assert.Contains(t, src, "region: eu")
	assert.Contains(t, src, "limit: 25")
	assert.Contains(t, src, "verbose: true")
	assert.Contains(t, src, `api_key: "<REDACTED>"`)
	assert.NotContains(t, src, distinctSecret)
	assert.Contains(t, src, "systemPrompt: Help.", "the rest of the file is kept")
	assert.Equal(t, []any{"crm"}, d["packages"])
	// Deployable: every required value is there, the secret too.
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/platform/agents/support/deploy", nil).status)

	// Back to the form: values filled back, never the secret.
	r = e.pageWith(admin, "/agents/support/attach?toolset=crm")
	body = string(r.body)
	assert.Contains(t, body, `name="v:lookup:region" value="eu"`)
	assert.Contains(t, body, "a value is stored")
	assert.NotContains(t, body, distinctSecret)
	assert.NotContains(t, body, `name="v:lookup:api_key" value`)

	// The secret left empty keeps its value; region changes.
	before, err := e.srv.agents.secrets.load("support")
	require.NoError(t, err)
	r = e.postForm(admin, "/agents/support/attach", url.Values{"toolset": {"crm"}, "v:lookup:region": {"us"}, "v:lookup:api_key": {""}})
	require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
	after, err := e.srv.agents.secrets.load("support")
	require.NoError(t, err)
	assert.Equal(t, before, after)
	src = e.do("GET", "/api/v1/platform/agents/support", nil).json(t)["source"].(string)
	assert.Contains(t, src, "region: us")
	assert.NotContains(t, src, "limit: 25", "a field left empty sets no value")
	assert.Equal(t, 1, strings.Count(src, "- toolset: crm"), "one entry, changed in place")
	// <REDACTED> sent back keeps it too.
	r = e.postForm(admin, "/agents/support/attach", url.Values{"toolset": {"crm"}, "v:lookup:region": {"us"}, "v:lookup:api_key": {"<REDACTED>"}})
	require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
	after, err = e.srv.agents.secrets.load("support")
	require.NoError(t, err)
	assert.Equal(t, before, after)
	assert.True(t, e.do("GET", "/api/v1/platform/agents/support", nil).json(t)["needsRedeploy"].(bool), "region changed")

	// Every page, the secret nowhere.
	for _, p := range []string{"/", "/agents", "/agents/support", "/toolsets/crm", "/agents/support/attach?toolset=crm"} {
		assert.NotContains(t, string(e.pageWith(admin, p).body), distinctSecret, p)
	}
}

// A form with bad values says why on the page and changes nothing.
func TestPageAttachRefusesBadForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("crm", configPackage(t, 0, attachTools()...))
	require.Equal(t, "ready", e.settle("crm")["discoveryStatus"])
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"later"}`)).status)
	doc := "kind: agent\nname: support\nspec:\n  toolsets: [crm]\n  toolsetConfigs:\n    - toolset: crm\n      configValues:\n        lookup: {region: eu, api_key: " + distinctSecret + "}\n"
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/support", []byte(doc)).status)
	admin := e.login(testToken)
	stored := e.storedAgent("support")

	for _, c := range []struct {
		what   string
		form   url.Values
		status int
		says   string
	}{
		{"unknown toolset", url.Values{"toolset": {"nosuch"}}, http.StatusBadRequest, "There is no ready toolset"},
		{"toolset not ready", url.Values{"toolset": {"later"}}, http.StatusBadRequest, "There is no ready toolset"},
		{"no toolset", url.Values{}, http.StatusBadRequest, "Choose"},
		{"two toolsets", url.Values{"toolset": {"crm", "crm"}}, http.StatusBadRequest, "Choose one toolset"},
		{"bad name", url.Values{"toolset": {"../x"}}, http.StatusBadRequest, "Choose a toolset"},
		{"not an integer", url.Values{"toolset": {"crm"}, "v:lookup:region": {"eu"}, "v:lookup:limit": {"many"}}, http.StatusBadRequest, "expected an integer"},
		{"not a boolean", url.Values{"toolset": {"crm"}, "v:lookup:region": {"eu"}, "v:lookup:verbose": {"perhaps"}}, http.StatusBadRequest, "verbose"},
		{"a secret of a wrong type says no value", url.Values{"toolset": {"crm"}, "v:lookup:api_key": {distinctSecret}, "v:lookup:limit": {distinctSecret}}, http.StatusBadRequest, "expected an integer"},
		{"huge field", url.Values{"toolset": {"crm"}, "v:lookup:region": {strings.Repeat("x", 5000)}}, http.StatusBadRequest, "longer than 1024 bytes"},
		{"huge form", url.Values{"toolset": {"crm"}, "v:lookup:region": {strings.Repeat("x", 1100<<10)}}, http.StatusRequestEntityTooLarge, "larger than"},
		{"key the schema lacks", url.Values{"toolset": {"crm"}, "v:lookup:colour": {"red"}}, http.StatusBadRequest, "that no tool of crm declares"},
		{"tool the schema lacks", url.Values{"toolset": {"crm"}, "v:ghost:region": {"eu"}}, http.StatusBadRequest, "that no tool of crm declares"},
		{"field of no tool", url.Values{"toolset": {"crm"}, "spec": {"x"}}, http.StatusBadRequest, "that no tool of crm declares"},
		{"given twice", url.Values{"toolset": {"crm"}, "v:lookup:region": {"eu", "us"}}, http.StatusBadRequest, "given 2 times"},
		{"hostile text", url.Values{"toolset": {"crm"}, "v:<script>alert(1)</script>:x": {"1"}}, http.StatusBadRequest, "&lt;script&gt;"},
	} {
		r := e.postForm(admin, "/agents/support/attach", c.form)
		assert.Equal(t, c.status, r.status, c.what)
		assert.Contains(t, string(r.body), c.says, c.what)
		assert.Contains(t, string(r.body), `id="error"`, c.what)
		assert.NotContains(t, string(r.body), "<script>", c.what)
		assert.NotContains(t, string(r.body), distinctSecret, c.what)
		assert.Equal(t, stored, e.storedAgent("support"), "%s changed the agent", c.what)
	}
	// A form the agent's check refuses (a required value left out) is
	// stored: it is a deploy's reason, as with a PUT.
	r := e.postForm(admin, "/agents/support/attach", url.Values{"toolset": {"crm"}, "v:lookup:region": {""}})
	require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
	body := string(e.pageWith(admin, "/agents/support").body)
	assert.Contains(t, body, `id="reasons"`)
	assert.Contains(t, body, "region")
	assert.Equal(t, http.StatusBadRequest, e.pageWith(admin, "/agents/support/attach?toolset=nosuch").status)
}

// A forced re-upload of a toolset: its page lists the agents using it,
// and the agent's page the redeploy's tool diff.
func TestPageShowsTheRedeployDiff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("crm", configPackage(t, 0, configTool{name: "lookup", description: "Looks up."}, configTool{name: "wave", description: "Waves."}))
	require.Equal(t, "ready", e.settle("crm")["discoveryStatus"])
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "crm"))).status)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/idle", []byte(agentYAML("idle", "crm"))).status)
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/platform/agents/support/deploy", nil).status)
	v2 := configPackage(t, 0, configTool{name: "lookup", description: "Looks up, better."}, configTool{name: "note", description: "Notes."})
	require.Equal(t, http.StatusAccepted, e.do("PUT", "/api/v1/platform/toolsets/crm/package?force=true", v2, "Content-Type", "application/zip").status)
	deadline := time.Now().Add(30 * time.Second)
	for e.do("GET", "/api/v1/platform/agents/support", nil).json(t)["redeploy"] == nil {
		require.True(t, time.Now().Before(deadline), "not redeployed")
		time.Sleep(20 * time.Millisecond)
	}
	body := string(e.page("/toolsets/crm").body)
	assert.Contains(t, body, `id="users"`)
	assert.Contains(t, body, `<tr data-agent="idle"><td><a href="/agents/idle">idle</a></td>`)
	assert.Contains(t, body, `<li class="added">+ <code>crm__note</code></li>`)
	assert.Contains(t, body, `<li class="removed">− <code>crm__wave</code></li>`)
	assert.Contains(t, body, `<li class="changed">~ <code>crm__lookup</code></li>`)
	assert.Contains(t, body, "v1 → v2")
	body = string(e.page("/agents/support").body)
	assert.Contains(t, body, `id="redeploy"`)
	assert.Contains(t, body, `<li class="added">+ <code>crm__note</code></li>`)
	assert.NotContains(t, string(e.page("/agents/idle").body), `id="redeploy"`)
}

// The attach form edits a file in the project's own shape too, and one
// whose entry already sets a value inline is refused as a PUT would be,
// unchanged.
func TestPageAttachProjectShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("crm", configPackage(t, 0, attachTools()...))
	require.Equal(t, "ready", e.settle("crm")["discoveryStatus"])
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/plain", []byte("name: plain\ninstructions: Be brief.\n")).status)
	admin := e.login(testToken)
	r := e.postForm(admin, "/agents/plain/attach", url.Values{"toolset": {"crm"}, "v:lookup:region": {"eu"}, "v:lookup:api_key": {distinctSecret}})
	require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
	d := e.do("GET", "/api/v1/platform/agents/plain", nil).json(t)
	assert.Equal(t, []any{"crm"}, d["packages"])
	assert.Contains(t, d["source"], "instructions: Be brief.")
	assert.Equal(t, http.StatusOK, e.do("POST", "/api/v1/platform/agents/plain/deploy", nil).status, "%v", d["problems"])

	inline := "name: inline\ntoolsets:\n  - package: crm\n    tools:\n      lookup: {region: eu, api_key: k}\n"
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/inline", []byte(inline)).status)
	stored := e.storedAgent("inline")
	r = e.postForm(admin, "/agents/inline/attach", url.Values{"toolset": {"crm"}, "v:lookup:region": {"us"}})
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
	assert.Contains(t, string(r.body), "The agent was not changed")
	assert.Contains(t, string(r.body), `id="problems"`)
	assert.Equal(t, stored, e.storedAgent("inline"))
}

// The skills page and a skill's: dots, front matter, files, tools; every
// text escaped.
func TestPageSkills(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	assert.Contains(t, string(e.page("/skills").body), "No skills yet")
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", skillZip(t, "", toolFiles(schemaDoc("greet", `Say <b>hello</b>.`))...)).status)
	require.Equal(t, "ready", e.settleSkill("notes")["status"])
	evil := "---\nname: evil\ndescription: <script>alert(1)</script>\n---\nBody.\n"
	r0 := e.putSkill("evil", makeZip(t, zfile{name: "SKILL.md", data: []byte(evil)}))
	require.Equal(t, http.StatusAccepted, r0.status, "%s", r0.body)
	bad := []zfile{{name: "tools/manifest.yaml", data: []byte(scriptManifest)},
		{name: "tools/python/bin/greet.sh", data: []byte("#!/bin/sh\necho 'the database is unreachable' >&2\nexit 3\n"), mode: 0o755}}
	require.Equal(t, http.StatusAccepted, e.putSkill("broken", makeZip(t, append(bad, zfile{name: "SKILL.md", data: []byte("---\nname: broken\ndescription: Breaks.\n---\nBody.\n")})...)).status)
	require.Equal(t, "failed", e.settleSkill("broken")["status"])

	body := string(e.page("/skills").body)
	assert.Contains(t, body, `<tr data-skill="notes" data-status="ready">`)
	assert.Contains(t, body, `<tr data-skill="broken" data-status="failed">`)
	assert.Contains(t, body, "Write release notes.")
	assert.NotContains(t, body, "<script>")
	assert.Contains(t, body, "&lt;script&gt;")

	r := e.page("/skills/notes")
	require.Equal(t, http.StatusOK, r.status)
	body = string(r.body)
	assert.Contains(t, body, `id="skill" data-skill="notes" data-status="ready"`)
	assert.Contains(t, body, `<dd id="skill-description">Write release notes.</dd>`)
	assert.Contains(t, body, "<code>references/style.md</code>")
	assert.Contains(t, body, "<code>SKILL.md</code>")
	assert.Contains(t, body, `<article class="tool" data-tool="notes__greet">`)
	assert.Contains(t, body, "Say &lt;b&gt;hello&lt;/b&gt;.")
	assert.Contains(t, string(e.page("/skills/broken").body), "the database is unreachable")
	assert.Equal(t, http.StatusNotFound, e.page("/skills/nosuch").status)
	assert.Equal(t, http.StatusBadRequest, e.page("/skills/Bad_Name").status)
}

// attachToolset edits any stored file without panicking, and what it
// writes from YAML is YAML that has the toolset and its value.
func FuzzAttachToolset(f *testing.F) {
	f.Add([]byte("name: a\n"))
	f.Add([]byte("kind: agent\nname: a\nspec:\n  toolsets: [crm]\n  toolsetConfigs:\n    - toolset: crm\n      configValues: {lookup: {region: eu, api_key: \"<REDACTED>\"}}\n"))
	f.Add([]byte("name: a\ntoolsets:\n  - package: crm\n    tools: {lookup: {region: eu}}\n"))
	f.Add([]byte("x: &a [1]\ntoolsets: *a\n"))
	f.Add([]byte("spec: 3\n"))
	f.Add([]byte("toolsetConfigs: [{toolset: crm, configValues: {lookup: 1}}]\n"))
	schema := map[string]map[string]toolpkg.ConfigField{"lookup": {
		"region":  {Key: "region", Type: "string"},
		"api_key": {Key: "api_key", Type: "string", Secret: true},
	}}
	values := map[string]map[string]any{"lookup": {"region": "us"}}
	keep := map[string]map[string]bool{"lookup": {"api_key": true}}
	f.Fuzz(func(t *testing.T, data []byte) {
		var in any
		if len(data) > 4096 || yaml.Unmarshal(data, &in) != nil {
			return // the agent file's parser refuses it before it is stored
		}
		out, err := attachToolset(data, "crm", schema, values, keep, map[string]map[string]any{"lookup": {"api_key": toolpkg.RedactedValue}})
		if err != nil {
			return
		}
		var v any
		require.NoError(t, yaml.Unmarshal(out, &v), "%s", out)
		assert.Contains(t, string(out), "crm")
		assert.Contains(t, string(out), "region: us")
	})
}
