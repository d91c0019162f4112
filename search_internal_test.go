package toolset

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A query of a million words costs as much as one of the first 32: the
// split stops there, and allocates for those words only.
func TestWordsStopsAtTheLimit(t *testing.T) {
	var b strings.Builder
	for i := range 1_000_000 {
		b.WriteString("w")
		b.WriteByte(byte('a' + i%26))
		b.WriteByte(byte('a' + i/26%26))
		b.WriteByte(' ')
	}
	huge := b.String()
	got := words(huge, maxQueryTerms)
	assert.Len(t, got, maxQueryTerms)
	assert.Equal(t, words(huge[:maxQueryTerms*4], -1), got, "the first words, in order")
	allocs := testing.AllocsPerRun(5, func() { words(huge, maxQueryTerms) })
	assert.LessOrEqual(t, allocs, float64(2*maxQueryTerms+8), "allocations for the words kept, not for the million")

	assert.Empty(t, words("the of and", 0))
	assert.Equal(t, []string{"refund"}, words("refunds", 1), "the last word counts when the text ends")
	assert.Equal(t, []string{"refund", "card"}, words("refunds card payment", 2))
}

// However many words a query has, a ranking looks up at most 32 of them
// in each document.
func TestRankReadsABoundedQuery(t *testing.T) {
	var b strings.Builder
	for i := range 200 {
		b.WriteString("term")
		b.WriteByte(byte('a' + i%26))
		b.WriteByte(byte('a' + i/26%26))
		b.WriteByte(' ')
	}
	b.WriteString("invoice") // past the 32 words ranked
	ix := &searchIndex{df: map[string]int{"invoice": 1}, avgLen: 1,
		docs: []searchDoc{{pos: 0, tf: map[string]float64{"invoice": 3}, length: 1}}}
	assert.Empty(t, ix.rank(b.String(), nil, 5), "a word past the bound is not looked up")
	assert.Equal(t, []int{0}, ix.rank("invoice "+b.String(), nil, 5))
}
