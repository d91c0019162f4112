package toolset_test

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFunctionDuplicateNames(t *testing.T) {
	f := toolset.NewFunction(echoTool("a"), echoTool("b"), echoTool("a"))
	_, err := f.GetTools(context.Background())
	require.EqualError(t, err, `toolset: Function: tools[0] and tools[2] are both named "a"`)
}

func TestFunctionOrderAndCopy(t *testing.T) {
	f := toolset.NewFunction(echoTools("c", "a", "b")...)
	ctx := context.Background()
	assert.Equal(t, []string{"c", "a", "b"}, names(t, ctx, f))
	tools, err := f.GetTools(ctx)
	require.NoError(t, err)
	tools[0].Name = "mutated"
	assert.Equal(t, []string{"c", "a", "b"}, names(t, ctx, f), "GetTools returns a copy the caller owns")
}
