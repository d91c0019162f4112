package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun runs the demo and checks the tree it prints: the turn, and its
// two calls under it, the first a cache miss with its progress and the
// second a hit.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out, false))
	text := out.String()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	require.True(t, strings.HasPrefix(lines[0], "build_tools assistant ("), lines[0])
	assert.Contains(t, text, "\n    toolset.turn.tools = 1\n")
	var calls []int
	for i, l := range lines {
		if strings.HasPrefix(l, "├─ execute_tool weather_forecast") || strings.HasPrefix(l, "└─ execute_tool weather_forecast") {
			calls = append(calls, i)
		}
	}
	require.Len(t, calls, 2, text)
	first := strings.Join(lines[calls[0]:calls[1]], "\n")
	second := strings.Join(lines[calls[1]:], "\n")
	assert.Contains(t, first, "│      toolset.cache.result = miss")
	assert.Contains(t, first, "│      event toolset.progress: toolset.progress.message=asking the weather service")
	assert.Contains(t, first, `toolset.tool.path = Prefixed#0 "weather"`)
	assert.Contains(t, second, "       toolset.cache.result = hit")
	assert.Contains(t, first+second, "toolset.tool.original_name = forecast")
	assert.NotContains(t, text, "Paris", "no arguments or results without opt-in")
}

// With -json, the spans are the SDK exporter's JSON: the turn, and its
// two calls as its children.
func TestRunJSON(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out, true))
	type span struct {
		Name        string
		SpanContext struct{ SpanID string }
		Parent      struct{ SpanID string }
	}
	var spans []span
	dec := json.NewDecoder(strings.NewReader(out.String()))
	for dec.More() {
		var s span
		require.NoError(t, dec.Decode(&s))
		spans = append(spans, s)
	}
	require.Len(t, spans, 3)
	assert.Equal(t, "build_tools assistant", spans[0].Name)
	for _, c := range spans[1:] {
		assert.Equal(t, "execute_tool weather_forecast", c.Name)
		assert.Equal(t, spans[0].SpanContext.SpanID, c.Parent.SpanID)
	}
}
