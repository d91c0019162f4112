package openaitools_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chatCalls decodes tool calls as the SDK does from a response.
func chatCalls(t *testing.T, calls string) []openai.ChatCompletionMessageToolCallUnion {
	t.Helper()
	var msg openai.ChatCompletionMessage
	require.NoError(t, json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":`+calls+`}`), &msg))
	return msg.ToolCalls
}

func responseItems(t *testing.T, items string) []responses.ResponseOutputItemUnion {
	t.Helper()
	var resp responses.Response
	require.NoError(t, json.Unmarshal([]byte(`{"id":"r","output":`+items+`}`), &resp))
	return resp.Output
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func build(t *testing.T, entries ...toolset.Toolset) *toolset.ToolList {
	t.Helper()
	tools, err := toolset.BuildTools(t.Context(), "test", entries...)
	require.NoError(t, err)
	return tools
}

var failing = toolset.NewTool("lookup", "Look something up.", func(context.Context, struct{}) (string, error) {
	return "", errors.New("connection refused")
})

var panicking = toolset.NewTool("explode", "Explode.", func(context.Context, struct{}) (string, error) {
	panic("boom")
})

type explodingResult struct{}

func (explodingResult) MarshalJSON() ([]byte, error) { panic("MarshalJSON exploded") }

var badResult = toolset.NewTool("bad_result", "Return a result that cannot be encoded.", func(context.Context, struct{}) (explodingResult, error) {
	return explodingResult{}, nil
})

var quitting = toolset.NewTool("quit", "Quit.", func(context.Context, struct{}) (string, error) {
	runtime.Goexit()
	return "", nil
})

func TestRunChatCallsStopsTheRun(t *testing.T) {
	tools := build(t, failing, panicking, quitting)
	tests := []struct {
		name, calls, want string
		as                any
	}{
		{"handler error", `[{"id":"c1","type":"function","function":{"name":"lookup","arguments":"{}"}}]`,
			`openaitools: tool call c1 of "lookup": toolset: tool "lookup": connection refused`, new(*toolset.ToolError)},
		{"panic", `[{"id":"c2","type":"function","function":{"name":"explode","arguments":""}}]`,
			`openaitools: tool call c2 of "explode": toolset: tool "explode" panicked: boom`, new(*toolset.PanicError)},
		// The model used to be told that such a call returned null.
		{"Goexit", `[{"id":"c3","type":"function","function":{"name":"quit","arguments":""}}]`,
			`openaitools: tool call c3 of "quit": toolset: tool "quit" called runtime.Goexit`, new(*toolset.PanicError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, err := openaitools.RunChatCalls(t.Context(), tools, chatCalls(t, tt.calls))
			assert.Nil(t, msgs)
			assert.EqualError(t, err, tt.want)
			assert.ErrorAs(t, err, tt.as)
			var ce *openaitools.CallError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "c"+tt.want[len("openaitools: tool call c"):][:1], ce.Call.ID)
		})
	}
}

func TestRunChatCallsResultEncodingPanicStopsTheRun(t *testing.T) {
	// Encoding such a result used to end the process.
	calls := chatCalls(t, `[{"id":"c4","type":"function","function":{"name":"bad_result","arguments":""}}]`)
	msgs, err := openaitools.RunChatCalls(t.Context(), build(t, badResult), calls)
	assert.Nil(t, msgs)
	assert.EqualError(t, err, `openaitools: tool call c4 of "bad_result": toolset: result encoding panicked: MarshalJSON exploded`)
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "result encoding", pe.Callback)
}

