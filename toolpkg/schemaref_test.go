package toolpkg

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A package's --schema output is untrusted: a reference to a host file
// must be refused at discovery without the file being read.
func TestCheckParametersFileRefIsNotRead(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "secret.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"const":"TOP-SECRET-7f3a9c"}`), 0o600))
	for _, doc := range []string{
		`{"type":"object","properties":{"a":{"$ref":"file://` + p + `"}}}`,
		`{"$schema":"file://` + p + `","type":"object"}`,
	} {
		_, err := checkParameters(json.RawMessage(doc))
		require.Error(t, err, doc)
		assert.Contains(t, err.Error(), "file://"+p)
		assert.NotContains(t, err.Error(), "TOP-SECRET")
	}
}
