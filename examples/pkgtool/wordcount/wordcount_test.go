package wordcount

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCountWords(t *testing.T) {
	c, err := CountWords(context.Background(), Args{Text: " to be\tor not\nto be, that "})
	require.NoError(t, err)
	assert.Equal(t, Count{Words: 7, Longest: "that"}, c)

	c, err = CountWords(context.Background(), Args{})
	require.NoError(t, err)
	assert.Equal(t, Count{}, c)
}

// TestCountWordsTooLong: a text over MaxText is refused, not counted.
func TestCountWordsTooLong(t *testing.T) {
	_, err := CountWords(context.Background(), Args{Text: strings.Repeat("a ", MaxText/2+1)})
	require.ErrorContains(t, err, "text too long")
}
