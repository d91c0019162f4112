package geminitools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/geminitools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"
)

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

func noop(name string) toolset.Tool {
	return toolset.NewTool(name, "Does nothing.", func(context.Context, struct{}) (string, error) { return "done", nil })
}

func TestToolsNameRule(t *testing.T) {
	// Names other providers accept but Gemini does not: a leading digit or
	// dash. Every one is reported.
	_, err := geminitools.Tools(build(t, noop("3d_render"), noop("ok_tool"), noop("-flag")))
	var ne *geminitools.NameError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "3d_render", ne.Tool)
	assert.EqualError(t, err, "geminitools: tool name \"3d_render\" is not valid for Gemini: must start with a letter or '_', not '3'\n"+
		"geminitools: tool name \"-flag\" is not valid for Gemini: must start with a letter or '_', not '-'")

	decls, err := geminitools.Tools(build(t, noop("_private"), noop("v2-search")))
	require.NoError(t, err)
	require.Len(t, decls, 1)
	assert.Len(t, decls[0].FunctionDeclarations, 2)
}

func TestToolsOfAnEmptyTurn(t *testing.T) {
	decls, err := geminitools.Tools(build(t))
	require.NoError(t, err)
	assert.Nil(t, decls, "no tools means no genai.Tool, which the API would refuse empty")
}

func TestResponsePart(t *testing.T) {
	call := toolset.ToolCall{ID: "c1", Name: "lookup"}
	tests := []struct {
		name   string
		result any
		err    error
		want   string
	}{
		{"string", "22°C", nil, `{"functionResponse":{"id":"c1","name":"lookup","response":{"output":"22°C"}}}`},
		{"structured", map[string]any{"temp": 22, "unit": "C"}, nil, `{"functionResponse":{"id":"c1","name":"lookup","response":{"output":{"temp":22,"unit":"C"}}}}`},
		{"nil", nil, nil, `{"functionResponse":{"id":"c1","name":"lookup","response":{"output":null}}}`},
		{"model error", nil, toolset.NewModelError("give a city name"), `{"functionResponse":{"id":"c1","name":"lookup","response":{"error":"give a city name"}}}`},
		{"media", &toolset.Content{Parts: []toolset.Part{
			{Text: "The map:"},
			{MIMEType: "image/png", Data: []byte{1, 2}},
			{MIMEType: "application/pdf", URI: "gs://bucket/r.pdf"},
			{MIMEType: "audio/wav", Data: []byte{1}},
		}}, nil, `{"functionResponse":{"id":"c1","name":"lookup","response":{"output":"The map:\n[audio/wav, 1 bytes]"},"parts":[` +
			`{"inlineData":{"mimeType":"image/png","data":"AQI="}},{"fileData":{"fileUri":"gs://bucket/r.pdf","mimeType":"application/pdf"}}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := geminitools.ResponsePart(call, tt.result, tt.err)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, marshal(t, p))
		})
	}
	_, err := geminitools.ResponsePart(call, nil, errors.New("disk full"))
	assert.EqualError(t, err, `geminitools: tool call c1 of "lookup": disk full`)
}

func TestRunCalls(t *testing.T) {
	tools := build(t, noop("ping"), toolset.NewTool("lookup", "Look up.", func(context.Context, struct{}) (string, error) {
		return "", errors.New("connection refused")
	}))
	out, err := geminitools.RunCalls(t.Context(), tools, nil)
	require.NoError(t, err)
	assert.Nil(t, out, "no content, no calls")

	text := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{genai.NewPartFromText("All done.")}}
	out, err = geminitools.RunCalls(t.Context(), tools, text)
	require.NoError(t, err)
	assert.Nil(t, out, "a text answer has no calls")

	// Gemini API calls may come without IDs; the responses follow call order.
	calls := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		genai.NewPartFromText("Checking."),
		genai.NewPartFromFunctionCall("ping", nil),
		genai.NewPartFromFunctionCall("ping", map[string]any{"extra": 1}),
	}}
	out, err = geminitools.RunCalls(t.Context(), tools, calls)
	require.NoError(t, err)
	require.Len(t, out.Parts, 2)
	assert.Equal(t, genai.RoleUser, out.Role)
	assert.Equal(t, map[string]any{"output": "done"}, out.Parts[0].FunctionResponse.Response)
	assert.Contains(t, out.Parts[1].FunctionResponse.Response["error"], `"extra": unknown field`)

	fail := &genai.Content{Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "c9", Name: "lookup"}}}}
	_, err = geminitools.RunCalls(t.Context(), tools, fail)
	assert.EqualError(t, err, `geminitools: tool call c9 of "lookup": toolset: tool "lookup": connection refused`)
	var ce *geminitools.CallError
	assert.ErrorAs(t, err, &ce)

	_, err = geminitools.RunCalls(t.Context(), tools, calls, geminitools.WithMaxConcurrency(0))
	assert.EqualError(t, err, "geminitools: concurrency limit must be at least 1, got 0")
}
