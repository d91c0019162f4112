package toolset_test

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRequiredEnv(t *testing.T) {
	weather := toolset.NewTool("weather", "", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithRequiredEnv("TOOLSET_TEST_WEATHER_KEY", "TOOLSET_TEST_REGION"))
	maps := toolset.NewTool("maps", "", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithRequiredEnv("TOOLSET_TEST_MAPS_KEY"),
		toolset.WithMetadata(map[string]string{"audience": "admin"}))
	t.Setenv("TOOLSET_TEST_REGION", "eu")
	t.Setenv("TOOLSET_TEST_MAPS_KEY", "")
	entries := []toolset.Toolset{toolset.NewFunction(weather).Prefixed("w"), toolset.NewFunction(maps).Filtered(adminsOnly)}

	_, err := toolset.BuildTools(withRole(t, "admin"), "a", entries...)
	var ee *toolset.EnvError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, []toolset.MissingEnv{{Tool: "w_weather", Var: "TOOLSET_TEST_WEATHER_KEY"}, {Tool: "maps", Var: "TOOLSET_TEST_MAPS_KEY"}}, ee.Missing)
	assert.Equal(t, "toolset: missing or empty environment variables:\n"+
		"  - TOOLSET_TEST_WEATHER_KEY (needed by tool \"w_weather\")\n"+
		"  - TOOLSET_TEST_MAPS_KEY (needed by tool \"maps\")", err.Error())

	t.Setenv("TOOLSET_TEST_WEATHER_KEY", "k")
	_, err = toolset.BuildTools(withRole(t, "guest"), "a", entries...)
	require.NoError(t, err, "the hidden tool's variables do not matter this turn")
	err = toolset.Validate(withRole(t, "guest"), entries...)
	require.ErrorAs(t, err, &ee, "Validate checks every tool")
	assert.Equal(t, []toolset.MissingEnv{{Tool: "maps", Var: "TOOLSET_TEST_MAPS_KEY"}}, ee.Missing)

	t.Setenv("TOOLSET_TEST_MAPS_KEY", "k")
	require.NoError(t, toolset.Validate(context.Background(), entries...))
	require.Error(t, toolset.Validate(context.Background(), entries[0], entries[0]), "Validate reports conflicts")
}