func TestRunChatCallsModelErrors(t *testing.T) {
	tools := build(t, toolset.NewTool("search", "Search.", func(_ context.Context, in struct {
		Query string `json:"query"`
	}) (string, error) {
		if in.Query == "" {
			return "", toolset.NewModelError("the query is empty; say what to search for")
		}
		return "found " + in.Query, nil
	}))
	calls := chatCalls(t, `[`+
		`{"id":"c1","type":"function","function":{"name":"search","arguments":"{\"query\":\"\"}"}},`+
		`{"id":"c2","type":"function","function":{"name":"serach","arguments":"{}"}},`+
		`{"id":"c3","type":"function","function":{"name":"search","arguments":"{\"query\":"}},`+
		`{"id":"c4","type":"function","function":{"name":"search","arguments":"{\"query\":\"go\"}"}}]`)
	msgs, err := openaitools.RunChatCalls(t.Context(), tools, calls)
	require.NoError(t, err)
	require.Len(t, msgs, 4)
	text := func(i int) string { return msgs[i].OfTool.Content.OfString.Value }
	for i, id := range []string{"c1", "c2", "c3", "c4"} {
		assert.Equal(t, id, msgs[i].OfTool.ToolCallID)
	}
	assert.Equal(t, "the query is empty; say what to search for", text(0))
	assert.Equal(t, `unknown tool "serach"; did you mean search? available tools: search`, text(1))
	assert.Contains(t, text(2), `invalid arguments for tool "search"`)
	assert.Equal(t, "found go", text(3))
}

func TestRunChatCallsApprovals(t *testing.T) {
	refund := toolset.NewTool("refund", "Refund an order.", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded " + in.Order, nil
	}, toolset.WithApprovalRequired(toolset.Always))
	run := toolset.NewRun("")
	defer run.End()
	ctx := run.Turn(t.Context())
	tools, err := toolset.BuildTools(ctx, "test", refund)
	require.NoError(t, err)
	calls := chatCalls(t, `[`+
		`{"id":"c1","type":"function","function":{"name":"refund","arguments":"{\"order\":\"A\"}"}},`+
		`{"id":"c2","type":"function","function":{"name":"refund","arguments":"{\"order\":\"B\"}"}}]`)

	_, err = openaitools.RunChatCalls(ctx, tools, calls)
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need, "without Approve, nobody would be asked: the run stops")

	ask := func(_ context.Context, call toolset.ToolCall) (bool, string, error) {
		return call.ID == "c1", "B was already refunded", nil
	}
	msgs, err := openaitools.RunChatCalls(ctx, tools, calls, openaitools.WithApprover(ask))
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "refunded A", msgs[0].OfTool.Content.OfString.Value)
	assert.Equal(t, `the call of tool "refund" was denied by a human: B was already refunded`, msgs[1].OfTool.Content.OfString.Value)
}

func TestRunChatCallsRefusesCustomCalls(t *testing.T) {
	calls := chatCalls(t, `[{"id":"c1","type":"custom","custom":{"name":"grammar","input":"x"}}]`)
	_, err := openaitools.RunChatCalls(t.Context(), build(t, failing), calls)
	var cte *openaitools.CallTypeError
	require.ErrorAs(t, err, &cte)
	assert.EqualError(t, err, `openaitools: tool call c1 is of type "custom"; only function calls are run, handle the others before calling this package`)
}

func TestRunChatCallsBadConcurrency(t *testing.T) {
	calls := chatCalls(t, `[{"id":"c1","type":"function","function":{"name":"lookup","arguments":"{}"}}]`)
	_, err := openaitools.RunChatCalls(t.Context(), build(t, failing), calls, openaitools.WithMaxConcurrency(0))
	assert.EqualError(t, err, "openaitools: concurrency limit must be at least 1, got 0")
}

func TestChatToolMessage(t *testing.T) {
	call := toolset.ToolCall{ID: "c1", Name: "lookup"}
	msg, err := openaitools.ChatToolMessage(call, map[string]int{"hits": 3}, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"role":"tool","tool_call_id":"c1","content":"{\"hits\":3}"}`, marshal(t, msg))

	msg, err = openaitools.ChatToolMessage(call, nil, toolset.NewModelError("try a narrower date range"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"role":"tool","tool_call_id":"c1","content":"try a narrower date range"}`, marshal(t, msg))

	_, err = openaitools.ChatToolMessage(call, nil, errors.New("disk full"))
	assert.EqualError(t, err, `openaitools: tool call c1 of "lookup": disk full`)
}

