package openaitools_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A conversation with defer loading and StableTools: a search reveals a
// tool, a later turn hides another; the tools array stays the same, byte
// for byte, and the hidden tool is restricted away by name (and refused
// if the model calls it anyway), while the revealed tool is called.
func TestStableToolsKeepTheArrayAcrossARevealAndARestriction(t *testing.T) {
	var hideWhoami atomic.Bool
	catalog := billing()
	visible := toolset.NewFiltered(catalog, func(_ context.Context, tl toolset.Tool) (bool, error) {
		return tl.Name != "whoami" || !hideWhoami.Load(), nil
	})
	m, client := startCanned(t,
		searchCallOutput(`{"query":"refund a payment","top_k":1}`),
		`[{"type":"function_call","id":"fc1","call_id":"c1","name":"refund_payment","arguments":"{\"id\":\"p7\"}","status":"completed"},`+
			`{"type":"function_call","id":"fc2","call_id":"c2","name":"whoami","arguments":"{}","status":"completed"}]`,
		answer)

	var st openaitools.StableTools
	run := toolsettest.NewRun(t)
	ctx := toolset.NewContext(t.Context(), run)
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Refund payment p7.", responses.EasyInputMessageRoleUser)}
	previous := ""
	for step := range 3 {
		if step == 1 {
			hideWhoami.Store(true)
		}
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "assistant", visible, toolset.NewToolSearch(catalog))
		require.NoError(t, err)
		params, choice, err := st.ResponseTools(tools, openaitools.WithDeferLoading())
		require.NoError(t, err)
		req := responses.ResponseNewParams{Model: "gpt-test", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}, Tools: params, ToolChoice: choice}
		if previous != "" {
			req.PreviousResponseID = openai.String(previous)
		}
		resp, err := client.Responses.New(ctx, req)
		require.NoError(t, err)
		if len(openaitools.ResponseCalls(resp.Output)) == 0 {
			assert.Equal(t, "Refunded.", resp.OutputText())
			break
		}
		input, err = openaitools.RunResponseCalls(turn, tools, resp.Output, openaitools.WithDeferLoading())
		require.NoError(t, err)
		previous = resp.ID
	}
	reqs := m.requests()
	require.Len(t, reqs, 3)
	first := field(t, reqs[0], "tools")
	for i, body := range reqs[1:] {
		assert.Equal(t, first, field(t, body, "tools"), "request %d: the tools array is the same, byte for byte", i+2)
	}
	assert.Empty(t, field(t, reqs[0], "tool_choice"), "nothing to restrict at first")
	restricted := `{"type":"allowed_tools","mode":"auto","tools":[` +
		`{"type":"function","name":"create_invoice"},{"type":"function","name":"refund_payment"},{"type":"function","name":"list_invoices"},{"type":"tool_search"}]}`
	assert.JSONEq(t, restricted, field(t, reqs[1], "tool_choice"))
	assert.JSONEq(t, restricted, field(t, reqs[2], "tool_choice"))

	var outputs []struct {
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	require.NoError(t, json.Unmarshal([]byte(field(t, reqs[2], "input")), &outputs))
	require.Len(t, outputs, 2)
	assert.Equal(t, "refund_payment p7", outputs[0].Output, "the revealed tool is called")
	assert.Contains(t, outputs[1].Output, "whoami", "a call of the hidden tool is refused, as an error the model sees")
	assert.NotEqual(t, "ann", outputs[1].Output)
}

// A turn that shows a new tool sends its own array, unrestricted.
func TestStableToolsStartAgainWhenATurnShowsANewTool(t *testing.T) {
	var st openaitools.StableTools
	run := toolsettest.NewRun(t)
	one := toolset.NewTool("one", "One.", func(context.Context, struct{}) (string, error) { return "1", nil })
	two := toolset.NewTool("two", "Two.", func(context.Context, struct{}) (string, error) { return "2", nil })
	turn := func(ts ...toolset.Toolset) *toolset.ToolList {
		tools, err := toolset.BuildTools(run.Turn(t.Context()), "assistant", ts...)
		require.NoError(t, err)
		return tools
	}
	p1, c1, err := st.ResponseTools(turn(one))
	require.NoError(t, err)
	p2, c2, err := st.ResponseTools(turn(one, two))
	require.NoError(t, err)
	p3, c3, err := st.ResponseTools(turn())
	require.NoError(t, err)
	assert.Len(t, p1, 1)
	assert.Len(t, p2, 2)
	assert.Equal(t, p2, p3, "a turn with no tools sends the earlier array")
	for _, c := range []responses.ResponseNewParamsToolChoiceUnion{c1, c2} {
		b, _ := json.Marshal(c)
		assert.Contains(t, []string{"null", `""`, "{}"}, string(b))
	}
	b, _ := json.Marshal(c3)
	assert.Equal(t, `"none"`, string(b))
}
