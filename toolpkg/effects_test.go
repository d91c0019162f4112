package toolpkg

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tool schema's annotations declare its effects, MCP's hints with MCP's
// defaults; a schema without them declares nothing, and hints that are
// not booleans are a problem of the schema.
func TestSchemaAnnotationsAreEffects(t *testing.T) {
	t.Parallel()
	ex := Executable{Key: "e", TimeoutSeconds: 30}
	out := `{"tools":{
	  "read": {"description":"Reads.","annotations":{"readOnlyHint":true,"openWorldHint":false}},
	  "put":  {"description":"Puts.","annotations":{"idempotentHint":true,"destructiveHint":false}},
	  "bare": {"description":"Declares nothing."},
	  "none": {"description":"Empty annotations.","annotations":{}}}}`
	tools, probs := parseSchemaOutput(ex, []byte(out))
	require.Empty(t, probs)
	got := map[string]*toolset.Effects{}
	for _, ti := range tools {
		got[ti.Name] = ti.Effects
	}
	assert.Equal(t, &toolset.Effects{ReadOnly: true, Destructive: true}, got["read"], "destructiveHint by default; meaningless when read-only")
	assert.Equal(t, &toolset.Effects{Idempotent: true, OpenWorld: true}, got["put"])
	assert.Nil(t, got["bare"])
	assert.Equal(t, &toolset.UnknownEffects, got["none"])

	for _, bad := range []string{
		`{"tools":{"a":{"description":"x","annotations":{"readOnlyHint":"yes"}}}}`,
		`{"tools":{"a":{"description":"x","annotations":[true]}}}`,
		`{"tools":{"a":{"description":"x","annotations":"` + strings.Repeat("x", 1<<16) + `"}}}`,
	} {
		tools, probs := parseSchemaOutput(ex, []byte(bad))
		assert.Empty(t, tools)
		require.Len(t, probs, 1)
		assert.Contains(t, probs[0], "annotations must be an object")
		assert.Less(t, len(probs[0]), 2000)
	}
}

// Cut results kept as artifacts are read back by a new archive over the
// same artifact store, as a resumed run in another process would, and by
// no other run; hostile names and ranges are refused.
func TestArtifactResultsReadBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	text := strings.Repeat("0123456789abcdef", 4000)
	newProcess := func() (*toolset.ResultArchive, toolset.Toolset) {
		store, err := NewDirArtifactStore(dir, 0)
		require.NoError(t, err)
		archive := toolset.NewStoredResultArchive(ArtifactResults{Store: store})
		return archive, toolset.NewFunction(toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil },
			toolset.WithResultBudget(toolset.ResultBudget{MaxBytes: 1000, Archive: archive})), archive.ReadTool())
	}
	_, tools := newProcess()
	run := toolset.NewRun("artifact-results")
	turn := run.Turn(ctx)
	list, err := toolset.BuildTools(turn, "a", tools)
	require.NoError(t, err)
	res, err := list.Execute(turn, toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	cut := res.(string)
	i := strings.Index(cut, `name "`)
	require.Positive(t, i, cut)
	name := cut[i+6 : i+6+strings.Index(cut[i+6:], `"`)]
	j := strings.Index(cut, "offset ")
	off, err := strconv.Atoi(strings.Fields(cut[j+7:])[0])
	require.NoError(t, err)
	run.End()

	_, tools = newProcess()
	run = toolset.NewRun("artifact-results")
	defer run.End()
	turn = run.Turn(ctx)
	list, err = toolset.BuildTools(turn, "a", tools)
	require.NoError(t, err)
	args, _ := json.Marshal(map[string]any{"name": name, "offset": off, "length": 100})
	part, err := list.Execute(turn, toolset.ToolCall{Name: "read_result", Args: args})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(part.(string), text[off:off+100]), "%.200s", part)
	assert.Contains(t, part.(string), "more bytes from offset")

	for _, bad := range []string{`{"name":"../` + name + `"}`, `{"name":"` + name + `","offset":999999}`, `{"name":"result-000000000000000000000000"}`} {
		_, err := list.Execute(turn, toolset.ToolCall{Name: "read_result", Args: json.RawMessage(bad)})
		_, forModel := toolset.ErrorText(err)
		assert.True(t, forModel, "%s: %v", bad, err)
	}
	other := toolset.NewRun("artifact-results-other")
	defer other.End()
	oturn := other.Turn(ctx)
	olist, err := toolset.BuildTools(oturn, "a", tools)
	require.NoError(t, err)
	_, err = olist.Execute(oturn, toolset.ToolCall{Name: "read_result", Args: args})
	msg, _ := toolset.ErrorText(err)
	assert.Contains(t, msg, "no result named")
}

// A packaged tool carries the effects its schema's annotations declare,
// and Explain names the package as their source.
func TestPackagedToolDeclaresItsAnnotations(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{})
	schema := `{"tools": {
	  "lookup": {"description": "Looks up.", "annotations": {"readOnlyHint": true}},
	  "purge":  {"description": "Purges.", "annotations": {"destructiveHint": true}},
	  "plain":  {"description": "Says nothing of its effects."}}}`
	info := upload(t, s, "fx", demoPackage(t, demoManifest(""), zfile{name: "schema.json", data: []byte(schema)}))
	require.Equal(t, StatusReady, info.Status, "discovery errors: %v", info.Errors)
	ts := s.Toolset("fx", nil)
	tools, err := ts.GetTools(context.Background())
	require.NoError(t, err)
	byName := map[string]toolset.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	e, declared := byName["fx__lookup"].Effects()
	assert.True(t, declared && e.ReadOnly)
	_, declared = byName["fx__plain"].Effects()
	assert.False(t, declared)
	x, err := toolset.Explain(context.Background(), "a", toolset.NewGuarded(ts, toolset.EffectPolicies))
	require.NoError(t, err)
	purge := x.Find("fx__purge")
	require.Len(t, purge, 1)
	assert.Contains(t, purge[0].String(), `- approval: required (destructive, declared by the annotations of package "fx", version 1)`)
}
