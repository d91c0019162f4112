package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Parse reports a reference out of the document as a bare *RefError, the
// data the root turns into its public error, and keeps every keyword.
func TestParseReportsRefsAsData(t *testing.T) {
	_, err := Parse([]byte(`{"properties":{"a/b":{"items":{"$ref":"file:///etc/passwd"}}}}`))
	var re *RefError
	require.True(t, errors.As(err, &re))
	assert.Same(t, re, err, "not wrapped")
	assert.Equal(t, RefError{Keyword: "$ref", Ref: "file:///etc/passwd", Location: "/properties/a~1b/items"}, *re)

	s, err := Parse([]byte(`{"type":"object","x-order":["a"],"$id":"https://example.com/s.json","properties":{"a":{"type":["string","null"]}}}`))
	require.NoError(t, err)
	b, err := Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","x-order":["a"],"$id":"https://example.com/s.json","properties":{"a":{"type":["string","null"]}}}`, string(b))
}

func TestParseRefusesWhatIsNotASchema(t *testing.T) {
	for doc, want := range map[string]string{
		`"x"`:                           "not a string",
		`[1]`:                           "not an array",
		`{"a":`:                         "",
		strings.Repeat("[", 10001):      "",
		`{"$schema":"file:///x","a":1}`: `$schema "file:///x"`,
	} {
		_, err := Parse([]byte(doc))
		require.Error(t, err, doc)
		assert.Contains(t, err.Error(), want, doc)
	}
}
