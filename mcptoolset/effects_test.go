package mcptoolset_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server's tools declare the effects their annotations say, with the
// specification's defaults for what they leave out, so that
// EffectPolicies asks a human before a tool that may destroy runs and
// not before a read-only one.
func TestServerToolsDeclareTheirAnnotationsAsEffects(t *testing.T) {
	checkLeaks(t)
	ts := mcptoolset.NewInMemory("files", fixture.SDKServer("files"))
	defer ts.Close()
	tools, err := ts.GetTools(context.Background())
	require.NoError(t, err)
	byName := map[string]toolset.Tool{}
	for _, tool := range tools {
		byName[tool.Name] = tool
	}
	e, declared := byName["read_file"].Effects()
	assert.True(t, declared)
	assert.Equal(t, toolset.Effects{ReadOnly: true, Destructive: false, OpenWorld: true}, e, "readOnlyHint and destructiveHint sent, openWorldHint by default")
	e, declared = byName["add"].Effects()
	assert.True(t, declared)
	assert.Equal(t, toolset.UnknownEffects, e, "no annotations: the specification's defaults")

	run := toolset.NewRun("mcp-effects")
	defer run.End()
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", ts.Guarded(toolset.EffectPolicies))
	require.NoError(t, err)
	_, err = list.Execute(turn, toolset.ToolCall{ID: "r", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`)})
	require.NoError(t, err)
	_, err = list.Execute(turn, toolset.ToolCall{ID: "a", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)})
	var asked *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &asked)
}

// A served tool that declares its effects is listed with them as its
// annotations.
func TestServedEffectsAreAnnotations(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	tool := toolset.NewTool("lookup", "Looks up.", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithEffects(toolset.Effects{ReadOnly: true, Idempotent: true}))
	cs := connect(t, mcptoolset.NewServer(toolset.NewFunction(tool)), nil)
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	a := list.Tools[0].Annotations
	require.NotNil(t, a)
	assert.True(t, a.ReadOnlyHint)
	assert.True(t, a.IdempotentHint)
	require.NotNil(t, a.DestructiveHint)
	assert.False(t, *a.DestructiveHint)
	require.NotNil(t, a.OpenWorldHint)
	assert.False(t, *a.OpenWorldHint)
}

// Explain names the annotations that set each policy EffectPolicies gave
// a server's tool, or says that the server gave none.
func TestExplainNamesTheAnnotationsBehindAPolicy(t *testing.T) {
	checkLeaks(t)
	ts := mcptoolset.NewInMemory("files", fixture.SDKServer("files"))
	defer ts.Close()
	x, err := toolset.Explain(context.Background(), "a", ts.Guarded(toolset.EffectPolicies))
	require.NoError(t, err)
	add := x.Find("add")
	require.Len(t, add, 1)
	text := add[0].String()
	assert.Contains(t, text, `- approval: required (destructive, declared by MCP annotations of server "files" (none given: the specification's defaults))`)
	assert.Contains(t, text, `- order: runs alone, in the model's order (destructive, declared by MCP annotations of server "files"`)
	read := x.Find("read_file")
	require.Len(t, read, 1)
	text = read[0].String()
	assert.NotContains(t, text, "approval:")
	assert.Contains(t, text, `- resume: an interrupted call runs again unasked (read-only, declared by MCP annotations of server "files" (readOnlyHint: true, destructiveHint: false, idempotentHint: false))`)
}
