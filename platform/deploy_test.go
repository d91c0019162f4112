package platform

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// configTool is one tool of a configPackage.
type configTool struct {
	name, description string
	config            []map[string]any
}

// configPackage is a package whose one executable exposes the tools, each
// with its config schema, after delay.
func configPackage(t testing.TB, delay time.Duration, tools ...configTool) []byte {
	schema := configSchema(t, tools)
	if delay > 0 {
		schema = fmt.Sprintf("sleep %.2f\n%s", delay.Seconds(), schema)
	}
	return makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)},
		zfile{name: "python/bin/greet.sh", data: []byte(scriptTool(schema)), mode: 0o755})
}

// gatedConfigPackage is configPackage, its discovery held back by g.
func gatedConfigPackage(t testing.TB, g gate, tools ...configTool) []byte {
	return makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)},
		zfile{name: "python/bin/greet.sh", data: []byte(scriptTool(g.hold(configSchema(t, tools)))), mode: 0o755})
}

// configSchema is the --schema script of a package of the tools.
func configSchema(t testing.TB, tools []configTool) string {
	m := map[string]any{}
	for _, tl := range tools {
		m[tl.name] = map[string]any{
			"description":   tl.description,
			"parameters":    map[string]any{"type": "object", "properties": map[string]any{"who": map[string]any{"type": "string"}}},
			"config_schema": tl.config,
		}
	}
	b, err := json.Marshal(map[string]any{"tools": m})
	require.NoError(t, err)
	return "cat <<'EOF'\n" + string(b) + "\nEOF"
}

// financeTools are the tools of the "fin-tools" package of these tests:
// greet needs a region and a secret api_key, shout needs loud_key.
func financeTools(greetDescription string) []configTool {
	return []configTool{
		{name: "greet", description: greetDescription, config: []map[string]any{
			{"key": "region", "type": "string", "required": true},
			{"key": "api_key", "type": "string", "required": true, "secret": true},
			{"key": "greeting", "type": "string", "default": "hello"},
		}},
		{name: "shout", description: "Shouts.", config: []map[string]any{
			{"key": "loud_key", "type": "string", "required": true},
		}},
	}
}

// problemsOf decodes the problems of an error answer.
func problemsIn(t testing.TB, r response) []Problem {
	t.Helper()
	var eb ErrorBody
	require.NoError(t, json.Unmarshal(r.body, &eb), "%s", r.body)
	return eb.Error.Problems
}

func problemTexts(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%d:%d: %s\n", p.Line, p.Column, p.Message)
	}
	return b.String()
}

// effective reads an agent's effective document.
func (e *testEnv) effective(name string) (EffectiveAgent, EffectiveDocument) {
	e.t.Helper()
	r := e.do("GET", "/api/v1/platform/agents/"+name+"/effective", nil)
	require.Equal(e.t, http.StatusOK, r.status, "%s", r.body)
	var ea EffectiveAgent
	require.NoError(e.t, json.Unmarshal(r.body, &ea))
	var doc EffectiveDocument
	dec := yaml.NewDecoder(strings.NewReader(ea.Document))
	dec.KnownFields(true)
	require.NoError(e.t, dec.Decode(&doc), "%s", ea.Document)
	return ea, doc
}

const financeAgent = `name: support
instructions: Help with invoices.
toolsets:
  - package: fin-tools
  - package: broken
toolsetConfigs:
  - toolset: fin-tools
    excludedTools: [shout]
`

