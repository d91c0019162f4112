package anthropictools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/anthropictools"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func content(t *testing.T, blocks string) []anthropic.ContentBlockUnion {
	t.Helper()
	var msg anthropic.Message
	require.NoError(t, json.Unmarshal([]byte(`{"id":"m","content":`+blocks+`}`), &msg))
	return msg.Content
}

func TestResultBlockMedia(t *testing.T) {
	c := &toolset.Content{Parts: []toolset.Part{
		{Text: "Page 1 of the report, and its chart:"},
		{MIMEType: "application/pdf", Data: []byte("%PDF")},
		{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
		{MIMEType: "image/webp", URI: "https://example.com/c.webp"},
		{MIMEType: "image/tiff", Data: []byte{1}},
	}}
	b, err := anthropictools.ResultBlock(toolset.ToolCall{ID: "toolu_1", Name: "report"}, c, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"tool_result","tool_use_id":"toolu_1","content":[`+
		`{"type":"text","text":"Page 1 of the report, and its chart:"},`+
		`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERg=="}},`+
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}},`+
		`{"type":"image","source":{"type":"url","url":"https://example.com/c.webp"}},`+
		`{"type":"text","text":"[image/tiff, 1 bytes]"}]}`, marshal(t, b))
}

func TestResultBlockText(t *testing.T) {
	call := toolset.ToolCall{ID: "toolu_1", Name: "lookup"}
	tests := []struct {
		name   string
		result any
		err    error
		want   string
	}{
		{"value as JSON", []int{1, 2}, nil, `{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"[1,2]"}]}`},
		{"empty text sends no block", "", nil, `{"type":"tool_result","tool_use_id":"toolu_1"}`},
		{"model error", nil, toolset.NewModelError("ask for fewer rows"), `{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"ask for fewer rows"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := anthropictools.ResultBlock(call, tt.result, tt.err)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, marshal(t, b))
		})
	}
	_, err := anthropictools.ResultBlock(call, nil, errors.New("disk full"))
	assert.EqualError(t, err, `anthropictools: tool call toolu_1 of "lookup": disk full`)
}

func TestRunCallsStopsTheRun(t *testing.T) {
	tools := build(t, toolset.NewTool("lookup", "Look up.", func(context.Context, struct{}) (string, error) {
		return "", errors.New("connection refused")
	}))
	blocks := content(t, `[{"type":"tool_use","id":"toolu_1","name":"lookup","input":{}}]`)
	out, err := anthropictools.RunCalls(t.Context(), tools, blocks)
	assert.Nil(t, out)
	assert.EqualError(t, err, `anthropictools: tool call toolu_1 of "lookup": toolset: tool "lookup": connection refused`)
	var ce *anthropictools.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "toolu_1", ce.Call.ID)

	_, err = anthropictools.RunCalls(t.Context(), tools, blocks, anthropictools.WithMaxConcurrency(-1))
	assert.EqualError(t, err, "anthropictools: concurrency limit must be at least 1, got -1")
}

func TestCallsSkipsOtherBlocks(t *testing.T) {
	blocks := content(t, `[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"ok"},`+
		`{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"q":1}}]`)
	assert.Equal(t, []toolset.ToolCall{{ID: "toolu_1", Name: "lookup", Args: json.RawMessage(`{"q":1}`)}}, anthropictools.Calls(blocks))
}

func TestToolsSchemas(t *testing.T) {
	defs := &jsonschema.Schema{
		Type:        "object",
		Properties:  jsonschema.NewProperties(),
		Definitions: jsonschema.Definitions{"Point": {Type: "object"}},
	}
	defs.Properties.Set("p", &jsonschema.Schema{Ref: "#/$defs/Point"})
	noop := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	tools := build(t,
		toolset.NewRawTool("plot", "", defs, noop),
		toolset.NewRawTool("bare", "Takes nothing.", nil, noop),
	)
	params, err := anthropictools.Tools(tools)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"name":"plot","input_schema":{"type":"object","properties":{"p":{"$ref":"#/$defs/Point"}},"$defs":{"Point":{"type":"object"}}}},`+
		`{"name":"bare","description":"Takes nothing.","input_schema":{"type":"object","properties":{},"additionalProperties":false}}]`, marshal(t, params))

	str := toolset.NewRawTool("echo", "Echo.", &jsonschema.Schema{Type: "string"}, noop)
	_, err = anthropictools.Tools(build(t, str))
	assert.EqualError(t, err, `anthropictools: tool "echo": the input schema must have type "object", not "string"`)
}
