package anthropictools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/anthropictools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// billing is a catalogue of deferred tools, and one tool always shown.
func billing() toolset.Toolset {
	mk := func(name, desc string) toolset.Tool {
		return toolset.NewTool(name, desc, func(_ context.Context, in struct {
			ID string `json:"id"`
		}) (string, error) {
			return name + " " + in.ID, nil
		}, toolset.WithDeferred())
	}
	return toolset.NewFunction(
		mk("create_invoice", "Create an invoice for a customer."),
		mk("refund_payment", "Refund a card payment to a customer."),
		mk("list_invoices", "List the invoices of a customer."),
		toolset.NewTool("whoami", "The current user.", func(context.Context, struct{}) (string, error) { return "ann", nil }),
	)
}

// sentTools returns the tools array of a request body, as sent.
func sentTools(t *testing.T, body json.RawMessage) string {
	t.Helper()
	var req map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &req))
	return string(req["tools"])
}

// toolResults returns the content of each tool_result block of the last
// message of a request body.
func toolResults(t *testing.T, body json.RawMessage) []string {
	t.Helper()
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &req))
	var blocks []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	require.NoError(t, json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &blocks))
	var out []string
	for _, b := range blocks {
		if b.Type == "tool_result" {
			out = append(out, string(b.Content))
		}
	}
	return out
}

// With defer loading, the model is sent every tool of the catalogue from
// the first step, deferred ones marked; a search's result loads the tools
// found by reference; the tools array never changes; and a found tool is
// then called like any other.
func TestDeferLoadingKeepsTheToolsArray(t *testing.T) {
	catalog := billing()
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(toolset.ToolCall{ID: "s1", Name: "tool_search", Args: json.RawMessage(`{"query":"refund a payment","top_k":1}`)}),
		toolsettest.CallTools(toolset.ToolCall{ID: "c1", Name: "refund_payment", Args: json.RawMessage(`{"id":"p7"}`)}),
		toolsettest.Answer("Refunded."))
	res, err := anthropictools.RunLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant",
		[]toolset.Toolset{catalog, toolset.NewToolSearch(catalog)},
		anthropictools.WithCallOptions(anthropictools.WithDeferLoading()))
	require.NoError(t, err)
	assert.Equal(t, "Refunded.", res.Text)

	reqs := model.Requests()
	require.Len(t, reqs, 3)
	first := sentTools(t, reqs[0].Body)
	for i, req := range reqs[1:] {
		assert.Equal(t, first, sentTools(t, req.Body), "request %d: the tools array is the same, byte for byte", i+2)
	}
	var tools []struct {
		Name         string `json:"name"`
		DeferLoading *bool  `json:"defer_loading"`
	}
	require.NoError(t, json.Unmarshal([]byte(first), &tools))
	var deferred, shown []string
	for _, tl := range tools {
		if tl.DeferLoading != nil && *tl.DeferLoading {
			deferred = append(deferred, tl.Name)
		} else {
			shown = append(shown, tl.Name)
		}
	}
	assert.Equal(t, []string{"create_invoice", "refund_payment", "list_invoices"}, deferred)
	assert.Equal(t, []string{"whoami", "tool_search"}, shown)

	assert.Equal(t, []string{`[{"tool_name":"refund_payment","type":"tool_reference"}]`}, toolResults(t, reqs[1].Body))
	assert.Equal(t, []string{`[{"text":"refund_payment p7","type":"text"}]`}, toolResults(t, reqs[2].Body))
}

// Without the option, the library's own search shows found tools from the
// next step: the tools array grows.
func TestWithoutDeferLoadingTheArrayGrows(t *testing.T) {
	catalog := billing()
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(toolset.ToolCall{ID: "s1", Name: "tool_search", Args: json.RawMessage(`{"query":"refund","top_k":1}`)}),
		toolsettest.Answer("Found it."))
	_, err := anthropictools.RunLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant",
		[]toolset.Toolset{catalog, toolset.NewToolSearch(catalog)})
	require.NoError(t, err)
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"whoami", "tool_search"}, reqs[0].ToolNames())
	assert.Equal(t, []string{"refund_payment", "whoami", "tool_search"}, reqs[1].ToolNames())
	assert.NotContains(t, reqs[0].Body, "defer_loading")
	assert.NotContains(t, toolResults(t, reqs[1].Body)[0], "tool_reference")
}

// A search whose results name tools the turn was not sent (it searches a
// catalogue of other tools) references none of them: Anthropic refuses a
// reference to a tool it was not sent. The model is told nothing matched.
func TestDeferLoadingDropsReferencesToToolsNotSent(t *testing.T) {
	elsewhere := billing()
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(toolset.ToolCall{ID: "s1", Name: "tool_search", Args: json.RawMessage(`{"query":"invoice"}`)}),
		toolsettest.Answer("Nothing."))
	_, err := anthropictools.RunLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant",
		[]toolset.Toolset{toolset.NewToolSearch(elsewhere)},
		anthropictools.WithCallOptions(anthropictools.WithDeferLoading()))
	require.NoError(t, err)
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, sentTools(t, reqs[0].Body), sentTools(t, reqs[1].Body))
	assert.Equal(t, []string{`[{"text":"No tools matched; try other words.","type":"text"}]`}, toolResults(t, reqs[1].Body))
}

