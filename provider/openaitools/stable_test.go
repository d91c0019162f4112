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
	"github.com/openai/openai-go/v3/packages/param"
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

// On Chat Completions too, a turn that hides a tool sends the earlier
// array again, byte for byte, with a tool_choice of allowed_tools naming
// the turn's tools; a call of the hidden tool is refused.
func TestStableChatToolsKeepTheArrayAcrossARestriction(t *testing.T) {
	var hideTwo atomic.Bool
	one := toolset.NewTool("one", "One.", func(context.Context, struct{}) (string, error) { return "1", nil })
	two := toolset.NewTool("two", "Two.", func(context.Context, struct{}) (string, error) { return "2", nil })
	three := toolset.NewTool("three", "Three.", func(context.Context, struct{}) (string, error) { return "3", nil })
	visible := toolset.NewFiltered(toolset.NewFunction(one, two, three), func(_ context.Context, tl toolset.Tool) (bool, error) {
		return tl.Name != "two" || !hideTwo.Load(), nil
	})
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat,
		toolsettest.CallTools(toolset.ToolCall{ID: "c1", Name: "one", Args: json.RawMessage(`{}`)}),
		toolsettest.CallTools(toolset.ToolCall{ID: "c2", Name: "two", Args: json.RawMessage(`{}`)}),
		toolsettest.Answer("Done."))
	client := newClient(model)

	var st openaitools.StableTools
	run := toolsettest.NewRun(t)
	ctx := toolset.NewContext(t.Context(), run)
	messages := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Count.")}
	var outputs []openai.ChatCompletionMessageParamUnion
	for step := range 3 {
		if step == 1 {
			hideTwo.Store(true)
		}
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "assistant", visible)
		require.NoError(t, err)
		params, choice, err := st.ChatTools(tools, openaitools.WithStrict())
		require.NoError(t, err)
		resp, err := client.Chat.Completions.New(turn, openai.ChatCompletionNewParams{Model: "gpt-test", Messages: messages, Tools: params, ToolChoice: choice})
		require.NoError(t, err)
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			assert.Equal(t, "Done.", msg.Content)
			break
		}
		outputs, err = openaitools.RunChatCalls(turn, tools, msg.ToolCalls)
		require.NoError(t, err)
		messages = append(messages, msg.ToParam())
		messages = append(messages, outputs...)
	}
	reqs := model.Requests()
	require.Len(t, reqs, 3)
	first := field(t, reqs[0].Body, "tools")
	assert.Contains(t, first, `"two"`)
	for i, r := range reqs[1:] {
		assert.Equal(t, first, field(t, r.Body, "tools"), "request %d: the tools array is the same, byte for byte", i+2)
	}
	assert.Empty(t, field(t, reqs[0].Body, "tool_choice"), "nothing to restrict at first")
	restricted := `{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[` +
		`{"type":"function","function":{"name":"one"}},{"type":"function","function":{"name":"three"}}]}}`
	assert.JSONEq(t, restricted, field(t, reqs[1].Body, "tool_choice"))
	assert.JSONEq(t, restricted, field(t, reqs[2].Body, "tool_choice"))
	b, _ := json.Marshal(outputs)
	assert.Contains(t, string(b), "two", "a call of the hidden tool is refused, as an error the model sees")
	assert.NotContains(t, string(b), `"content":"2"`)
}

// A turn that shows no tool sends the earlier array with tool_choice
// "none"; a turn that shows a new tool sends its own array, unrestricted;
// a turn whose tools cannot be sent fails and leaves the conversation as
// it was.
func TestStableChatToolsNoneAndNew(t *testing.T) {
	var st openaitools.StableTools
	run := toolsettest.NewRun(t)
	one := toolset.NewTool("one", "One.", func(context.Context, struct{}) (string, error) { return "1", nil })
	two := toolset.NewTool("two", "Two.", func(context.Context, struct{}) (string, error) { return "2", nil })
	turn := func(ts ...toolset.Toolset) *toolset.ToolList {
		tools, err := toolset.BuildTools(run.Turn(t.Context()), "assistant", ts...)
		require.NoError(t, err)
		return tools
	}
	p1, c1, err := st.ChatTools(turn(one))
	require.NoError(t, err)
	p2, c2, err := st.ChatTools(turn(one, two))
	require.NoError(t, err)
	p3, c3, err := st.ChatTools(turn())
	require.NoError(t, err)
	assert.Len(t, p1, 1)
	assert.Len(t, p2, 2)
	assert.Equal(t, p2, p3, "a turn with no tools sends the earlier array")
	for _, c := range []openai.ChatCompletionToolChoiceOptionUnionParam{c1, c2} {
		assert.True(t, param.IsOmitted(c), "nothing to restrict")
	}
	b, _ := json.Marshal(c3)
	assert.Equal(t, `"none"`, string(b))

	s, err := toolset.ParseSchema([]byte(`{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}],"properties":{"a":{},"b":{}}}`))
	require.NoError(t, err)
	bad := toolset.NewRawTool("bad", "Bad.", s, func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
	_, _, err = st.ChatTools(turn(one, bad), openaitools.WithPreflight())
	var pe *toolset.PreflightError
	require.ErrorAs(t, err, &pe)
	p4, c4, err := st.ChatTools(turn(one))
	require.NoError(t, err)
	assert.Equal(t, p2, p4, "the failed turn changed nothing")
	assert.False(t, param.IsOmitted(c4.OfAllowedTools))
}
