package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun runs the demo and checks the spans it prints: the turn, and its
// two calls as its children, the first a cache miss and the second a hit.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))
	type span struct {
		Name        string
		SpanContext struct{ SpanID string }
		Parent      struct{ SpanID string }
		Attributes  []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	var spans []span
	dec := json.NewDecoder(strings.NewReader(out.String()))
	for dec.More() {
		var s span
		require.NoError(t, dec.Decode(&s))
		spans = append(spans, s)
	}
	require.Len(t, spans, 3)
	attr := func(s span, key string) any {
		for _, a := range s.Attributes {
			if a.Key == key {
				return a.Value.Value
			}
		}
		return nil
	}
	turn := spans[0]
	assert.Equal(t, "build_tools assistant", turn.Name)
	assert.EqualValues(t, 1, attr(turn, "toolset.turn.tools"))
	for i, cache := range []string{"miss", "hit"} {
		c := spans[1+i]
		assert.Equal(t, "execute_tool weather_forecast", c.Name)
		assert.Equal(t, turn.SpanContext.SpanID, c.Parent.SpanID)
		assert.Equal(t, "execute_tool", attr(c, "gen_ai.operation.name"))
		assert.Equal(t, "forecast", attr(c, "toolset.tool.original_name"))
		assert.Equal(t, cache, attr(c, "toolset.cache.result"))
	}
	assert.Contains(t, out.String(), "asking the weather service")
	assert.NotContains(t, out.String(), "Paris", "no arguments or results without opt-in")
}