// A query far larger than any tool's words is searched like another:
// nothing breaks, and nothing unknown is referenced.
func TestDeferLoadingOversizedQuery(t *testing.T) {
	catalog := billing()
	query := strings.Repeat("refund payment zzz ", 50_000) // ~1 MB
	args, err := json.Marshal(toolset.ToolSearchArgs{Query: query, TopK: 50})
	require.NoError(t, err)
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(toolset.ToolCall{ID: "s1", Name: "tool_search", Args: args}),
		toolsettest.Answer("Done."))
	_, err = anthropictools.RunLoop(t.Context(), newClient(model), question(), toolsettest.NewRun(t), "assistant",
		[]toolset.Toolset{catalog, toolset.NewToolSearch(catalog)},
		anthropictools.WithCallOptions(anthropictools.WithDeferLoading()))
	require.NoError(t, err)
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, sentTools(t, reqs[0].Body), sentTools(t, reqs[1].Body))
	got := toolResults(t, reqs[1].Body)
	require.Len(t, got, 1)
	var blocks []struct {
		Type     string `json:"type"`
		ToolName string `json:"tool_name"`
	}
	require.NoError(t, json.Unmarshal([]byte(got[0]), &blocks))
	for _, b := range blocks {
		if b.Type == "tool_reference" {
			assert.Contains(t, []string{"create_invoice", "refund_payment", "list_invoices"}, b.ToolName)
		}
	}
}

