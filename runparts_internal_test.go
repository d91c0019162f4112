package toolset

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// list names every field of runParts once, in the fields' order, so that
// a part added as a field and forgotten in list (or the reverse) is
// caught, and no two parts' keys meet, even as encoding/json matches keys
// (case-insensitively).
func TestRunPartsListEveryField(t *testing.T) {
	var p runParts
	list := p.list()
	v := reflect.ValueOf(&p).Elem()
	require.Equal(t, v.NumField(), len(list), "runParts.list lists every field of runParts")
	seen := map[string]bool{}
	for i, part := range list {
		f := v.Field(i)
		assert.Equal(t, f.Addr().UnsafePointer(), reflect.ValueOf(part).UnsafePointer(),
			"list[%d] is the field %s", i, v.Type().Field(i).Name)
		k := strings.ToLower(part.key())
		assert.NotEmpty(t, k)
		assert.False(t, seen[k], "two parts have the key %q", k)
		seen[k] = true
		for _, head := range []string{"version", "id", "step", "holder"} {
			assert.NotEqual(t, head, k, "a part's key is not one of the run's own fields")
		}
	}
}

// A section that encodes as null is left out; the others follow the
// head in the parts' order, as they are.
func TestEncodeState(t *testing.T) {
	var p runParts
	parts := p.list()[:3]
	data, err := encodeState(savedHead{Version: 1, ID: "r<"}, parts, []any{nil, []string{"a&"}, []int(nil)}, 0)
	require.NoError(t, err)
	assert.Equal(t, `{"version":1,"id":"r\u003c","step":0,"pending":["a\u0026"]}`, string(data))

	_, err = encodeState(savedHead{}, parts, []any{make(chan int), nil, nil}, 1<<10)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "approvals")
}

// A saved state decodes as encoding/json decodes a struct: keys match
// exactly or else whatever their case, the last of a key given twice
// wins, and keys that name no part are ignored. A section of the wrong
// type is left zero, the others decoded all the same, and the error
// names it.
func TestDecodeState(t *testing.T) {
	var p runParts
	parts := p.list()
	at := func(key string, sections []any) any {
		for i, part := range parts {
			if part.key() == key {
				return reflect.ValueOf(sections[i]).Elem().Interface()
			}
		}
		t.Fatalf("no part %q", key)
		return nil
	}
	head, sections, err := decodeState([]byte(`{"Version":1,"id":"r","marks":["a"],"x":{"marks":1},"MARKS":["b"],"pending":[{"call_id":"c"}]}`), parts)
	require.NoError(t, err)
	assert.Equal(t, savedHead{Version: 1, ID: "r"}, head)
	assert.Equal(t, []string{"b"}, at("marks", sections))
	assert.Equal(t, []savedPending{{CallID: "c"}}, at("pending", sections))
	assert.Nil(t, at("failures", sections))

	head, sections, err = decodeState([]byte(`{"version":1,"failures":{"a":1},"marks":["m"]}`), parts)
	var te *json.UnmarshalTypeError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "failures", te.Field)
	assert.Equal(t, 1, head.Version)
	assert.Equal(t, []string{"m"}, at("marks", sections))

	_, _, err = decodeState([]byte(`{"version":1,`), parts)
	var se *json.SyntaxError
	assert.ErrorAs(t, err, &se)
}