// An agent naming toolsets that are pending or failed is created, with
// each toolset's status; its deploy is refused with every reason at
// once until the toolsets are ready and every required value is given,
// excluded tools' values not counted.
func TestCreateThenDeploy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("broken", brokenPackage(t))
	require.Equal(t, "failed", e.settle("broken")["discoveryStatus"])
	e.upload("fin-tools", configPackage(t, 500*time.Millisecond, financeTools("Greets.")...))

	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(financeAgent))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	var d AgentDetail
	require.NoError(t, json.Unmarshal(r.body, &d))
	assert.Empty(t, d.Problems)
	assert.False(t, d.Deployed)
	require.Len(t, d.Toolsets, 2)
	assert.Equal(t, "fin-tools", d.Toolsets[0].Name)
	assert.Equal(t, "pending", string(d.Toolsets[0].Status))
	assert.Equal(t, "broken", d.Toolsets[1].Name)
	assert.Equal(t, "failed", string(d.Toolsets[1].Status))
	assert.Contains(t, d.Toolsets[1].Errors[0], "database is unreachable")

	r = e.do("POST", "/api/v1/platform/agents/support/deploy", nil)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	assert.Equal(t, "NotDeployable", r.errCode(t))
	probs := problemTexts(problemsIn(t, r))
	assert.Contains(t, probs, `toolset "fin-tools" is pending`)
	assert.Contains(t, probs, `toolset "broken" is failed`)
	assert.Contains(t, probs, "database is unreachable")
	r = e.do("GET", "/api/v1/platform/agents/support/effective", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotDeployed", r.errCode(t))

	require.Equal(t, "ready", e.settle("fin-tools")["discoveryStatus"])
	// Ready, but the failed toolset and greet's two values are missing:
	// every reason at once, each naming the tool and the key; shout is
	// excluded, so its loud_key does not count.
	r = e.do("POST", "/api/v1/platform/agents/support/deploy", nil)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	ps := problemsIn(t, r)
	probs = problemTexts(ps)
	require.Len(t, ps, 3, "%s", probs)
	assert.Contains(t, probs, `toolset "broken" is failed`)
	assert.Contains(t, probs, `tool "greet" needs the configuration key "region"`)
	assert.Contains(t, probs, `tool "greet" needs the configuration key "api_key"`)
	assert.NotContains(t, probs, "loud_key")

	// The toolset's own configuration gives region; the agent gives the
	// secret, and drops the failed toolset.
	r = e.do("PATCH", "/api/v1/platform/toolsets/fin-tools/config", []byte(`{"region":"eu"}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	doc := `name: support
instructions: Help with invoices.
toolsets:
  - package: fin-tools
toolsetConfigs:
  - toolset: fin-tools
    configValues:
      greet: {api_key: sk-live-1234}
    excludedTools: [shout]
`
	r = e.do("PUT", "/api/v1/platform/agents/support", []byte(doc))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = e.do("POST", "/api/v1/platform/agents/support/deploy", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	d = AgentDetail{}
	require.NoError(t, json.Unmarshal(r.body, &d))
	assert.True(t, d.Deployed)
	require.NotNil(t, d.DeployedAt)
	assert.Equal(t, map[string]int{"fin-tools": 1}, d.DeployedVersions)
	assert.False(t, d.NeedsRedeploy)
	assert.Equal(t, 1, d.Toolsets[0].DeployedVersion)

	ea, eff := e.effective("support")
	assert.Equal(t, map[string]int{"fin-tools": 1}, ea.Versions)
	assert.Equal(t, "agent", eff.Kind)
	assert.Equal(t, "support", eff.Name)
	assert.Equal(t, "Help with invoices.", eff.Spec.SystemPrompt)
	assert.Equal(t, []string{"fin-tools"}, eff.Spec.Toolsets)
	require.Len(t, eff.Spec.Tools, 1, "shout is excluded")
	tool := eff.Spec.Tools[0]
	assert.Equal(t, "builtin", tool.ToolType)
	assert.Equal(t, "fin-tools__greet", tool.ToolName, "the toolset's hyphen kept")
	assert.Equal(t, map[string]any{
		"region":   "eu",
		"greeting": "hello",
		"api_key":  AgentSecretRef("fin-tools", "greet", "api_key"),
	}, tool.ToolConfig)
	assert.NotContains(t, ea.Document, "sk-live-1234")

	// The listing has the deploy state; a change of the toolset's
	// configuration makes the deployment stale.
	list := e.do("GET", "/api/v1/platform/agents", nil).json(t)
	item := list["data"].([]any)[0].(map[string]any)
	assert.Equal(t, true, item["deployed"])
	assert.Equal(t, map[string]any{"fin-tools": 1.0}, item["deployedVersions"])
	r = e.do("PATCH", "/api/v1/platform/toolsets/fin-tools/config", []byte(`{"region":"us"}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, true, e.do("GET", "/api/v1/platform/agents/support", nil).json(t)["needsRedeploy"])
	_, eff = e.effective("support")
	assert.Equal(t, "eu", eff.Spec.Tools[0].ToolConfig["region"], "the deployed document until the next deploy")
	r = e.do("POST", "/api/v1/platform/agents/support/deploy", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	_, eff = e.effective("support")
	assert.Equal(t, "us", eff.Spec.Tools[0].ToolConfig["region"])

	// Unknown agents.
	r = e.do("POST", "/api/v1/platform/agents/nobody/deploy", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	r = e.do("GET", "/api/v1/platform/agents/nobody/effective", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotFound", r.errCode(t))
}

// A toolset created with no package yet may be named too.
func TestAgentNamingACreatedToolset(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"later"}`))
	require.Equal(t, http.StatusCreated, r.status)
	r = e.do("PUT", "/api/v1/platform/agents/a", []byte("name: a\ntoolsets: [later]\ntoolsetConfigs:\n  - toolset: later\n    configValues: {t: {k: v}}\n"))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	d := r.json(t)
	assert.Equal(t, "created", d["toolsets"].([]any)[0].(map[string]any)["status"])
	// Nothing is known of its keys: every value is kept apart.
	assert.Contains(t, d["source"], `k: "<REDACTED>"`)
	r = e.do("POST", "/api/v1/platform/agents/a/deploy", nil)
	require.Equal(t, http.StatusConflict, r.status)
	assert.Contains(t, string(r.body), "no package was uploaded yet")
}

// A forced re-upload of a toolset deployed agents use redeploys them
// once the new version is ready, with the tool diff; without force the
// 409 says what uses the toolset.
func TestForcedReuploadRedeploys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	v1 := append(financeTools("Greets."), configTool{name: "wave", description: "Waves."})
	e.upload("fin-tools", configPackage(t, 0, v1...))
	require.Equal(t, "ready", e.settle("fin-tools")["discoveryStatus"])
	doc := `name: support
toolsets: [fin-tools]
toolsetConfigs:
  - toolset: fin-tools
    configValues:
      greet: {api_key: sk-old, region: eu, greeting: hi}
      shout: {loud_key: LOUD}
`
	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(doc))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/platform/agents/support/deploy", nil).status)
	r = e.do("PUT", "/api/v1/platform/agents/idle", []byte(doc[:0]+"name: idle\ntoolsets: [fin-tools]\n"))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	// v2: greet's description changes and greeting becomes secret,
	// wave is gone, whisper is new.
	tools := append(financeTools("Greets warmly."), configTool{name: "whisper", description: "Whispers."})
	tools[0].config[2]["secret"] = true
	v2 := configPackage(t, 300*time.Millisecond, tools...)

	r = e.do("PUT", "/api/v1/platform/toolsets/fin-tools/package", v2, "Content-Type", "application/zip")
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	var eb ErrorBody
	require.NoError(t, json.Unmarshal(r.body, &eb))
	assert.Equal(t, "PackageInUse", eb.Error.Code)
	require.NotNil(t, eb.Error.InUse)
	assert.Equal(t, []string{"idle", "support"}, eb.Error.InUse.Agents)
	assert.Equal(t, []string{"support"}, eb.Error.InUse.DeployedAgents)
	assert.Equal(t, 1, eb.Error.InUse.ServingVersion)
	assert.Equal(t, []string{"greet", "shout", "wave"}, eb.Error.InUse.ServingTools)

	r = e.do("PUT", "/api/v1/platform/toolsets/fin-tools/package?force=true", v2, "Content-Type", "application/zip")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	deadline := time.Now().Add(30 * time.Second)
	var ea EffectiveAgent
	var eff EffectiveDocument
	for {
		ea, eff = e.effective("support")
		if ea.Versions["fin-tools"] == 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "not redeployed")
		time.Sleep(20 * time.Millisecond)
	}
	var names []string
	for _, tl := range eff.Spec.Tools {
		names = append(names, tl.ToolName)
	}
	assert.Equal(t, []string{"fin-tools__greet", "fin-tools__shout", "fin-tools__whisper"}, names)
	assert.Equal(t, AgentSecretRef("fin-tools", "greet", "greeting"), eff.Spec.Tools[0].ToolConfig["greeting"], "secret now")
	d := e.do("GET", "/api/v1/platform/agents/support", nil)
	var ad AgentDetail
	require.NoError(t, json.Unmarshal(d.body, &ad))
	require.NotNil(t, ad.Redeploy, "%s", d.body)
	assert.Equal(t, 1, ad.Redeploy.FromVersion)
	assert.Equal(t, 2, ad.Redeploy.ToVersion)
	assert.Equal(t, ToolDiff{Added: []string{"fin-tools__whisper"}, Removed: []string{"fin-tools__wave"}, Changed: []string{"fin-tools__greet"}}, ad.Redeploy.ToolDiff)
	assert.Empty(t, ad.Redeploy.Problems)
	assert.False(t, ad.NeedsRedeploy)
	// greeting became secret: the stored file shows it redacted.
	assert.NotContains(t, ad.Source, "greeting: hi")
	assert.Contains(t, ad.Source, `greeting: "<REDACTED>"`)
	assert.False(t, e.do("GET", "/api/v1/platform/agents/idle", nil).json(t)["deployed"].(bool), "not deployed, not redeployed")

	// v3, uploaded with the page's form, drops shout, which the agent
	// configures: the redeploy cannot be made, says why, and the
	// deployment stays on v2.
	v3 := configPackage(t, 0, tools[0], tools[2])
	r = e.uploadForm("fin-tools", v3, true)
	require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
	for {
		d = e.do("GET", "/api/v1/platform/agents/support", nil)
		ad = AgentDetail{}
		require.NoError(t, json.Unmarshal(d.body, &ad))
		if ad.Redeploy != nil && ad.Redeploy.ToVersion == 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no redeploy of v3: %s", d.body)
		time.Sleep(20 * time.Millisecond)
	}
	assert.Contains(t, problemTexts(ad.Redeploy.Problems), "shout")
	assert.Contains(t, problemTexts(ad.Problems), "shout")
	assert.True(t, ad.NeedsRedeploy)
	ea, _ = e.effective("support")
	assert.Equal(t, 2, ea.Versions["fin-tools"])
}
