package platform

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

const notesSkill = "---\nname: notes\ndescription: Write release notes.\nmetadata:\n  team: docs\nmystery: 1\n---\nList the changes.\n"

func skillZip(t testing.TB, prefix string, extra ...zfile) []byte {
	files := append([]zfile{{name: prefix + "SKILL.md", data: []byte(notesSkill)}, {name: prefix + "references/style.md", data: []byte("short")}}, extra...)
	return makeZip(t, files...)
}

// toolFiles are bundled tools whose discovery gives schema.
func toolFiles(schema string) []zfile {
	return []zfile{{name: "tools/manifest.yaml", data: []byte(scriptManifest)},
		{name: "tools/python/bin/greet.sh", data: []byte(scriptTool(schema)), mode: 0o755}}
}

func (e *testEnv) putSkill(name string, data []byte) response {
	e.t.Helper()
	return e.do("PUT", "/api/v1/platform/skills/"+name, data, "Content-Type", "application/zip")
}

// settleSkill waits until the skill is no longer pending.
func (e *testEnv) settleSkill(name string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := e.do("GET", "/api/v1/platform/skills/"+name, nil)
		require.Equal(e.t, http.StatusOK, r.status, "%s", r.body)
		m := r.json(e.t)
		if m["status"] != "pending" {
			return m
		}
		require.True(e.t, time.Now().Before(deadline), "skill %s still pending", name)
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSkillsAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.putSkill("notes", skillZip(t, "notes/"))
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	assert.Equal(t, "/api/v1/platform/skills/notes", r.header.Get("Location"))
	d := r.json(t)
	assert.Equal(t, "ready", d["status"], "a skill without tools is ready at once")
	assert.Equal(t, "Write release notes.", d["description"])
	assert.Equal(t, map[string]any{"name": "notes", "description": "Write release notes.", "metadata": map[string]any{"team": "docs"}}, d["frontMatter"])
	assert.Equal(t, []any{map[string]any{"path": "SKILL.md", "size": float64(len(notesSkill))}, map[string]any{"path": "references/style.md", "size": float64(5)}}, d["files"])
	assert.Equal(t, []any{}, d["tools"])
	assert.Equal(t, []any{"mystery: unknown field, ignored; known fields: name, description, license, compatibility, metadata, allowed-tools (line 6)"}, d["warnings"])
	assert.EqualValues(t, 1, d["version"])

	r = e.putSkill("notes", skillZip(t, ""))
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	assert.EqualValues(t, 2, r.json(t)["version"])

	r = e.do("GET", "/api/v1/platform/skills", nil)
	require.Equal(t, http.StatusOK, r.status)
	var list List[SkillSummary]
	require.NoError(t, json.Unmarshal(r.body, &list))
	require.Len(t, list.Data, 1)
	assert.Equal(t, "notes", list.Data[0].Name)
	assert.Equal(t, 1, list.Meta.Total)

	assert.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/platform/skills/notes", nil).status)
	r = e.do("GET", "/api/v1/platform/skills/notes", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotFound", r.errCode(t))
	assert.Equal(t, http.StatusNotFound, e.do("DELETE", "/api/v1/platform/skills/notes", nil).status)
}

// TestSkillWithTools checks the lifecycle of a skill whose bundled tools
// are discovered, and that an agent's toolset of it runs them.
func TestSkillWithTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.putSkill("notes", skillZip(t, "", toolFiles(schemaDoc("greet", "Say hello."))...))
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	d := e.settleSkill("notes")
	require.Equal(t, "ready", d["status"], "%v", d["errors"])
	tools := d["tools"].([]any)
	require.Len(t, tools, 1)
	assert.Equal(t, "notes__greet", tools[0].(map[string]any)["toolName"])

	r = e.do("GET", "/api/v1/platform/toolsets/notes", nil)
	assert.Equal(t, http.StatusNotFound, r.status, "a skill's tools are not a toolset")

	ts, err := e.srv.SkillToolset("notes")
	require.NoError(t, err)
	ctx := context.Background()
	run := toolset.NewRun(t.Name())
	defer run.End()
	turn := run.Turn(ctx)
	list, err := toolset.BuildTools(turn, "a", ts)
	require.NoError(t, err)
	_, err = list.Execute(turn, toolset.ToolCall{ID: "1", Name: "load_skill", Args: json.RawMessage(`{"name":"notes"}`)})
	require.NoError(t, err)
	turn = run.Turn(ctx)
	list, err = toolset.BuildTools(turn, "a", ts)
	require.NoError(t, err)
	res, err := list.Execute(turn, toolset.ToolCall{ID: "2", Name: "notes__greet", Args: json.RawMessage(`{"who":"x"}`)})
	require.NoError(t, err)
	text, err := toolset.ResultText(res)
	require.NoError(t, err)
	assert.Equal(t, "hello", text)

	// A new version without tools drops them.
	r = e.putSkill("notes", skillZip(t, ""))
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	assert.Equal(t, "ready", r.json(t)["status"])
	assert.Equal(t, []any{}, r.json(t)["tools"])
}

// TestSkillGainsTools checks a skill whose second version bundles tools
// the first did not, and a third that drops them again.
func TestSkillGainsTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", skillZip(t, "")).status)
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", skillZip(t, "", toolFiles(schemaDoc("greet", "Say hello."))...)).status)
	d := e.settleSkill("notes")
	assert.Equal(t, "ready", d["status"], "%v", d["errors"])
	assert.EqualValues(t, 2, d["version"])
	assert.Len(t, d["tools"], 1)
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", skillZip(t, "")).status)
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", skillZip(t, "", toolFiles(schemaDoc("greet", "Say hello again."))...)).status)
	d = e.settleSkill("notes")
	assert.Equal(t, "ready", d["status"], "%v", d["errors"])
	assert.Equal(t, "Say hello again.", d["tools"].([]any)[0].(map[string]any)["description"])
}

