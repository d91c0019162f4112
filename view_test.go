package toolset

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A view lists its visible tools in a slice of its own.
func TestViewToolsCopiesTheVisibleTools(t *testing.T) {
	s := newSnapshot([]Tool{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	all := view{snap: s}.tools()
	assert.Equal(t, s.tools, all)
	all[0].Name = "changed"
	assert.Equal(t, "a", s.tools[0].Name, "the snapshot is not shared")

	v := view{snap: s, keep: []bool{true, false, true}}
	assert.Equal(t, []Tool{{Name: "a"}, {Name: "c"}}, v.tools())
	assert.False(t, v.visible(1))
	assert.True(t, view{snap: s}.visible(1))
	assert.Nil(t, view{}.tools())
}
