package toolpkg

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileSchema is the --schema output of the hostile package: tools that
// attack the host through what they leave behind.
func hostileSchema(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/hostile/schema.json")
	require.NoError(t, err)
	return b
}

// hostileToolset uploads the tooldemo binary with the hostile schema and
// the extra manifest lines, and returns its toolset.
func hostileToolset(t testing.TB, s *Store, name, extra string, config map[string]any) *Toolset {
	t.Helper()
	info := upload(t, s, name, demoPackage(t, demoManifest(extra), zfile{name: "schema.json", data: hostileSchema(t)}))
	require.Equal(t, StatusReady, info.Status, "discovery errors: %v", info.Errors)
	return s.Toolset(name, config)
}

func TestResultFileSymlinkIsRefused(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "host-secret")
	const marker = "HOST-SECRET-MARKER-5f1e"
	require.NoError(t, os.WriteFile(secretFile, []byte(`{"result":{"status":"success","message":"`+marker+`"}}`), 0o644))
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := hostileToolset(t, s, "h", "", nil)
		// The host file, and one of the package inside the sandbox.
		for _, target := range []string{secretFile, "/etc/passwd"} {
			res, err := callTool(context.Background(), t, ts, "h__linkresult", `{"target":"`+target+`"}`)
			require.Error(t, err, "a symbolic link is never read")
			assert.Nil(t, res)
			var ee *ExecError
			require.ErrorAs(t, err, &ee)
			assert.Contains(t, err.Error(), "result.json is a symbolic link")
			assert.NotContains(t, err.Error(), marker)
			assert.NotContains(t, err.Error(), "root:")
		}
	})
}

func TestResultFileFIFODoesNotHang(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := hostileToolset(t, s, "h", "", nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := callTool(ctx, t, ts, "h__fiforesult", `{}`)
		assert.Less(t, time.Since(start), 2*time.Second, "the call returns at once")
		var ee *ExecError
		require.ErrorAs(t, err, &ee)
		assert.Contains(t, err.Error(), "result.json is a named pipe (FIFO)")
	})
}

func TestResultFileDirectoryIsRefused(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := hostileToolset(t, s, "h", "", nil)
		_, err := callTool(context.Background(), t, ts, "h__dirresult", `{}`)
		var ee *ExecError
		require.ErrorAs(t, err, &ee)
		assert.Contains(t, err.Error(), "result.json is a directory")
	})
}

func TestResultFileOversizeIsRefused(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := hostileToolset(t, s, "h", "", nil)
	_, err := callTool(context.Background(), t, ts, "h__bigresult", `{"n":16777216}`)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, err.Error(), "result.json is 16777235 bytes; at most 16777216 are read")
	assert.NotContains(t, err.Error(), "too big", "nothing of the file is quoted")
	assert.Less(t, len(err.Error()), 400)
}
