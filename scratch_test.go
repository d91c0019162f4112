package toolset

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A chunk hands out zeroed slices one after the other; when a turn
// outgrows it, the slices handed out stay where they are, and after a
// reset the whole turn fits in one buffer.
func TestChunkHandsOutZeroedSlicesAndGrowsToTheTurn(t *testing.T) {
	var c chunk[int]
	a := c.take(40)
	for i := range a {
		a[i] = 1
	}
	b := c.take(100) // does not fit in 64
	assert.Len(t, b, 100)
	assert.Equal(t, 1, a[39], "earlier slices are kept")
	assert.Zero(t, b[0])
	assert.Equal(t, 140, c.used)
	c.reset()
	assert.Zero(t, c.used)
	d := c.take(140)
	assert.Equal(t, make([]int, 140), d, "reset zeroes what it hands out again")
	assert.Len(t, c.take(1), 1)
	assert.Equal(t, 1, cap(c.take(1)), "a slice cannot grow into the next")
}

// Without scratch, everything is made.
func TestNilScratchMakesWhatItIsAsked(t *testing.T) {
	var sc *scratch
	assert.Len(t, sc.keep(3), 3)
	assert.Len(t, sc.views(2), 2)
	assert.Len(t, sc.parts(4), 4)
	tools, b, off := sc.newTools(5)
	assert.Len(t, tools, 5)
	assert.Nil(t, b)
	assert.Zero(t, off)
	sc.reserveTools(1000)() // nothing to reserve
	assert.Nil(t, sc.explaining())
}

// While a reservation holds, copies of tools lie end to end in one block;
// once it ends, and after a release, they are made one by one.
func TestReservedToolsLieEndToEnd(t *testing.T) {
	sc := getScratch()
	done := sc.reserveTools(100)
	a, ba, offA := sc.newTools(10)
	b, bb, offB := sc.newTools(20)
	assert.NotNil(t, ba)
	assert.Same(t, ba, bb)
	assert.Equal(t, offA+10, offB)
	assert.Len(t, a, 10)
	assert.Equal(t, 20, cap(b), "a copy cannot grow into the next")
	inner := sc.reserveTools(500)
	_, bc, _ := sc.newTools(1)
	assert.Same(t, ba, bc, "a reservation in force is not replaced")
	inner()
	done()
	_, none, _ := sc.newTools(3)
	assert.Nil(t, none)

	sc.reserveTools(minBlock - 1)()
	assert.Zero(t, sc.toolHint, "too few tools for a block")
	sc.reserveTools(minBlock)
	sc.release()
	assert.Zero(t, sc.toolHint, "a release ends a reservation")
	assert.Nil(t, sc.block)
}
