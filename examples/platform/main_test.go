package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestRun runs the demo and checks what it shows: discovery ready, the
// secret redacted, the agent's forecast in its own units, the re-upload
// refused while the agent uses the package and accepted with force, and
// the agent's next turn on version 2.
func TestRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out strings.Builder
	require.NoError(t, run(&out))
	got := out.String()
	t.Log(got)

	assert.Regexp(t, `open http://127\.0\.0\.1:\d+/ and log in with the token\n`, got)
	assert.Contains(t, got, "PUT /toolsets/weather/package: 202 Accepted\n  version 1: pending\n")
	assert.Contains(t, got, "  toolset weather: ready, serving version 1, used by []\n"+
		"  tool forecast: Get a (made-up) weather forecast for a city.\n")
	assert.Contains(t, got, "  api_key=<REDACTED> units=metric\n")
	assert.NotContains(t, got, "sk-example")
	assert.Contains(t, got, "PUT /agents/forecaster: 201 Created\n")

	const result = "call weather__forecast {\"city\": \"Paris\", \"days\": 2}\n" +
		"result: 2-day forecast for Paris\n" +
		"{\"city\":\"Paris\",\"days\":[\"day 1: 70°F, sunny\",\"day 2: 71°F, sunny\"]}\n"
	first := between(t, got, "\n5. ", "\n6. ")
	assert.Contains(t, first, "tool weather__forecast of package version 1\n"+result)

	reupload := between(t, got, "\n6. ", "\n7. ")
	assert.Contains(t, reupload, "PUT /toolsets/weather/package: 409 Conflict\n"+
		"  PackageInUse: toolset \"weather\" is used by the agents forecaster; upload with ?force=true to change it for all of them\n"+
		"PUT /toolsets/weather/package?force=true: 202 Accepted\n  version 2: pending\n"+
		"  toolset weather: ready, serving version 2, used by [forecaster]\n")

	next := between(t, got, "\n7. ", "")
	assert.Contains(t, next, "tool weather__forecast of package version 2\n"+result)
}

// between returns the part of s from start up to end, or to the end of s
// when end is "".
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, start)
	require.True(t, ok, "no %q in:\n%s", start, s)
	if end == "" {
		return rest
	}
	part, _, ok := strings.Cut(rest, end)
	require.True(t, ok, "no %q in:\n%s", end, s)
	return part
}
