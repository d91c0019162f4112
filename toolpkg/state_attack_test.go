package toolpkg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHugeDiscoveredSchemasDoNotLoseTheServingVersion: each executable's
// --schema is bounded, but a package may have many; tools whose
// definitions add up to more than a state.json may hold must fail
// discovery, not become a record the next Open calls damaged (losing
// the version that served).
//
// The store's bound is lowered for the test: at MaxToolDefinitionBytes
// it takes tens of megabytes of schemas, seconds under the race
// detector, to cross it; the code that checks it is the same. What the
// real bound is for, a state.json small enough to reload, is checked on
// the constants.
func TestHugeDiscoveredSchemasDoNotLoseTheServingVersion(t *testing.T) {
	t.Parallel()
	// The serving version's definitions at the bound, with room for the
	// rest of the record (ten 6 MiB schemas once made it larger than
	// maxStateFile).
	require.LessOrEqual(t, 2*MaxToolDefinitionBytes, maxStateFile)

	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	const limit = 256 << 10
	s.maxToolDefs = limit
	upload(t, s, "demo", scriptPackage(t, schemaEcho(greetSchema)))

	// Each output is within maxSchemaOutput; together they are over the
	// bound.
	const exes, each = 3, limit / 2
	require.Greater(t, exes*each, limit)
	require.Less(t, each, maxSchemaOutput)
	var manifest strings.Builder
	manifest.WriteString("version: 1\ntools:\n")
	files := []zfile{}
	for i := range exes {
		fmt.Fprintf(&manifest, "  sh%d:\n    runtime: python\n    executable: g%d.sh\n    timeout_seconds: 2\n", i, i)
		schema := fmt.Sprintf(`printf '{"tools":{"t%d":{"description":"Big.","parameters":{"type":"object","description":"'; head -c %d /dev/zero | tr '\0' x; printf '"}}}}'`, i, each)
		files = append(files, zfile{name: fmt.Sprintf("python/bin/g%d.sh", i), data: []byte(scriptTool(schema)), mode: 0o755})
	}
	pkg := makeZip(t, append([]zfile{manifestFile(manifest.String())}, files...)...)
	info := upload(t, s, "demo", pkg)
	require.NoError(t, s.Close())

	s, err = Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	after, err := s.Info("demo")
	require.NoError(t, err)
	assert.NotZero(t, after.Serving, "a version serves after the restart: %v", after.Errors)
	assert.Equal(t, StatusFailed, info.Status)
	assert.Equal(t, 1, after.Serving)
	assert.Contains(t, strings.Join(info.Errors, "\n"), fmt.Sprintf("bytes of JSON; at most %d are allowed", limit))
	fi, err := os.Stat(filepath.Join(dir, "demo", "state.json"))
	require.NoError(t, err)
	assert.Less(t, fi.Size(), int64(limit), "the refused definitions are not in the record")
}

// failingReader serves a zip until the upload keeps it (the second read
// of the whole zip; see heldReader), which fails as a disk might.
type failingReader struct {
	data  []byte
	whole int
}

func (r *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off == 0 && len(p) == len(r.data) {
		if r.whole++; r.whole == 2 {
			return 0, errors.New("input/output error")
		}
	}
	return bytes.NewReader(r.data).ReadAt(p, off)
}

// TestUploadFailingAfterItsChecksLeavesNoPhantomToolset: an upload of a
// new name that passes the checks and then fails (its input cannot be
// read again, the disk is full) must not leave a toolset behind: listed
// with no status, configurable into a folder with no record, its name
// taken for Create.
func TestUploadFailingAfterItsChecksLeavesNoPhantomToolset(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	pkg := scriptPackage(t, schemaEcho(greetSchema))
	_, err := s.StartUpload(context.Background(), "ghost", &failingReader{data: pkg}, int64(len(pkg)))
	require.ErrorContains(t, err, "input/output error")

	_, err = s.Info("ghost")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Empty(t, s.List())
	_, err = s.Wait(context.Background(), "ghost")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.SetConfig("ghost", map[string]any{"x": "y"})
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorIs(t, s.Remove("ghost"), ErrNotFound)
	_, err = s.Create("ghost")
	assert.NoError(t, err, "the name is free")
}
