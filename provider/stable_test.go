package provider_test

import (
	"errors"
	"testing"

	"github.com/gotoolset/toolset/provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type def struct{ name, schema string }

func defName(d def) string         { return d.name }
func defKey(d def) ([]byte, error) { return []byte(d.schema), nil }

func TestStableSendsTheEarlierToolsAndRestricts(t *testing.T) {
	var s provider.Stable[def]
	a, b, c := def{"a", "1"}, def{"b", "2"}, def{"c", "3"}
	send, restrict, err := s.Next([]def{a, b, c}, defName, defKey)
	require.NoError(t, err)
	assert.Equal(t, []def{a, b, c}, send)
	assert.Nil(t, restrict)

	send, restrict, err = s.Next([]def{c, a}, defName, defKey)
	require.NoError(t, err)
	assert.Equal(t, []def{a, b, c}, send, "a turn hiding b sends the same tools")
	assert.Equal(t, []def{c, a}, restrict)

	send, restrict, err = s.Next(nil, defName, defKey)
	require.NoError(t, err)
	assert.Equal(t, []def{a, b, c}, send)
	assert.NotNil(t, restrict, "a turn with no tools restricts to none")
	assert.Empty(t, restrict)

	send, restrict, err = s.Next([]def{a, b, c}, defName, defKey)
	require.NoError(t, err)
	assert.Equal(t, []def{a, b, c}, send)
	assert.Nil(t, restrict, "every tool shown again: no restriction")
}

// A changed definition, or a new tool, is sent as the turn has it, and
// remembered in place of the earlier tools.
func TestStableStartsAgainOnAChange(t *testing.T) {
	var s provider.Stable[def]
	a, b := def{"a", "1"}, def{"b", "2"}
	_, _, err := s.Next([]def{a, b}, defName, defKey)
	require.NoError(t, err)
	a2 := def{"a", "changed"}
	send, restrict, err := s.Next([]def{a2}, defName, defKey)
	require.NoError(t, err)
	assert.Equal(t, []def{a2}, send)
	assert.Nil(t, restrict)
	send, restrict, err = s.Next([]def{a2, b}, defName, defKey)
	require.NoError(t, err)
	assert.Equal(t, []def{a2, b}, send, "b is new again")
	assert.Nil(t, restrict)

	boom := errors.New("boom")
	_, _, err = s.Next([]def{a}, defName, func(def) ([]byte, error) { return nil, boom })
	assert.ErrorIs(t, err, boom)
}
