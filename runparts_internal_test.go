package toolset

import (
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
	data, err := encodeState(savedHead{Version: 1, ID: "r<"}, parts, []any{nil, []string{"a&"}, []int(nil)})
	require.NoError(t, err)
	assert.Equal(t, `{"version":1,"id":"r\u003c","step":0,"pending":["a\u0026"]}`, string(data))

	_, err = encodeState(savedHead{}, parts, []any{make(chan int), nil, nil})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "approvals")
}

// sectionsOf reads a state's sections as encoding/json reads an object
// into a struct: keys match case-insensitively, the last of a key given
// twice wins, and keys that name no part are ignored.
func TestSectionsOf(t *testing.T) {
	var p runParts
	parts := p.list()
	raw, err := sectionsOf([]byte(`{"version":1,"Marks":["a"],"x":{"marks":1},"marks":["b"],"PENDING":[]}`), parts)
	require.NoError(t, err)
	got := map[string]string{}
	for i, r := range raw {
		if r != nil {
			got[parts[i].key()] = string(r)
		}
	}
	assert.Equal(t, map[string]string{"marks": `["b"]`, "pending": `[]`}, got)

	_, err = sectionsOf([]byte(`[1]`), parts)
	assert.Error(t, err)
}
