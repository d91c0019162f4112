package toolset

import (
	"context"
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// While a reservation holds, the names of copies are cut one after the
// other from one buffer, sized for the tools still to come; a name never
// grows into the next. Without one, and after it ends, each is made.
func TestReservedNamesShareABuffer(t *testing.T) {
	var none *scratch
	assert.Len(t, none.newNames(7, 2), 7)

	sc := getScratch()
	defer sc.release()
	assert.Len(t, sc.newNames(5, 1), 5, "no reservation: made")
	done := sc.reserveTools(100)
	sc.newTools(10)
	a := sc.newNames(40, 10) // 90 tools to come at 4 bytes each
	assert.Len(t, sc.names, 360)
	sc.newTools(10)
	b := sc.newNames(40, 10)
	assert.Equal(t, unsafe.Add(unsafe.Pointer(&a[0]), 40), unsafe.Pointer(&b[0]), "end to end")
	assert.Equal(t, 40, cap(a), "a name buffer cannot grow into the next")
	sc.newTools(10)
	c := sc.newNames(1000, 10) // longer names than foreseen: a buffer of its own
	assert.Len(t, c, 1000)
	assert.Empty(t, sc.newNames(0, 0))
	done()
	assert.Nil(t, sc.names, "the end of a reservation drops the buffer")
}

// The prefixed names of a fresh Combined's children lie in one buffer,
// and each is the right name: sharing the buffer changes no byte of
// another child's names.
func TestFreshCombinedPrefixesIntoOneNameBuffer(t *testing.T) {
	const sets, per = 4, 30
	children := make([]Toolset, sets)
	for s := range children {
		tools := make([]Tool, per)
		for i := range tools {
			tools[i] = NewTool(fmt.Sprintf("t%d", i), "A tool.", func(context.Context, struct{}) (string, error) { return "", nil })
		}
		children[s] = NewFunction(tools...).Prefixed(fmt.Sprintf("p%d", s))
	}
	tools, err := BuildTools(context.Background(), "a", NewCombined(children...))
	require.NoError(t, err)
	names := tools.Names()
	require.Len(t, names, sets*per)
	lo, hi := uintptr(unsafe.Pointer(unsafe.StringData(names[0]))), uintptr(0)
	for k, name := range names {
		assert.Equal(t, fmt.Sprintf("p%d_t%d", k/per, k%per), name)
		p := uintptr(unsafe.Pointer(unsafe.StringData(name)))
		lo, hi = min(lo, p), max(hi, p+uintptr(len(name)))
	}
	total := 0
	for _, name := range names {
		total += len(name)
	}
	assert.Equal(t, uintptr(total), hi-lo, "the names lie end to end in one buffer")
}
