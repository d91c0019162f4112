package toolpkg

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzStoredConfig feeds config.json files to the decoder and the checks
// SetConfig runs: no panic, the bounds hold, and no secret value is in
// what Config would show or in a problem.
func FuzzStoredConfig(f *testing.F) {
	for _, seed := range []string{
		`{"greeting":"hi","retries":3}`,
		`{"api_key":"sk-secret-value","auth":{"oauth_token":"tok-secret","headers":{"X-A":"b"}}}`,
		`{"hil":"perhaps","required_scopes":["a",1],"retries":"many","api_key":12345678}`,
		`{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}}`,
		`{"x":1} {"y":2}`,
		`[1,2]`,
	} {
		f.Add([]byte(seed))
	}
	tools := []ToolInfo{{Name: "echo", Config: []ConfigField{
		{Key: "greeting", Type: "string"}, {Key: "api_key", Type: "string", Secret: true},
		{Key: "retries", Type: "integer"}, {Key: "verbose", Type: "boolean"},
	}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := decodeStoredConfig(data)
		if err != nil {
			return
		}
		if d := depth(cfg, MaxStoredConfigDepth+1); d > MaxStoredConfigDepth {
			t.Fatalf("depth %d passed", d)
		}
		// The same configuration with another secret: what shows the
		// secret beyond what shows there came from it.
		other := make(map[string]any, len(cfg))
		for k, v := range cfg {
			other[k] = v
		}
		var secret string
		switch v := cfg["api_key"].(type) {
		case string:
			secret, other["api_key"] = v, "\x00placeholder"
		case json.Number:
			secret, other["api_key"] = v.String(), json.Number("0")
		}
		if len(secret) < 3 {
			secret = ""
		}
		shown := func(c map[string]any) string {
			b, _ := json.Marshal(redactStored(c, map[string]bool{"api_key": true, "auth": true}, true, nil))
			return string(b) + strings.Join(checkStoredConfig(tools, c, nil), "\n")
		}
		got, base := shown(cfg), shown(other)
		if secret != "" && strings.Count(got, secret) > strings.Count(base, secret) {
			t.Fatalf("the secret %q shows in %s", secret, got)
		}
	})
}
