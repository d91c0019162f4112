package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrepared(t *testing.T) {
	ctx := context.Background()
	base := toolset.NewFunction(echoTools("a", "b", "c")...)
	edit := base.Prepared(func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
		out := []toolset.Tool{tools[2], tools[0]} // reorder, drop b
		out[0].Description = "edited"
		return out, nil
	})
	tools, err := edit.GetTools(ctx)
	require.NoError(t, err)
	require.Len(t, tools, 2)
	assert.Equal(t, "c", tools[0].Name)
	assert.Equal(t, "edited", tools[0].Description)
	assert.Equal(t, "a", tools[1].Name)
	again, _ := base.GetTools(ctx)
	assert.Equal(t, "The c tool.", again[2].Description, "the edit does not leak into the toolset")

	cases := map[string]struct {
		fn   toolset.PrepareFunc
		want string
	}{
		"add": {func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			return append(tools, echoTool("d")), nil
		}, `result[3] "d" is not one of the tools it was given`},
		"rename": {func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			tools[0].Name = "z"
			return tools, nil
		}, `result[0] "z" is not one of the tools it was given`},
		"impostor": {func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			tools[0] = echoTool("a")
			return tools, nil
		}, `result[0] "a" is a different tool`},
		"twice": {func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			return append(tools, tools[0]), nil
		}, `result lists "a" twice`},
		"error": {func(context.Context, []toolset.Tool) ([]toolset.Tool, error) {
			return nil, errors.New("nope")
		}, "toolset: Prepared: nope"},
		"nil": {nil, "nil prepare function"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := base.Prepared(c.fn).GetTools(ctx)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestPreparedEditedSchemaIsValidated(t *testing.T) {
	ctx := context.Background()
	narrowed := toolset.NewFunction(weatherTool()).Prepared(func(_ context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
		var s jsonschemaDoc
		require.NoError(t, json.Unmarshal([]byte(`{"type":"object","properties":{"city":{"type":"string","enum":["Paris"]},"days":{"type":"integer"}},"required":["city","days"],"additionalProperties":false}`), &s.Schema))
		tools[0].Parameters = &s.Schema
		return tools, nil
	})
	tools, err := toolset.BuildTools(ctx, "a", narrowed)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city":"Rome","days":2}`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae, "the schema the model saw is the one enforced")
	assert.Equal(t, `must be one of "Paris"; got "Rome"`, ae.Problems[0].Message)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","days":2}`)})
	require.NoError(t, err)
}
