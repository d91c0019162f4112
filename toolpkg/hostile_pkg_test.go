package toolpkg

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// aliasBomb is a small manifest whose tools all alias one map of many
// unknown keys: walked naively, each use of the alias repeats every
// problem of the map.
func aliasBomb(keys, uses int) string {
	var b strings.Builder
	b.WriteString("version: 1\nx: &a {")
	for i := range keys {
		fmt.Fprintf(&b, "k%d: 1, ", i)
	}
	b.WriteString("}\ntools:\n")
	for i := range uses {
		fmt.Fprintf(&b, "  t%d: *a\n", i)
	}
	return b.String()
}

func TestManifestAliasBombIsBounded(t *testing.T) {
	m := aliasBomb(2000, 2000) // 42 KB
	start := time.Now()
	_, err := ParseManifest([]byte(m))
	elapsed := time.Since(start)
	require.Error(t, err)
	require.Less(t, len(err.Error()), 64<<10, "the error of a %d-byte manifest", len(m))
	require.Less(t, elapsed, 2*time.Second)
	require.Contains(t, err.Error(), "more problems")
}

func TestManifestLongValuesAreNotQuotedWhole(t *testing.T) {
	long := strings.Repeat("A", 500000)
	for name, m := range map[string]string{
		"string value":    "version: 1\ntools:\n  x: \"" + long + "\"\n",
		"runtime":         "version: 1\ntools:\n  x: {runtime: \"" + long + "\", executable: x}\n",
		"profile":         "version: 1\ntools:\n  x: {runtime: go, executable: x, sandbox_profile: \"" + long + "\"}\n",
		"unknown key":     "version: 1\ntools:\n  x:\n    runtime: go\n    executable: x\n    ? " + long + "\n    : 1\n",
		"tools key":       "version: 1\ntools:\n  ? " + long + "\n  : {runtime: go, executable: x}\n",
		"executable path": "version: 1\ntools:\n  x: {runtime: go, executable: \"a/../" + long + "\"}\n",
		"float":           "version: 1.5" + strings.Repeat("1", 500000) + "\ntools: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseManifest([]byte(m))
			require.Error(t, err)
			require.Less(t, len(err.Error()), 2048, "%.300s", err)
		})
	}
}

func TestSchemaOutputOfHostileSizeIsBounded(t *testing.T) {
	ex := Executable{Key: "demo", TimeoutSeconds: 5}
	var many strings.Builder
	many.WriteString(`{"tools":{`)
	for i := range MaxTools + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"t%d":{"description":"x"}`, i)
	}
	many.WriteString("}}")
	long := strings.Repeat("n", 1<<20)
	var invalid strings.Builder
	invalid.WriteString(`{"tools":{`)
	for i := range 900 {
		if i > 0 {
			invalid.WriteString(",")
		}
		fmt.Fprintf(&invalid, `"t%d":{}`, i)
	}
	invalid.WriteString("}}")
	for name, out := range map[string]string{
		"too many tools":   many.String(),
		"long name":        `{"tools":{"` + long + `":{"description":"x"}}}`,
		"long name twice":  `{"tools":{"` + long + `":{"description":"x"},"` + long + `":{}}}`,
		"long description": `{"tools":{"a":{"description":"` + long + `"}}}`,
		"long config key":  `{"tools":{"a":{"description":"x","config_schema":[{"key":"` + long + `","type":"` + long + `"}]}}}`,
		"long timeout":     `{"tools":{"a":{"description":"x","timeout_seconds":1` + strings.Repeat("0", 1<<20) + `}}}`,
		"long property":    `{"tools":{"a":{"description":"x","parameters":{"type":"object","properties":{"` + long + `":{"type":"nope"}}}}}}`,
		"many bad tools":   invalid.String(),
	} {
		t.Run(name, func(t *testing.T) {
			tools, probs := parseSchemaOutput(ex, []byte(out))
			require.Empty(t, tools)
			require.NotEmpty(t, probs)
			probs = capProblems(probs)
			total := 0
			for _, p := range probs {
				total += len(p)
			}
			require.Less(t, total, 64<<10, "%.300s", probs[0])
		})
	}
}
