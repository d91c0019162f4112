package geminitools_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/geminitools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"
)

func bodyField(t *testing.T, body json.RawMessage, name string) string {
	t.Helper()
	var req map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &req))
	return string(req[name])
}

// A conversation with StableTools over the library's tool search: the
// search reveals a tool, which is added to the declarations (Gemini has no
// tool search of its own); a later turn hides a tool, and the
// declarations stay the same, byte for byte, the hidden tool restricted
// away by name, and refused if the model calls it anyway.
func TestStableToolsRestrictByName(t *testing.T) {
	var hide atomic.Bool
	mk := func(name string, opts ...toolset.ToolOption) toolset.Tool {
		return toolset.NewTool(name, "Tool "+name+".", func(context.Context, struct{}) (string, error) { return name + " done", nil }, opts...)
	}
	catalog := toolset.NewFunction(mk("refund_payment", toolset.WithDeferred()), mk("whoami"), mk("echo"))
	visible := toolset.NewFiltered(catalog, func(_ context.Context, tl toolset.Tool) (bool, error) {
		return tl.Name != "whoami" || !hide.Load(), nil
	})
	model := toolsettest.NewScriptedModel(t, toolsettest.Gemini,
		toolsettest.CallTools(toolset.ToolCall{ID: "s1", Name: "tool_search", Args: json.RawMessage(`{"query":"refund","top_k":1}`)}),
		toolsettest.CallTools(toolset.ToolCall{ID: "c1", Name: "refund_payment", Args: json.RawMessage(`{}`)}),
		toolsettest.CallTools(toolset.ToolCall{ID: "c2", Name: "whoami", Args: json.RawMessage(`{}`)}),
		toolsettest.Answer("Done."))
	client := newClient(t, model)

	var st geminitools.StableTools
	run := toolsettest.NewRun(t)
	contents := []*genai.Content{genai.NewContentFromText("Refund it.", genai.RoleUser)}
	for step := range 4 {
		if step == 2 {
			hide.Store(true)
		}
		turn := run.Turn(t.Context())
		tools, err := toolset.BuildTools(turn, "assistant", visible, toolset.NewToolSearch(catalog))
		require.NoError(t, err)
		decls, config, err := st.Tools(tools)
		require.NoError(t, err)
		resp, err := client.Models.GenerateContent(turn, "gemini-test", contents, &genai.GenerateContentConfig{Tools: decls, ToolConfig: config})
		require.NoError(t, err)
		reply := resp.Candidates[0].Content
		results, err := geminitools.RunCalls(turn, tools, reply)
		require.NoError(t, err)
		if results == nil {
			assert.Equal(t, "Done.", resp.Text())
			break
		}
		contents = append(contents, reply, results)
	}
	reqs := model.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, []string{"whoami", "echo", "tool_search"}, reqs[0].ToolNames())
	assert.Equal(t, []string{"refund_payment", "whoami", "echo", "tool_search"}, reqs[1].ToolNames(), "the reveal adds the tool")
	assert.Empty(t, bodyField(t, reqs[1].Body, "toolConfig"))
	assert.Equal(t, bodyField(t, reqs[1].Body, "tools"), bodyField(t, reqs[2].Body, "tools"), "the restriction keeps the declarations, byte for byte")
	assert.Equal(t, bodyField(t, reqs[1].Body, "tools"), bodyField(t, reqs[3].Body, "tools"))
	restricted := `{"functionCallingConfig":{"mode":"VALIDATED","allowedFunctionNames":["refund_payment","echo","tool_search"]}}`
	assert.JSONEq(t, restricted, bodyField(t, reqs[2].Body, "toolConfig"))
	assert.JSONEq(t, restricted, bodyField(t, reqs[3].Body, "toolConfig"))
	res := reqs[3].Results
	require.NotEmpty(t, res)
	last := res[len(res)-1]
	assert.Equal(t, "whoami", last.Name)
	assert.NotEqual(t, "whoami done", last.Text, "a call of the hidden tool is refused")
	assert.Contains(t, last.Text, "whoami")
	assert.Equal(t, "refund_payment done", res[len(res)-2].Text, "the revealed tool was called")
}

// A turn with no tools after some keeps the declarations and allows no
// call; with no tools at all there is nothing to send.
func TestStableToolsTurnWithNoTools(t *testing.T) {
	var st geminitools.StableTools
	run := toolsettest.NewRun(t)
	none, err := toolset.BuildTools(run.Turn(t.Context()), "assistant")
	require.NoError(t, err)
	decls, config, err := st.Tools(none)
	require.NoError(t, err)
	assert.Nil(t, decls)
	assert.Nil(t, config)

	echo := toolset.NewTool("echo", "Echo.", func(context.Context, struct{}) (string, error) { return "", nil })
	some, err := toolset.BuildTools(run.Turn(t.Context()), "assistant", echo)
	require.NoError(t, err)
	first, _, err := st.Tools(some)
	require.NoError(t, err)
	none, err = toolset.BuildTools(run.Turn(t.Context()), "assistant")
	require.NoError(t, err)
	decls, config, err = st.Tools(none)
	require.NoError(t, err)
	assert.Equal(t, first, decls)
	require.NotNil(t, config)
	assert.Equal(t, genai.FunctionCallingConfigModeNone, config.FunctionCallingConfig.Mode)
}
