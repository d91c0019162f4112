package toolset_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrefixed(t *testing.T) {
	ctx := context.Background()
	base := toolset.NewFunction(echoTools("query", "migrate")...)
	assert.Equal(t, []string{"db_query", "db_migrate"}, names(t, ctx, base.Prefixed("db")))
	assert.Equal(t, []string{"db.query", "db.migrate"}, names(t, ctx, base.Prefixed("db", toolset.WithSeparator("."))))
	assert.Equal(t, []string{"b_a_query", "b_a_migrate"}, names(t, ctx, base.Prefixed("a").Prefixed("b")))

	_, err := base.Prefixed("").GetTools(ctx)
	require.EqualError(t, err, "toolset: Prefixed: empty prefix")

	// A prefixed copy is the same tool: it runs the same code.
	tools, err := toolset.BuildTools(ctx, "a", base.Prefixed("db"))
	require.NoError(t, err)
	got, err := tools.Execute(ctx, toolset.ToolCall{Name: "db_query", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "query", got)
	orig, _ := base.GetTools(ctx)
	clone, _ := tools.Lookup("db_query")
	assert.True(t, clone.Same(orig[0]))
	assert.False(t, clone.Same(orig[1]))
}

func TestUserToolsetComposes(t *testing.T) {
	ctx := context.Background()
	mine := listToolset{tools: echoTools("x", "y")}
	assert.Equal(t, []string{"p_x", "p_y"}, names(t, ctx, toolset.NewPrefixed(mine, "p")))
	_, err := toolset.NewPrefixed(listToolset{err: errors.New("backend down")}, "p").GetTools(ctx)
	require.EqualError(t, err, "backend down")
}
