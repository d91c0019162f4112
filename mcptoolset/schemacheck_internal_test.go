package mcptoolset

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
)

// A toolset made without WithListLimits, or with zero fields, has the
// documented defaults; a field set is kept.
func TestListLimitsDefaults(t *testing.T) {
	dial := func(context.Context) (mcp.Transport, error) { return nil, nil }
	want := ListLimits{
		MaxTools:            DefaultMaxTools,
		MaxListBytes:        DefaultMaxListBytes,
		MaxSchemaBytes:      DefaultMaxSchemaBytes,
		MaxSchemaDepth:      DefaultMaxSchemaDepth,
		MaxDescriptionBytes: DefaultMaxDescriptionBytes,
	}
	assert.Equal(t, want, NewTransport("a", dial).c.cfg.limits)
	assert.Equal(t, want, NewTransport("a", dial, WithListLimits(ListLimits{})).c.cfg.limits)
	assert.Equal(t, 16<<20, want.MaxListBytes, "as the documentation says")
	set := want
	set.MaxListBytes = 1 << 20
	assert.Equal(t, set, NewTransport("a", dial, WithListLimits(ListLimits{MaxListBytes: 1 << 20})).c.cfg.limits)
}
