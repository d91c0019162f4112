package toolpkg

import (
	"bytes"
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateArchive checks a zip that is not a package: no manifest is
// needed and the packages' own rules do not apply, but every structural
// problem is still found, all at once.
func TestValidateArchive(t *testing.T) {
	t.Parallel()
	ok := makeZip(t, zfile{name: "SKILL.md", data: []byte("---\n")}, zfile{name: ".venv/x", data: []byte("x")}, zfile{name: "a.whl", data: []byte("w")})
	zr, err := ValidateArchive(bytes.NewReader(ok), int64(len(ok)), nil)
	require.NoError(t, err)
	data, err := fs.ReadFile(zr, "SKILL.md")
	require.NoError(t, err)
	assert.Equal(t, "---\n", string(data))

	bad := makeZip(t,
		zfile{name: "../escape", data: []byte("x")},
		zfile{name: "/abs", data: []byte("x")},
		zfile{name: "link", symlink: "/etc/passwd"},
		zfile{name: "dup", data: []byte("x")},
		zfile{name: "dup", data: []byte("y")},
	)
	_, err = ValidateArchive(bytes.NewReader(bad), int64(len(bad)), nil)
	var ve *ValidationError
	require.True(t, errors.As(err, &ve), "%v", err)
	assert.Len(t, ve.Problems, 4, "%v", err)
	for _, want := range []string{"../escape", "/abs", "symlink", "duplicate"} {
		assert.Contains(t, err.Error(), want)
	}

	big := makeZip(t, zfile{name: "big", data: bytes.Repeat([]byte("a"), 4096)})
	_, err = ValidateArchive(bytes.NewReader(big), int64(len(big)), &Limits{MaxUncompressedBytes: 1000})
	assert.ErrorContains(t, err, "exceed 1000 bytes")
	_, err = ValidateArchive(bytes.NewReader(big), int64(len(big)), &Limits{MaxZipBytes: 10})
	assert.ErrorContains(t, err, "at most 10")
	_, err = ValidateArchive(bytes.NewReader([]byte("not a zip")), 9, nil)
	assert.ErrorContains(t, err, "not a readable zip")
}
