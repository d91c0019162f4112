package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A configuration key one tool of a package declares secret is secret in
// every tool inspect shows it in: another tool that declares the same key
// plainly, with a default, must not print that default, nor show the key
// as plain. Whichever tool comes first.
func TestInspectMasksAKeySecretInAnyToolEverywhere(t *testing.T) {
	const dflt = "plain-default-of-a-secret"
	for _, secretIn := range []string{"alpha", "zulu"} {
		t.Run("secret in "+secretIn, func(t *testing.T) {
			field := func(tool string) string {
				if tool == secretIn {
					return `{"key": "api_key", "type": "string", "secret": true}`
				}
				return fmt.Sprintf(`{"key": "api_key", "type": "string", "default": %q, "description": "The key."}`, dflt)
			}
			schema := fmt.Sprintf(`{"tools": {
  "alpha": {"description": "First.", "parameters": {"type": "object", "properties": {}}, "config_schema": [%s]},
  "zulu": {"description": "Last.", "parameters": {"type": "object", "properties": {}}, "config_schema": [%s]}
}}`, field("alpha"), field("zulu"))
			zip := withFile(t, packaged(t), "schema.json", []byte(schema))

			code, stdout, stderr := runCLI("inspect", "--sandbox", "direct", zip)
			require.Equal(t, 0, code, stderr)
			assert.NotContains(t, stdout, dflt, "the default of a key secret in another tool")
			assert.Equal(t, 2, strings.Count(stdout, "    api_key (string, secret)"), "the key is shown secret in both tools:\n%s", stdout)

			code, stdout, stderr = runCLI("inspect", "--json", "--sandbox", "direct", zip)
			require.Equal(t, 0, code, stderr)
			assert.NotContains(t, stdout, dflt, "the default of a key secret in another tool")
			var info struct {
				Tools []struct {
					Name   string `json:"name"`
					Config []struct {
						Key     string `json:"key"`
						Secret  bool   `json:"secret"`
						Default any    `json:"default"`
					} `json:"config_schema"`
				} `json:"tools"`
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &info), stdout)
			require.Len(t, info.Tools, 2, stdout)
			for _, tool := range info.Tools {
				require.Len(t, tool.Config, 1, "tool %s", tool.Name)
				c := tool.Config[0]
				assert.True(t, c.Secret, "tool %s: api_key is secret in tool %s", tool.Name, secretIn)
				if tool.Name != secretIn {
					assert.Equal(t, "[secret]", c.Default, "tool %s: its default is hidden", tool.Name)
				}
			}
		})
	}
}
