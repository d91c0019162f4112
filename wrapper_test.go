package toolset_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// beta embeds Wrapper and overrides GetTools to tag every description.
type beta struct{ toolset.Wrapper }

func (b beta) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	tools, err := b.Wrapper.GetTools(ctx)
	for i := range tools {
		tools[i].Description = "[beta] " + tools[i].Description
	}
	return tools, err
}

func descriptions(t *testing.T, ctx context.Context, ts toolset.Toolset) []string {
	t.Helper()
	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	out := make([]string, len(tools))
	for i, tool := range tools {
		out[i] = tool.Name + ": " + tool.Description
	}
	return out
}

func TestWrapperOverrideSurvivesBuilders(t *testing.T) {
	ctx := context.Background()
	tagged := beta{toolset.Wrapper{Wrapped: toolset.NewFunction(echoTools("a", "b")...)}}
	want := []string{"a: [beta] The a tool.", "b: [beta] The b tool."}
	assert.Equal(t, want, descriptions(t, ctx, tagged))
	assert.Equal(t, []string{"x_a: [beta] The a tool.", "x_b: [beta] The b tool."}, descriptions(t, ctx, toolset.NewPrefixed(tagged, "x")))
	assert.Equal(t, []string{"z: [beta] The a tool.", "b: [beta] The b tool."}, descriptions(t, ctx, toolset.NewRenamed(tagged, map[string]string{"a": "z"})))
	assert.Equal(t, append([]string{"c: The c tool."}, want...), descriptions(t, ctx, toolset.NewFunction(echoTool("c")).CombinedWith(tagged)))
	assert.Equal(t, want[1:], descriptions(t, ctx, toolset.NewFiltered(tagged, func(_ context.Context, tool toolset.Tool) (bool, error) {
		return tool.Name == "b", nil
	})))

	tools, err := toolset.BuildTools(ctx, "a", toolset.NewPrefixed(tagged, "x"))
	require.NoError(t, err)
	tool, ok := tools.Lookup("x_a")
	require.True(t, ok)
	assert.Equal(t, "[beta] The a tool.", tool.Description)
	got, err := tools.Execute(ctx, toolset.ToolCall{Name: "x_a", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "a", got)
}

// A builder promoted from an embedded Wrapper would receive the Wrapper and
// lose the override, so Wrapper has none: calling one on a type that embeds
// it does not compile.
func TestWrapperHasNoBuilders(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[beta](), reflect.TypeFor[*beta](), reflect.TypeFor[toolset.Wrapper]()} {
		for _, m := range []string{"Prefixed", "Renamed", "Filtered", "Prepared", "Guarded", "CombinedWith"} {
			_, ok := typ.MethodByName(m)
			assert.False(t, ok, "%s has method %s", typ, m)
		}
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[*toolset.Function](), reflect.TypeFor[*toolset.Prefixed](), reflect.TypeFor[*toolset.Renamed](),
		reflect.TypeFor[*toolset.Filtered](), reflect.TypeFor[*toolset.Combined](), reflect.TypeFor[*toolset.Prepared](),
		reflect.TypeFor[*toolset.Dynamic](), reflect.TypeFor[*toolset.Guarded](),
	} {
		for _, m := range []string{"Prefixed", "Renamed", "Filtered", "Prepared", "Guarded", "CombinedWith"} {
			_, ok := typ.MethodByName(m)
			assert.True(t, ok, "%s lacks builder %s", typ, m)
		}
	}
}

// labelled is a toolset with a label, instructions and resources.
type labelled struct {
	listToolset
	closed *int
}

func (labelled) Label() string { return "mcp:files" }
func (labelled) Instructions(context.Context) (string, error) {
	return "Paths are relative to the workspace.", nil
}
func (l labelled) Close() error { *l.closed++; return errors.New("already closed") }

func TestWrapperForwards(t *testing.T) {
	ctx := context.Background()
	closed := 0
	inner := labelled{listToolset: listToolset{tools: echoTools("read")}, closed: &closed}
	for _, ts := range []interface {
		toolset.Toolset
		toolset.Labeler
		toolset.InstructionsProvider
		Close() error
	}{
		toolset.Wrapper{Wrapped: inner}, &toolset.Wrapper{Wrapped: inner}, beta{toolset.Wrapper{Wrapped: inner}},
		toolset.NewPrefixed(inner, "p"), toolset.NewRenamed(inner, nil), toolset.NewFiltered(inner, adminsOnly),
		toolset.NewPrepared(inner, func(_ context.Context, t []toolset.Tool) ([]toolset.Tool, error) { return t, nil }),
	} {
		assert.Equal(t, "mcp:files", toolset.LabelOf(ts))
		got, err := ts.Instructions(ctx)
		require.NoError(t, err)
		assert.Equal(t, "Paths are relative to the workspace.", got)
		before := closed
		assert.EqualError(t, ts.Close(), "already closed")
		assert.Equal(t, before+1, closed)
	}
	assert.Equal(t, "beta", toolset.LabelOf(beta{toolset.Wrapper{Wrapped: toolset.NewFunction()}}), "no label to forward: the type name")

	var zero toolset.Wrapper
	tools, err := zero.GetTools(ctx)
	require.NoError(t, err)
	assert.Empty(t, tools)
	require.NoError(t, zero.Close())
}
