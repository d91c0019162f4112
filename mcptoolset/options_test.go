package mcptoolset_test

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The name names the label, the server metadata and the errors; a label
// replaces the whole label; a nil option is ignored.
func TestNameAndLabelOptions(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()

	named := mcptoolset.NewInMemory("files", fixture.SDKServer("files"), nil, mcptoolset.WithName("docs"))
	defer named.Close()
	assert.Equal(t, "docs", named.Name())
	assert.Equal(t, "mcp:docs", named.Label())
	tools, err := named.GetTools(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, tools)
	assert.Equal(t, "docs", tools[0].Metadata[mcptoolset.MetaServer])

	labeled := mcptoolset.NewInMemory("files", fixture.SDKServer("files"), mcptoolset.WithLabel("archive"))
	defer labeled.Close()
	assert.Equal(t, "files", labeled.Name())
	assert.Equal(t, "archive", labeled.Label())
}
