package schema

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type reflectArgs struct {
	City string    `json:"city" jsonschema:"City name, e.g. Paris"`
	Days int       `json:"days,omitempty" jsonschema:"minimum=1,maximum=14"`
	When time.Time `json:"when,omitzero"`
	Skip string    `json:"-"`
}

// A reflected parameter schema is inline, closed, takes plain-prose tags
// as descriptions, and carries neither $schema nor $id.
func TestReflectParameters(t *testing.T) {
	s, err := ReflectParameters(reflect.TypeFor[reflectArgs]())
	require.NoError(t, err)
	b, err := Marshal(s)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, false, doc["additionalProperties"])
	assert.NotContains(t, doc, "$schema")
	assert.NotContains(t, doc, "$id")
	props := doc["properties"].(map[string]any)
	assert.Equal(t, "City name, e.g. Paris", props["city"].(map[string]any)["description"])
	assert.NotContains(t, props, "Skip")
	assert.NoError(t, CheckRefs(s))
}

type recursiveArgs struct {
	Next *recursiveArgs `json:"next"`
}

type selfDecoding struct{}

func (*selfDecoding) UnmarshalJSON([]byte) error { return nil }

func TestReflectRefusesWhatCannotBeInline(t *testing.T) {
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[int]():                      "is not a struct",
		reflect.TypeFor[recursiveArgs]():            "is recursive",
		reflect.TypeFor[struct{ C chan int }]():     "has no JSON form",
		reflect.TypeFor[struct{ D selfDecoding }](): "decodes itself from JSON",
		reflect.TypeFor[struct {
			F func() `json:"f"`
		}](): "has no JSON form",
		reflect.TypeFor[struct {
			X complex128 `json:"x"`
		}](): "has no JSON form",
	} {
		_, err := ReflectParameters(typ)
		require.Error(t, err, typ.String())
		assert.Contains(t, err.Error(), want, typ.String())
	}
	assert.Nil(t, ReflectResult(reflect.TypeFor[any]()))
	assert.Nil(t, ReflectResult(reflect.TypeFor[recursiveArgs]()))
	assert.NotNil(t, ReflectResult(reflect.TypeFor[reflectArgs]()))
}
