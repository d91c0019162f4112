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