func TestSkillToolsFailDiscovery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	bad := []zfile{{name: "tools/manifest.yaml", data: []byte(scriptManifest)},
		{name: "tools/python/bin/greet.sh", data: []byte("#!/bin/sh\necho 'the database is unreachable' >&2\nexit 3\n"), mode: 0o755}}
	r := e.putSkill("notes", skillZip(t, "", bad...))
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	d := e.settleSkill("notes")
	assert.Equal(t, "failed", d["status"])
	assert.Contains(t, d["errors"].([]any)[0], "the database is unreachable")

	_, err := e.srv.SkillToolset("notes", "missing")
	var nr *NotReadySkillError
	require.ErrorAs(t, err, &nr)
	assert.Equal(t, map[string]string{"notes": "failed", "missing": "unknown"}, nr.Skills)
}

// TestSkillsHostile checks uploads the platform refuses, each with every
// problem at once, and nothing stored.
func TestSkillsHostile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{MaxPackageBytes: 1 << 20})
	tests := []struct {
		name  string
		data  []byte
		code  string
		want  []string
		stats int
	}{
		{"zip slip", makeZip(t, zfile{name: "SKILL.md", data: []byte(notesSkill)}, zfile{name: "../../etc/cron.d/x", data: []byte("x")}, zfile{name: "/abs", data: []byte("x")}),
			"InvalidSkill", []string{"../../etc/cron.d/x", "/abs"}, http.StatusUnprocessableEntity},
		{"symlink", makeZip(t, zfile{name: "SKILL.md", data: []byte(notesSkill)}, zfile{name: "references/passwd", data: []byte("/etc/passwd"), mode: 0o777 | 1<<27}),
			"InvalidSkill", []string{"symlink"}, http.StatusUnprocessableEntity},
		{"missing fields", makeZip(t, zfile{name: "SKILL.md", data: []byte("---\nlicense: MIT\n---\n")}),
			"InvalidSkill", []string{"name: required", "description: required"}, http.StatusUnprocessableEntity},
		{"huge SKILL.md", makeZip(t, zfile{name: "SKILL.md", data: []byte(notesSkill + strings.Repeat("x", 200<<10))}),
			"InvalidSkill", []string{"at most 131072"}, http.StatusUnprocessableEntity},
		{"front matter bomb", makeZip(t, zfile{name: "SKILL.md", data: []byte("---\nname: notes\ndescription: d\nmetadata:\n  a: &a [x, x]\n  b: [*a, *a]\n---\n")}),
			"InvalidSkill", []string{"anchors and aliases"}, http.StatusUnprocessableEntity},
		{"other name", makeZip(t, zfile{name: "SKILL.md", data: []byte("---\nname: other\ndescription: d\n---\n")}),
			"InvalidSkill", []string{`but must be named`}, http.StatusUnprocessableEntity},
		{"bad tools", skillZip(t, "", zfile{name: "tools/manifest.yaml", data: []byte("tools: {}\n")}),
			"InvalidSkill", []string{"tools/manifest.yaml"}, http.StatusUnprocessableEntity},
		{"not a zip", []byte("hello"), "InvalidSkill", []string{"not a readable zip"}, http.StatusUnprocessableEntity},
		{"too large", make([]byte, 2<<20), "PackageTooLarge", nil, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.putSkill("notes", tt.data)
			require.Equal(t, tt.stats, r.status, "%s", r.body)
			assert.Equal(t, tt.code, r.errCode(t))
			for _, w := range tt.want {
				assert.Contains(t, string(r.body), w)
			}
		})
	}
	r := e.putSkill("Bad_Name", skillZip(t, ""))
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, "InvalidName", r.errCode(t))
	r = e.do("GET", "/api/v1/platform/skills", nil)
	assert.Contains(t, string(r.body), `"total":0`, "nothing was stored")
}

// TestSkillsPersist checks that a platform opened again on the same store
// has the skills, and their tools' status.
func TestSkillsPersist(t *testing.T) {
	dir := storeDir(t)
	e := openEnv(t, dir, nil)
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", skillZip(t, "", toolFiles(schemaDoc("greet", "Say hello."))...)).status)
	require.Equal(t, "ready", e.settleSkill("notes")["status"])
	e.close()

	e = openEnv(t, dir, nil)
	d := e.settleSkill("notes")
	assert.Equal(t, "ready", d["status"])
	assert.EqualValues(t, 1, d["version"])
	assert.Len(t, d["tools"], 1)
	_, err := e.srv.SkillToolset("notes")
	assert.NoError(t, err)
}

func TestSkillsNeedTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.doToken("", "PUT", "/api/v1/platform/skills/notes", skillZip(t, ""))
	assert.Equal(t, http.StatusUnauthorized, r.status)
}

// TestSkillsConcurrently uploads, reads and deletes skills from many
// clients at once.
func TestSkillsConcurrently(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	data := skillZip(t, "")
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 5 {
				switch i % 3 {
				case 0:
					r := e.putSkill("notes", data)
					assert.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
				case 1:
					r := e.do("GET", "/api/v1/platform/skills/notes", nil)
					assert.Contains(t, []int{http.StatusOK, http.StatusNotFound}, r.status)
				default:
					r := e.do("DELETE", "/api/v1/platform/skills/notes", nil)
					assert.Contains(t, []int{http.StatusNoContent, http.StatusNotFound}, r.status)
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
}
