package schema

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compiled compiles a schema document through the engine's front door.
func compiled(t *testing.T, doc string) (*Validator, error) {
	t.Helper()
	s, err := Parse([]byte(doc))
	require.NoError(t, err)
	v := NewValidator(s)
	return v, v.Compile()
}

// Twenty levels of a part applied twice cost a million evaluations of one
// value: the schema is refused when compiled.
func TestSharedPartsBeyondTheBoundAreRefused(t *testing.T) {
	defs := map[string]any{}
	for i := range 20 {
		next := map[string]any{"$ref": "#/$defs/d" + itoa(i+1)}
		defs["d"+itoa(i)] = map[string]any{"allOf": []any{next, next}}
	}
	defs["d20"] = map[string]any{"type": "object"}
	b, err := json.Marshal(map[string]any{"$ref": "#/$defs/d0", "$defs": defs})
	require.NoError(t, err)
	_, err = compiled(t, string(b))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "applies more than 10000 subschemas to one value")
}

// A recursive schema that reaches itself twice per level is compiled,
// and arguments nested deep enough to cost more than the budget are
// refused before the validator runs.
func TestArgumentsOverTheBudgetAreRefused(t *testing.T) {
	v, err := compiled(t, `{"anyOf":[{"type":"array","items":{"$ref":"#"}},{"type":"array","items":{"$ref":"#"}},{"type":"integer"}]}`)
	require.NoError(t, err)
	problems, err := v.Check([]byte(`[[[1]]]`))
	require.NoError(t, err)
	assert.Empty(t, problems)
	deep := strings.Repeat("[", 40) + "1" + strings.Repeat("]", 40)
	problems, err = v.Check([]byte(deep))
	require.NoError(t, err)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Message, "would take too long to validate")
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// A string is matched against every pattern applied to it, through anyOf,
// allOf and references: the work is the sum of their sizes per byte, and a
// string too long for that sum is refused before any pattern runs, on the
// fast path and the full one alike, in well under a second.
func TestPatternsAppliedToOneStringAreCountedTogether(t *testing.T) {
	branch := `{"pattern":"(a|b|c|d|e|f|g|h)*[ab]{600}c0"}`
	for _, applicator := range []string{"anyOf", "allOf", "oneOf"} {
		t.Run(applicator, func(t *testing.T) {
			doc := `{"type":"object","properties":{"s":{"type":"string","` + applicator + `":[` + strings.TrimSuffix(strings.Repeat(branch+",", 400), ",") + `]}}}`
			s, err := Parse([]byte(doc))
			require.NoError(t, err)
			v := NewValidator(s)
			require.NoError(t, v.Compile())
			args := []byte(`{"s":"` + strings.Repeat("ab", 1600) + `"}`)
			start := time.Now()
			problems, err := v.Check(args)
			require.NoError(t, err)
			require.NotEmpty(t, problems)
			assert.Contains(t, problems[0].Message, "too long for this tool's schema to check against its patterns")
			assert.Less(t, time.Since(start), time.Second)
		})
	}
	// One such pattern alone still matches strings of this length.
	s, err := Parse([]byte(`{"type":"object","properties":{"s":{"type":"string","anyOf":[` + branch + `]}}}`))
	require.NoError(t, err)
	v := NewValidator(s)
	require.NoError(t, v.Compile())
	problems, err := v.Check([]byte(`{"s":"` + strings.Repeat("ab", 1600) + `"}`))
	require.NoError(t, err)
	for _, p := range problems {
		assert.NotContains(t, p.Message, "too long", "one pattern's work is affordable")
	}
}
