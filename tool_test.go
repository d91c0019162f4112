package toolset_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRawTool(t *testing.T) {
	var schema jsonschema.Schema
	require.NoError(t, json.Unmarshal([]byte(`{"type":"object","properties":{"q":{"type":"string","minLength":2}},"required":["q"],"additionalProperties":false}`), &schema))
	tool := toolset.NewRawTool("search", "Search.", &schema, func(_ context.Context, args json.RawMessage) (any, error) {
		return string(args), nil
	}, toolset.WithMetadata(map[string]string{"source": "test"}))
	got, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"q":"go"}`)})
	require.NoError(t, err)
	assert.Equal(t, `{"q":"go"}`, got)
	assert.Equal(t, "test", tool.Metadata["source"])

	_, err = tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"q":"g"}`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, []toolset.ArgumentProblem{{Field: "q", Message: "must be at least 2 characters long; got 1"}}, ae.Problems)

	noArgs := toolset.NewRawTool("now", "", nil, func(context.Context, json.RawMessage) (any, error) { return "noon", nil })
	assert.JSONEq(t, `{"type":"object","properties":{},"additionalProperties":false}`, schemaJSON(t, noArgs))
}

// TestToolIsAValue checks what Tool's doc promises: an edited copy is the
// same tool and runs the same code, a tool made again is another, the
// schema a copy is given is the one sent and enforced, and WithReturns
// sets the result schema a model is shown.
func TestToolIsAValue(t *testing.T) {
	ctx := context.Background()
	var result jsonschema.Schema
	require.NoError(t, json.Unmarshal([]byte(`{"type":"string","enum":["pong"]}`), &result))
	ping := toolset.NewTool("ping", "Ping.", func(context.Context, struct{}) (string, error) { return "pong", nil }, toolset.WithReturns(&result))
	assert.Same(t, &result, ping.Returns, "WithReturns replaces the reflected result schema")
	raw := toolset.NewRawTool("now", "", nil, func(context.Context, json.RawMessage) (any, error) { return "noon", nil }, toolset.WithReturns(&result))
	assert.Same(t, &result, raw.Returns)

	edited := ping
	edited.Name, edited.Description = "ping2", "Ping, edited."
	assert.True(t, edited.Same(ping), "a renamed, edited copy is the same tool")
	got, err := edited.Execute(ctx, toolset.ToolCall{Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "pong", got)
	assert.Equal(t, "Ping.", ping.Description, "the original is untouched")
	again := toolset.NewTool("ping", "Ping.", func(context.Context, struct{}) (string, error) { return "pong", nil })
	assert.False(t, again.Same(ping), "a tool made again with the same name is another tool")
	assert.False(t, toolset.Tool{}.Same(toolset.Tool{}), "tools made without NewTool are no tool")

	var narrowed jsonschema.Schema
	require.NoError(t, json.Unmarshal([]byte(`{"type":"object","properties":{"n":{"type":"integer","maximum":3}},"required":["n"],"additionalProperties":false}`), &narrowed))
	echo := toolset.NewRawTool("echo", "", nil, func(_ context.Context, args json.RawMessage) (any, error) { return string(args), nil })
	strict := echo
	strict.Parameters = &narrowed
	assert.JSONEq(t, `{"type":"object","properties":{"n":{"type":"integer","maximum":3}},"required":["n"],"additionalProperties":false}`, schemaJSON(t, strict))
	assert.JSONEq(t, `{"type":"object","properties":{},"additionalProperties":false}`, schemaJSON(t, echo), "the original keeps its schema")
	_, err = strict.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"n":4}`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae, "the schema sent is the schema enforced")

	one, err := ping.GetTools(ctx)
	require.NoError(t, err)
	require.Len(t, one, 1, "a Tool is a Toolset of one")
	assert.True(t, one[0].Same(ping))
}
