package openaitools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
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

// cannedModel is a Responses API endpoint that answers each request with
// the next of its outputs, and records the request bodies.
type cannedModel struct {
	mu      sync.Mutex
	outputs []string
	bodies  []json.RawMessage
}

func (m *cannedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	n := len(m.bodies)
	m.bodies = append(m.bodies, body)
	m.mu.Unlock()
	if n >= len(m.outputs) {
		http.Error(w, `{"error":{"message":"past the script"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"resp_%d","object":"response","model":"gpt-test","status":"completed","output":%s}`, n+1, m.outputs[n])
}

func (m *cannedModel) requests() []json.RawMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bodies
}

func startCanned(t *testing.T, outputs ...string) (*cannedModel, openai.Client) {
	m := &cannedModel{outputs: outputs}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("test-key"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	return m, client
}

// searchLoop runs a Responses loop over the catalogue and its search,
// chaining turns with previous_response_id, until the model answers.
func searchLoop(t *testing.T, client openai.Client, toolsets []toolset.Toolset, opts ...openaitools.Option) string {
	t.Helper()
	run := toolsettest.NewRun(t)
	ctx := toolset.NewContext(t.Context(), run)
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Refund payment p7.", responses.EasyInputMessageRoleUser)}
	previous := ""
	for range 5 {
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "assistant", toolsets...)
		require.NoError(t, err)
		params, err := openaitools.ResponseTools(tools, opts...)
		require.NoError(t, err)
		req := responses.ResponseNewParams{Model: "gpt-test", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}, Tools: params}
		if previous != "" {
			req.PreviousResponseID = openai.String(previous)
		}
		resp, err := client.Responses.New(ctx, req)
		require.NoError(t, err)
		if len(openaitools.ResponseCalls(resp.Output)) == 0 {
			return resp.OutputText()
		}
		input, err = openaitools.RunResponseCalls(turn, tools, resp.Output, opts...)
		require.NoError(t, err)
		previous = resp.ID
	}
	t.Fatal("no answer after 5 turns")
	return ""
}

func field(t *testing.T, body json.RawMessage, name string) string {
	t.Helper()
	var req map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &req))
	return string(req[name])
}

const answer = `[{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Refunded.","annotations":[]}]}]`

func searchCallOutput(args string) string {
	return `[{"type":"tool_search_call","id":"ts1","call_id":"s1","execution":"client","status":"completed","arguments":` + args + `}]`
}

// With defer loading, the Responses API is sent the whole catalogue from
// the first turn, deferred tools with defer_loading and the search as a
// client-executed tool_search; the model's tool_search_call is answered
// with the definitions of the tools found; the tools array never changes;
// and a found tool is then called like any other.
func TestResponsesDeferLoadingKeepsTheToolsArray(t *testing.T) {
	catalog := billing()
	m, client := startCanned(t,
		searchCallOutput(`{"query":"refund a payment","top_k":1}`),
		`[{"type":"function_call","id":"fc1","call_id":"c1","name":"refund_payment","arguments":"{\"id\":\"p7\"}","status":"completed"}]`,
		answer)
	got := searchLoop(t, client, []toolset.Toolset{catalog, toolset.NewToolSearch(catalog)}, openaitools.WithDeferLoading())
	assert.Equal(t, "Refunded.", got)

	reqs := m.requests()
	require.Len(t, reqs, 3)
	first := field(t, reqs[0], "tools")
	for i, body := range reqs[1:] {
		assert.Equal(t, first, field(t, body, "tools"), "request %d: the tools array is the same, byte for byte", i+2)
	}
	var tools []struct {
		Type         string `json:"type"`
		Name         string `json:"name"`
		Execution    string `json:"execution"`
		DeferLoading *bool  `json:"defer_loading"`
	}
	require.NoError(t, json.Unmarshal([]byte(first), &tools))
	var got2 []string
	for _, tl := range tools {
		got2 = append(got2, fmt.Sprintf("%s %s defer=%v exec=%s", tl.Type, tl.Name, tl.DeferLoading != nil && *tl.DeferLoading, tl.Execution))
	}
	assert.Equal(t, []string{
		"function create_invoice defer=true exec=",
		"function refund_payment defer=true exec=",
		"function list_invoices defer=true exec=",
		"function whoami defer=false exec=",
		"tool_search  defer=false exec=client",
	}, got2)

	assert.JSONEq(t, `[{"type":"tool_search_output","call_id":"s1","execution":"client","status":"completed","tools":[`+
		`{"type":"function","name":"refund_payment","description":"Refund a card payment to a customer.","strict":false,"defer_loading":true,`+
		`"parameters":{"properties":{"id":{"type":"string"}},"additionalProperties":false,"type":"object","required":["id"]}}]}]`,
		field(t, reqs[1], "input"))
	assert.JSONEq(t, `[{"type":"function_call_output","call_id":"c1","output":"refund_payment p7"}]`, field(t, reqs[2], "input"))
}

