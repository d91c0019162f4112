package schema

import (
	"encoding/json"
	"strings"
	"testing"

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