// With defer loading, a preflight checks every tool sent, the deferred
// tools not yet revealed too.
func TestDeferLoadingPreflightChecksTheCatalogue(t *testing.T) {
	s, err := toolset.ParseSchema([]byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`))
	require.NoError(t, err)
	bad := toolset.NewRawTool("bad_deferred", "A deferred tool.", s, func(context.Context, json.RawMessage) (any, error) { return "ok", nil }, toolset.WithDeferred())
	catalog := toolset.NewFunction(bad)
	tools, err := toolset.BuildTools(toolsettest.NewRun(t).Turn(t.Context()), "assistant", catalog, toolset.NewToolSearch(catalog))
	require.NoError(t, err)

	_, err = anthropictools.Tools(tools, anthropictools.WithPreflight())
	require.NoError(t, err, "without defer loading the hidden tool is not sent, nor checked")
	_, err = anthropictools.Tools(tools, anthropictools.WithPreflight(), anthropictools.WithDeferLoading())
	var pe *toolset.PreflightError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "bad_deferred")

	// The public Check, given the same options, checks the same tools.
	problems, err := anthropictools.Check(tools)
	require.NoError(t, err, "without defer loading Check sees the visible tools only")
	assert.Empty(t, problems)
	problems, err = anthropictools.Check(tools, anthropictools.WithDeferLoading())
	require.ErrorAs(t, err, &pe)
	require.NotEmpty(t, problems)
	assert.Equal(t, "bad_deferred", problems[0].Tool)
	assert.Equal(t, "/parameters/anyOf", problems[0].Path)
}

// A tool of one's own that returns a search result's type is no search:
// its result goes back as JSON text, and without deferred tools the
// option sends the same array as without it.
func TestDeferLoadingOnlyTurnsSearchesIntoReferences(t *testing.T) {
	fake := toolset.NewTool("fake_search", "Looks like a search.", func(context.Context, struct{}) (toolset.ToolSearchResult, error) {
		return toolset.ToolSearchResult{Tools: []toolset.FoundTool{{Name: "fake_search"}}}, nil
	})
	turn := toolsettest.NewRun(t).Turn(t.Context())
	tools, err := toolset.BuildTools(turn, "assistant", fake)
	require.NoError(t, err)
	plain, err := anthropictools.Tools(tools)
	require.NoError(t, err)
	deferred, err := anthropictools.Tools(tools, anthropictools.WithDeferLoading())
	require.NoError(t, err)
	a, _ := json.Marshal(plain)
	b, _ := json.Marshal(deferred)
	assert.Equal(t, string(a), string(b))

	content := []anthropic.ContentBlockUnion{}
	require.NoError(t, json.Unmarshal([]byte(`[{"type":"tool_use","id":"f1","name":"fake_search","input":{}}]`), &content))
	results, err := anthropictools.RunCalls(turn, tools, content, anthropictools.WithDeferLoading())
	require.NoError(t, err)
	out, _ := json.Marshal(results)
	assert.NotContains(t, string(out), "tool_reference")
	assert.Contains(t, string(out), "fake_search")
}

// A search the application runs itself is sent, through ResultBlockFor
// with the option, as the loop sends it: tool_reference blocks for the
// deferred tools found. ResultBlock, which knows no catalogue, sends text.
func TestResultBlockForReferencesWhatTheSearchFound(t *testing.T) {
	catalog := billing()
	model := toolsettest.NewScriptedModel(t, toolsettest.Anthropic,
		toolsettest.CallTools(toolset.ToolCall{ID: "s1", Name: "tool_search", Args: json.RawMessage(`{"query":"refund a payment","top_k":2}`)}),
		toolsettest.Answer("Done."))
	client := newClient(model)
	run := toolsettest.NewRun(t)
	turn := run.Turn(t.Context())
	tools, err := toolset.BuildTools(turn, "assistant", catalog, toolset.NewToolSearch(catalog))
	require.NoError(t, err)
	params, err := anthropictools.Tools(tools, anthropictools.WithDeferLoading())
	require.NoError(t, err)
	req := question()
	req.Tools = params
	msg, err := client.Messages.New(turn, req)
	require.NoError(t, err)
	calls := anthropictools.Calls(msg.Content)
	require.Len(t, calls, 1)

	want, err := anthropictools.RunCalls(turn, tools, msg.Content, anthropictools.WithDeferLoading())
	require.NoError(t, err)
	result, err := tools.Execute(turn, calls[0])
	require.NoError(t, err)
	got, err := anthropictools.ResultBlockFor(tools, calls[0], result, nil, anthropictools.WithDeferLoading())
	require.NoError(t, err)
	wantJSON, _ := json.Marshal(want[0])
	gotJSON, _ := json.Marshal(got)
	assert.JSONEq(t, string(wantJSON), string(gotJSON), "the loop's block, and the application's")

	req.Messages = append(req.Messages, msg.ToParam(), anthropic.NewUserMessage(got))
	_, err = client.Messages.New(turn, req)
	require.NoError(t, err)
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{`[{"tool_name":"refund_payment","type":"tool_reference"}]`}, toolResults(t, reqs[1].Body))

	plain, err := anthropictools.ResultBlock(calls[0], result, nil)
	require.NoError(t, err)
	b, _ := json.Marshal(plain)
	assert.NotContains(t, string(b), "tool_reference")
	same, err := anthropictools.ResultBlockFor(tools, calls[0], result, nil)
	require.NoError(t, err)
	c, _ := json.Marshal(same)
	assert.Equal(t, string(b), string(c), "without the option, as ResultBlock")
	same, err = anthropictools.ResultBlockFor(nil, calls[0], result, nil, anthropictools.WithDeferLoading())
	require.NoError(t, err)
	c, _ = json.Marshal(same)
	assert.Equal(t, string(b), string(c), "a nil list, as ResultBlock")
}

// A failed search, or a result of the search's type from another tool,
// references nothing; an error that should stop the run is returned.
func TestResultBlockForHostile(t *testing.T) {
	catalog := billing()
	turn := toolsettest.NewRun(t).Turn(t.Context())
	fake := toolset.NewTool("fake_search", "Looks like a search.", func(context.Context, struct{}) (toolset.ToolSearchResult, error) {
		return toolset.ToolSearchResult{}, nil
	})
	tools, err := toolset.BuildTools(turn, "assistant", catalog, fake, toolset.NewToolSearch(catalog))
	require.NoError(t, err)
	forged := toolset.ToolSearchResult{Tools: []toolset.FoundTool{{Name: "refund_payment"}, {Name: "not_a_tool"}, {Name: "refund_payment"}}}
	for name, tc := range map[string]struct {
		call   toolset.ToolCall
		result any
		err    error
	}{
		"another tool's result": {toolset.ToolCall{ID: "f", Name: "fake_search"}, forged, nil},
		"an unknown tool":       {toolset.ToolCall{ID: "u", Name: "nope"}, forged, nil},
		"a failed search":       {toolset.ToolCall{ID: "s", Name: "tool_search"}, forged, toolset.NewModelError("bad query")},
		"a nil result pointer":  {toolset.ToolCall{ID: "s", Name: "tool_search"}, (*toolset.ToolSearchResult)(nil), nil},
		"a search's odd result": {toolset.ToolCall{ID: "s", Name: "tool_search"}, "text", nil},
	} {
		b, err := anthropictools.ResultBlockFor(tools, tc.call, tc.result, tc.err, anthropictools.WithDeferLoading())
		require.NoError(t, err, name)
		out, _ := json.Marshal(b)
		assert.NotContains(t, string(out), "tool_reference", name)
	}
	b, err := anthropictools.ResultBlockFor(tools, toolset.ToolCall{ID: "s", Name: "tool_search"}, &forged, nil, anthropictools.WithDeferLoading())
	require.NoError(t, err)
	out, _ := json.Marshal(b)
	assert.JSONEq(t, `{"type":"tool_result","tool_use_id":"s","content":[{"type":"tool_reference","tool_name":"refund_payment"}]}`, string(out),
		"a name not deferred in the turn is left out, a repeated one sent once")
	_, err = anthropictools.ResultBlockFor(tools, toolset.ToolCall{ID: "s", Name: "tool_search"}, nil, context.Canceled, anthropictools.WithDeferLoading())
	var ce *anthropictools.CallError
	require.ErrorAs(t, err, &ce)
}