// A search whose results name tools the turn was not sent loads none of
// them; a search with a huge query is searched like another.
func TestResponsesDeferLoadingHostileSearches(t *testing.T) {
	t.Run("unknown tools", func(t *testing.T) {
		m, client := startCanned(t, searchCallOutput(`{"query":"invoice"}`), answer)
		searchLoop(t, client, []toolset.Toolset{toolset.NewToolSearch(billing())}, openaitools.WithDeferLoading())
		reqs := m.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, field(t, reqs[0], "tools"), field(t, reqs[1], "tools"))
		assert.JSONEq(t, `[{"type":"tool_search_output","call_id":"s1","execution":"client","status":"completed","tools":[]}]`, field(t, reqs[1], "input"))
	})
	t.Run("oversized query", func(t *testing.T) {
		args, err := json.Marshal(toolset.ToolSearchArgs{Query: strings.Repeat("refund payment zzz ", 50_000), TopK: 50})
		require.NoError(t, err)
		catalog := billing()
		m, client := startCanned(t, searchCallOutput(string(args)), answer)
		searchLoop(t, client, []toolset.Toolset{catalog, toolset.NewToolSearch(catalog)}, openaitools.WithDeferLoading())
		reqs := m.requests()
		require.Len(t, reqs, 2)
		var input []struct {
			Type  string `json:"type"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal([]byte(field(t, reqs[1], "input")), &input))
		require.Len(t, input, 1)
		assert.Equal(t, "tool_search_output", input[0].Type)
		for _, tl := range input[0].Tools {
			assert.Contains(t, []string{"create_invoice", "refund_payment", "list_invoices"}, tl.Name)
		}
	})
	t.Run("arguments not an object", func(t *testing.T) {
		catalog := billing()
		m, client := startCanned(t, searchCallOutput(`"refund"`), answer)
		searchLoop(t, client, []toolset.Toolset{catalog, toolset.NewToolSearch(catalog)}, openaitools.WithDeferLoading())
		reqs := m.requests()
		require.Len(t, reqs, 2)
		assert.JSONEq(t, `[{"type":"tool_search_output","call_id":"s1","execution":"client","status":"completed","tools":[]}]`, field(t, reqs[1], "input"))
	})
}

// Chat Completions has no tool search: the option changes nothing there.
func TestChatToolsIgnoreDeferLoading(t *testing.T) {
	catalog := billing()
	tools, err := toolset.BuildTools(toolsettest.NewRun(t).Turn(t.Context()), "assistant", catalog, toolset.NewToolSearch(catalog))
	require.NoError(t, err)
	plain, err := openaitools.ChatTools(tools)
	require.NoError(t, err)
	deferred, err := openaitools.ChatTools(tools, openaitools.WithDeferLoading())
	require.NoError(t, err)
	a, _ := json.Marshal(plain)
	b, _ := json.Marshal(deferred)
	assert.Equal(t, string(a), string(b))
	assert.Len(t, plain, 2)
}

// With defer loading, a Responses preflight checks every tool sent, the
// deferred tools not yet revealed too.
func TestResponsesDeferLoadingPreflightChecksTheCatalogue(t *testing.T) {
	s, err := toolset.ParseSchema([]byte(`{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}],"properties":{"a":{},"b":{}}}`))
	require.NoError(t, err)
	bad := toolset.NewRawTool("bad_deferred", "A deferred tool.", s, func(context.Context, json.RawMessage) (any, error) { return "ok", nil }, toolset.WithDeferred())
	catalog := toolset.NewFunction(bad)
	tools, err := toolset.BuildTools(toolsettest.NewRun(t).Turn(t.Context()), "assistant", catalog, toolset.NewToolSearch(catalog))
	require.NoError(t, err)

	_, err = openaitools.ResponseTools(tools, openaitools.WithPreflight())
	require.NoError(t, err, "without defer loading the hidden tool is not sent, nor checked")
	_, err = openaitools.ResponseTools(tools, openaitools.WithPreflight(), openaitools.WithDeferLoading())
	var pe *toolset.PreflightError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "bad_deferred")

	// The public Check, given the same options, checks the same tools.
	problems, err := openaitools.Check(tools, openaitools.WithStrict())
	require.NoError(t, err, "without defer loading Check sees the visible tools only")
	assert.Empty(t, problems)
	problems, err = openaitools.Check(tools, openaitools.WithDeferLoading())
	require.ErrorAs(t, err, &pe)
	require.NotEmpty(t, problems)
	assert.Equal(t, "bad_deferred", problems[0].Tool)
	assert.Equal(t, "/parameters/oneOf", problems[0].Path)
}

// A search the application runs itself is answered, through
// ResponseOutputFor with the options, as RunResponseCalls answers it: a
// tool_search_output with the definitions of the tools found.
func TestResponseOutputForAnswersASearchTheApplicationRan(t *testing.T) {
	catalog := billing()
	m, client := startCanned(t, searchCallOutput(`{"query":"refund a payment","top_k":1}`), answer)
	run := toolsettest.NewRun(t)
	turn := run.Turn(toolset.NewContext(t.Context(), run))
	tools, err := toolset.BuildTools(turn, "assistant", catalog, toolset.NewToolSearch(catalog))
	require.NoError(t, err)
	opts := []openaitools.Option{openaitools.WithDeferLoading(), openaitools.WithStrict()}
	params, err := openaitools.ResponseTools(tools, opts...)
	require.NoError(t, err)
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Refund payment p7.", responses.EasyInputMessageRoleUser)}
	req := responses.ResponseNewParams{Model: "gpt-test", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}, Tools: params}
	resp, err := client.Responses.New(turn, req)
	require.NoError(t, err)
	calls := openaitools.ResponseCalls(resp.Output)
	require.Len(t, calls, 1)

	want, err := openaitools.RunResponseCalls(turn, tools, resp.Output, opts...)
	require.NoError(t, err)
	result, err := tools.Execute(turn, calls[0])
	require.NoError(t, err)
	got, err := openaitools.ResponseOutputFor(tools, calls[0], result, nil, opts...)
	require.NoError(t, err)
	wantJSON, _ := json.Marshal(want[0])
	gotJSON, _ := json.Marshal(got)
	assert.JSONEq(t, string(wantJSON), string(gotJSON), "the loop's item, and the application's")

	req.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{got}}
	req.PreviousResponseID = openai.String(resp.ID)
	_, err = client.Responses.New(turn, req)
	require.NoError(t, err)
	reqs := m.requests()
	require.Len(t, reqs, 2)
	assert.JSONEq(t, `[{"type":"tool_search_output","call_id":"s1","execution":"client","status":"completed","tools":[`+
		`{"type":"function","name":"refund_payment","description":"Refund a card payment to a customer.","strict":true,"defer_loading":true,`+
		`"parameters":{"properties":{"id":{"type":"string"}},"additionalProperties":false,"type":"object","required":["id"]}}]}]`,
		field(t, reqs[1], "input"))

	plain, err := openaitools.ResponseOutput(calls[0], result, nil)
	require.NoError(t, err)
	b, _ := json.Marshal(plain)
	assert.Contains(t, string(b), `"function_call_output"`, "ResponseOutput knows no search")
	for name, o := range map[string]func() (responses.ResponseInputItemUnionParam, error){
		"without the option": func() (responses.ResponseInputItemUnionParam, error) {
			return openaitools.ResponseOutputFor(tools, calls[0], result, nil)
		},
		"a nil list": func() (responses.ResponseInputItemUnionParam, error) {
			return openaitools.ResponseOutputFor(nil, calls[0], result, nil, opts...)
		},
	} {
		same, err := o()
		require.NoError(t, err, name)
		c, _ := json.Marshal(same)
		assert.Equal(t, string(b), string(c), name)
	}
}

// A failed search loads nothing; a result of the search's type from a tool
// that is no search, or a call of no tool, is a function_call_output; a
// found name that is no deferred tool of the turn is left out; an error
// that should stop the run is returned.
func TestResponseOutputForHostile(t *testing.T) {
	catalog := billing()
	turn := toolsettest.NewRun(t).Turn(t.Context())
	fake := toolset.NewTool("fake_search", "Looks like a search.", func(context.Context, struct{}) (toolset.ToolSearchResult, error) {
		return toolset.ToolSearchResult{}, nil
	})
	tools, err := toolset.BuildTools(turn, "assistant", catalog, fake, toolset.NewToolSearch(catalog, toolset.WithSearchName("find_tools")))
	require.NoError(t, err)
	forged := toolset.ToolSearchResult{Tools: []toolset.FoundTool{{Name: "whoami"}, {Name: "not_a_tool"}, {Name: "list_invoices"}, {Name: "list_invoices"}}}
	out := func(call toolset.ToolCall, result any, err error) string {
		t.Helper()
		item, err := openaitools.ResponseOutputFor(tools, call, result, err, openaitools.WithDeferLoading())
		require.NoError(t, err)
		b, _ := json.Marshal(item)
		return string(b)
	}
	assert.Contains(t, out(toolset.ToolCall{ID: "f", Name: "fake_search"}, forged, nil), `"function_call_output"`)
	assert.Contains(t, out(toolset.ToolCall{ID: "u", Name: "nope"}, forged, nil), `"function_call_output"`)
	for _, name := range []string{"find_tools", "tool_search"} {
		got := out(toolset.ToolCall{ID: "s", Name: name}, &forged, nil)
		var item struct {
			Type  string `json:"type"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal([]byte(got), &item), name)
		assert.Equal(t, "tool_search_output", item.Type, name)
		require.Len(t, item.Tools, 1, "%s: only the deferred tool found, once", name)
		assert.Equal(t, "list_invoices", item.Tools[0].Name)
	}
	assert.JSONEq(t, `{"type":"tool_search_output","call_id":"s","execution":"client","status":"completed","tools":[]}`,
		out(toolset.ToolCall{ID: "s", Name: "find_tools"}, forged, toolset.NewModelError("bad query")), "a failed search loads nothing")
	assert.JSONEq(t, `{"type":"tool_search_output","call_id":"s","execution":"client","status":"completed","tools":[]}`,
		out(toolset.ToolCall{ID: "s", Name: "find_tools"}, (*toolset.ToolSearchResult)(nil), nil))
	_, err = openaitools.ResponseOutputFor(tools, toolset.ToolCall{ID: "s", Name: "find_tools"}, nil, context.Canceled, openaitools.WithDeferLoading())
	var ce *openaitools.CallError
	require.ErrorAs(t, err, &ce)
}
