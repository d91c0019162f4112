package platform

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const skilledAgent = "name: support\ninstructions: Help.\nskills: [notes]\n"

func problemMessages(t *testing.T, r response) []string {
	t.Helper()
	var eb ErrorBody
	require.NoError(t, json.Unmarshal(r.body, &eb), "%s", r.body)
	out := make([]string, len(eb.Error.Problems))
	for i, p := range eb.Error.Problems {
		out[i] = p.Message
	}
	return out
}

// An agent attaches skills by name: one the platform lacks is a problem
// of its PUT, one not ready keeps it from a deploy, and a deploy records
// and lists them.
func TestAgentAttachesSkills(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(skilledAgent))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	assert.Equal(t, "InvalidAgent", r.errCode(t))
	assert.Equal(t, []string{`unknown skill "notes": no skill of that name was uploaded`}, problemMessages(t, r))
	r = e.do("POST", "/api/v1/platform/agents/support/check", []byte(skilledAgent))
	assert.Equal(t, http.StatusUnprocessableEntity, r.status, "the check says so too")

	// A skill whose tools fail their discovery.
	bad := []zfile{{name: "tools/manifest.yaml", data: []byte(scriptManifest)},
		{name: "tools/python/bin/greet.sh", data: []byte("#!/bin/sh\necho 'no database' >&2\nexit 3\n"), mode: 0o755}}
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", skillZip(t, "", bad...)).status)
	require.Equal(t, "failed", e.settleSkill("notes")["status"])
	r = e.do("PUT", "/api/v1/platform/agents/support", []byte(skilledAgent))
	require.Equal(t, http.StatusCreated, r.status, "a skill not ready is no problem of the PUT: %s", r.body)
	assert.Equal(t, []any{"notes"}, r.json(t)["skills"])
	r = e.do("POST", "/api/v1/platform/agents/support/deploy", nil)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	assert.Equal(t, "NotDeployable", r.errCode(t))
	msgs := problemMessages(t, r)
	require.Len(t, msgs, 1)
	assert.Contains(t, msgs[0], `skill "notes" is failed`)
	assert.Contains(t, msgs[0], "no database")
	r = e.do("GET", "/api/v1/platform/skills/notes/archive", nil)
	assert.Equal(t, http.StatusConflict, r.status, "no archive of a skill not ready")
	assert.Equal(t, "NotReady", r.errCode(t))

	// Ready: the deploy records and lists it.
	zip := skillZip(t, "")
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", zip).status)
	r = e.do("POST", "/api/v1/platform/agents/support/deploy", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	d := r.json(t)
	assert.Equal(t, map[string]any{"notes": float64(2)}, d["deployedSkillVersions"])
	assert.Equal(t, false, d["needsRedeploy"])
	r = e.do("GET", "/api/v1/platform/agents/support/effective", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var ea EffectiveAgent
	require.NoError(t, json.Unmarshal(r.body, &ea))
	assert.Equal(t, map[string]int{"notes": 2}, ea.SkillVersions)
	var doc EffectiveDocument
	dec := yaml.NewDecoder(bytes.NewReader([]byte(ea.Document)))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&doc))
	assert.Equal(t, []string{"notes"}, doc.Spec.Skills)

	// The archive runners fetch: the upload as it came, and its version.
	r = e.do("GET", "/api/v1/platform/skills/notes/archive", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, zip, r.body)
	assert.Equal(t, "application/zip", r.header.Get("Content-Type"))
	assert.Equal(t, "2", r.header.Get(SkillVersionHeader))

	// A new version of the skill: the deployment is behind.
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", zip).status)
	r = e.do("GET", "/api/v1/platform/agents/support", nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, true, r.json(t)["needsRedeploy"])
	assert.Equal(t, []any{}, r.json(t)["problems"])
}

// A skill an agent attaches is in use: deleting it is refused, naming
// the agents, unless forced; the agent then shows the problem.
func TestDeleteSkillInUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", skillZip(t, "")).status)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/support", []byte(skilledAgent)).status)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/other", []byte("name: other\nskills: [{skill: notes}]\n")).status)
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/platform/agents/support/deploy", nil).status)

	r := e.do("DELETE", "/api/v1/platform/skills/notes", nil)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	var eb ErrorBody
	require.NoError(t, json.Unmarshal(r.body, &eb))
	assert.Equal(t, "SkillInUse", eb.Error.Code)
	assert.Contains(t, eb.Error.Message, "other, support")
	assert.Equal(t, &SkillInUse{Agents: []string{"other", "support"}, DeployedAgents: []string{"support"}}, eb.Error.SkillInUse)
	assert.Equal(t, http.StatusOK, e.do("GET", "/api/v1/platform/skills/notes", nil).status, "still there")

	// Deleting an agent frees the skill of it.
	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/platform/agents/other", nil).status)
	r = e.do("DELETE", "/api/v1/platform/skills/notes", nil)
	require.Equal(t, http.StatusConflict, r.status)
	require.NoError(t, json.Unmarshal(r.body, &eb))
	assert.Equal(t, []string{"support"}, eb.Error.SkillInUse.Agents)

	r = e.do("DELETE", "/api/v1/platform/skills/notes?force=maybe", nil)
	assert.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/platform/skills/notes?force=true", nil).status)
	r = e.do("GET", "/api/v1/platform/agents/support", nil)
	require.Equal(t, http.StatusOK, r.status)
	d := r.json(t)
	require.Len(t, d["problems"], 1)
	assert.Contains(t, d["problems"].([]any)[0].(map[string]any)["message"], `unknown skill "notes"`)
	assert.Equal(t, true, d["needsRedeploy"])
	r = e.do("POST", "/api/v1/platform/agents/support/deploy", nil)
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, "NotDeployable", r.errCode(t))

	// Uploaded again: the agent deploys again.
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", skillZip(t, "")).status)
	assert.Equal(t, http.StatusOK, e.do("POST", "/api/v1/platform/agents/support/deploy", nil).status)
}

// The archive route checks the name as the others do: no path escapes.
func TestSkillArchiveHostile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, name := range []string{"..", "a..b", "Notes", "-x", "%2e%2e", "a%2Fb"} {
		r := e.do("GET", "/api/v1/platform/skills/"+name+"/archive", nil)
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, r.status, "%s: %s", name, r.body)
		assert.NotEqual(t, "application/zip", r.header.Get("Content-Type"), name)
	}
	r := e.do("GET", "/api/v1/platform/skills/a..b/archive", nil)
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, "InvalidName", r.errCode(t))
	r = e.do("GET", "/api/v1/platform/skills/missing/archive", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotFound", r.errCode(t))
}
