package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPatternSizeBoundsTheProgram(t *testing.T) {
	n, err := patternSize(`^[a-z0-9]{1,255}$`)
	require.NoError(t, err)
	assert.Less(t, n, maxPatternSize)
	for _, expr := range []string{strings.Repeat("x{1000}", 150), strings.Repeat("[ab]{1000}", 20)} {
		_, err := patternSize(expr)
		require.Error(t, err, expr)
		assert.Contains(t, err.Error(), "would compile to more than")
	}
	_, err = patternSize(`(unclosed`)
	assert.Error(t, err)
}

func TestMatchAffordable(t *testing.T) {
	assert.True(t, matchAffordable(20, 400_000))
	assert.False(t, matchAffordable(maxPatternSize, 1<<20))
	assert.True(t, matchAffordable(0, maxMatchCost), "a size of zero counts as one")
}

func TestCompilePatternMatches(t *testing.T) {
	p, err := compilePattern(`^[a-z]+$`)
	require.NoError(t, err)
	assert.True(t, p.re.MatchString("abc"))
	assert.False(t, p.re.MatchString("ab1"))
	assert.Positive(t, p.size)
}
