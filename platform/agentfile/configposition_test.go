package agentfile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/platform/agentfile"
)

// ConfigPosition says where a value is set, in either shape, so that a
// platform can find it in the file's text.
func TestConfigPosition(t *testing.T) {
	f, err := agentfile.Parse([]byte(`name: a
toolsets:
  - package: fin
    config: {region: eu}
    tools:
      quote: {currency: EUR}
  - weather
toolsetConfigs:
  - toolset: weather
    configValues:
      forecast:
        units: metric
`), "a.yaml")
	require.NoError(t, err)
	p, ok := f.Toolsets[0].ConfigPosition("", "region")
	assert.True(t, ok)
	assert.Equal(t, agentfile.Position{Line: 4, Column: 14}, p)
	p, ok = f.Toolsets[0].ConfigPosition("quote", "currency")
	assert.True(t, ok)
	assert.Equal(t, agentfile.Position{Line: 6, Column: 15}, p)
	p, ok = f.Toolsets[1].ConfigPosition("forecast", "units")
	assert.True(t, ok)
	assert.Equal(t, agentfile.Position{Line: 12, Column: 9}, p)
	_, ok = f.Toolsets[0].ConfigPosition("quote", "nothing")
	assert.False(t, ok)
	_, ok = (&agentfile.Entry{}).ConfigPosition("", "region")
	assert.False(t, ok, "an entry not parsed")
}
