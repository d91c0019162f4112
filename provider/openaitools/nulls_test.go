package openaitools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDropNulls(t *testing.T) {
	schema := `{"type":"object","$defs":{"Stop":{"type":"object","properties":{"at":{"type":"string"},"note":{"type":"string"}},"required":["at"]}},` +
		`"properties":{"q":{"type":"string"},"limit":{"type":"integer"},"cursor":{"type":["string","null"]},"any":{},` +
		`"filter":{"type":"object","properties":{"tag":{"type":"string"}}},` +
		`"stops":{"type":"array","items":{"$ref":"#/$defs/Stop"}},` +
		`"either":{"anyOf":[{"type":"string"},{"type":"object","properties":{"k":{"type":"string"}}}]},` +
		`"nul":{"anyOf":[{"type":"string"},{"type":"null"}]},"e":{"enum":["a",null]}},"required":["q"]}`
	tests := []struct {
		name, args, want string
	}{
		{"optional nulls dropped", `{"q":"x","limit":null}`, `{"q":"x"}`},
		{"required null kept for the tool to refuse", `{"q":null}`, `{"q":null}`},
		{"nullable kept", `{"q":"x","cursor":null,"nul":null,"e":null,"any":null}`, `{"q":"x","cursor":null,"nul":null,"e":null,"any":null}`},
		{"nested object", `{"q":"x","filter":{"tag":null}}`, `{"q":"x","filter":{}}`},
		{"array items through $ref", `{"q":"x","stops":[{"at":"a","note":null},{"at":null}]}`, `{"q":"x","stops":[{"at":"a"},{"at":null}]}`},
		{"anyOf object branch", `{"q":"x","either":{"k":null}}`, `{"q":"x","either":{}}`},
		{"unknown keys left for the tool", `{"q":"x","zzz":null}`, `{"q":"x","zzz":null}`},
		{"order kept", `{"limit":null,"q":"x","filter":{"tag":"t"}}`, `{"q":"x","filter":{"tag":"t"}}`},
		{"invalid JSON unchanged", `{"q":null`, `{"q":null`},
		{"no null, no work", `{"q":"x"}`, `{"q":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := dropNulls(json.RawMessage(schema), json.RawMessage(tt.args))
			assert.Equal(t, tt.want, string(got))
		})
	}
}

// Hostile arguments are refused with an error at the offending byte, and
// left as they are.
func TestDecodeJSONHostileInput(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"too deep":  {strings.Repeat("[", maxDepth+1), "invalid JSON: nested deeper than 1000 levels at byte offset 1000"},
		"truncated": {`{"q":"x`, "invalid JSON: unexpected end of JSON input at byte offset 7"},
		"bad UTF-8 is not an error, a bad escape is": {"{\"q\":\"\xff\\q\"}", "invalid JSON: invalid character 'q' in string escape code at byte offset 8"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeJSON([]byte(tc.in))
			assert.EqualError(t, err, tc.want)
		})
	}
}
