package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFastSchemasCompile(t *testing.T) {
	for _, schema := range []string{
		`{"minLength":2.0,"maxItems":1e1}`,
		`{"x-vendor":{"$ref":"nowhere","$id":"#bad"},"type":"string"}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema"}`,
		`{"$id":"http://example.com/a/b.json"}`,
		`{"enum":[]}`,
		`{"const":{"$ref":"#/x"}}`,
		`{"default":{"$ref":"#/x"}}`,
		`{"examples":[{"$ref":"#/x"}]}`,
		`{"minimum":1e99999}`,
	} {
		c, err := compileFast([]byte(schema))
		require.NoError(t, err, schema)
		assert.True(t, c.Fast(), schema)
		_, err = fullSchema([]byte(schema))
		assert.NoError(t, err, schema)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, schema := range []string{``, `{`, `{} {}`, `{}x`, `"string"`, `[{}]`, `1`, `null`} {
		_, err := compileFast([]byte(schema))
		assert.Error(t, err, schema)
	}
	c, err := compileFast([]byte(" {} \n"))
	require.NoError(t, err)
	assert.True(t, c.Fast())
}