func TestResponseOutputImages(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G'}
	content := &toolset.Content{Parts: []toolset.Part{
		{Text: "Here is the chart."},
		{MIMEType: "image/png", Data: png},
		{MIMEType: "image/jpeg", URI: "https://example.com/a.jpg"},
		{MIMEType: "audio/wav", Data: []byte{1, 2, 3}},
	}}
	item, err := openaitools.ResponseOutput(toolset.ToolCall{ID: "c1", Name: "chart"}, content, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"function_call_output","call_id":"c1","output":[`+
		`{"type":"input_text","text":"Here is the chart."},`+
		`{"type":"input_image","image_url":"data:image/png;base64,iVBORw=="},`+
		`{"type":"input_image","image_url":"https://example.com/a.jpg"},`+
		`{"type":"input_text","text":"[audio/wav, 3 bytes]"}]}`, marshal(t, item))

	item, err = openaitools.ResponseOutput(toolset.ToolCall{ID: "c2"}, &toolset.Content{Parts: []toolset.Part{{Text: "just text"}}}, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"function_call_output","call_id":"c2","output":"just text"}`, marshal(t, item))
}

func TestChatToolMessageDescribesImages(t *testing.T) {
	content := &toolset.Content{Parts: []toolset.Part{{Text: "chart:"}, {MIMEType: "image/png", Data: []byte{1, 2}}}}
	msg, err := openaitools.ChatToolMessage(toolset.ToolCall{ID: "c1"}, content, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"role":"tool","tool_call_id":"c1","content":"chart:\n[image/png, 2 bytes]"}`, marshal(t, msg))
}

func TestResponseCallsSkipsOtherItems(t *testing.T) {
	items := responseItems(t, `[{"type":"reasoning","id":"rs_1","summary":[]},`+
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":"{}"},`+
		`{"type":"message","id":"m","role":"assistant","content":[]}]`)
	assert.Equal(t, []toolset.ToolCall{{ID: "call_1", Name: "lookup", Args: json.RawMessage(`{}`)}}, openaitools.ResponseCalls(items))
}

// MapArgs has a free-form map, which strict mode cannot express.
type MapArgs struct {
	Labels map[string]string `json:"labels"`
}

func TestStrictRefusesNamingToolAndKeyword(t *testing.T) {
	tools := build(t,
		toolset.NewTool("label", "Label things.", func(context.Context, MapArgs) (string, error) { return "", nil }),
		toolset.NewRawTool("raw", "Raw.", nil, func(context.Context, json.RawMessage) (any, error) { return nil, nil }),
	)
	_, err := openaitools.ChatTools(tools, openaitools.WithStrict())
	var se *openaitools.StrictError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "label", se.Tool)
	assert.Equal(t, "additionalProperties", se.Keyword)
	assert.EqualError(t, err, `openaitools: tool "label" cannot use strict mode: keyword "additionalProperties" at /properties/labels: a map with free-form keys cannot be expressed; strict mode objects have a fixed set of properties`)

	_, err = openaitools.ResponseTools(tools, openaitools.WithStrict())
	require.ErrorAs(t, err, &se)

	// Without strict mode the same tools are sent as they are.
	params, err := openaitools.ChatTools(tools)
	require.NoError(t, err)
	assert.Len(t, params, 2)
}

func TestToolsOfAnEmptyTurn(t *testing.T) {
	params, err := openaitools.ChatTools(nil)
	require.NoError(t, err)
	assert.Empty(t, params)
	rparams, err := openaitools.ResponseTools(build(t))
	require.NoError(t, err)
	assert.Empty(t, rparams)
}
