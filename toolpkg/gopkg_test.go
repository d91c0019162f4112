package toolpkg

import (
	"archive/zip"
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	gopkgOnce sync.Once
	gopkgZip  []byte
	gopkgErr  error
)

// goPackage packs testdata/gopkg, the demo tools of internal/demotools
// made into an executable with pkgtool, as Pack builds any Go package,
// with its entries stored rather than deflated: the tests upload it
// dozens of times, and inflating its executable under the race detector
// costs about a second each time (TestPackBuildsAndPackages uploads what
// Pack makes as it is).
func goPackage(t testing.TB) []byte {
	t.Helper()
	gopkgOnce.Do(func() {
		var buf bytes.Buffer
		if _, gopkgErr = pack(context.Background(), "testdata/gopkg", &buf, nil, zip.Store); gopkgErr != nil {
			return
		}
		gopkgZip = buf.Bytes()
	})
	require.NoError(t, gopkgErr)
	return gopkgZip
}

// goToolset uploads the Go package into s as name.
func goToolset(t testing.TB, s *Store, name string) Info {
	t.Helper()
	info := upload(t, s, name, goPackage(t))
	require.Equal(t, StatusReady, info.Status, "discovery errors: %v", info.Errors)
	return info
}

// A tool written with the library and packaged with pkgtool is
// discovered and called through toolpkg in every sandbox mode.
func TestGoPackageOnPkgtoolRunsInEveryMode(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			info := goToolset(t, s, "demo")
			names := map[string]bool{}
			for _, ti := range info.Tools {
				names[ti.Name] = true
			}
			require.True(t, names["greet"] && names["report"] && names["count"], "%v", names)
			ts := s.Toolset("demo", map[string]any{"api_key": "k-123456"})
			res, err := callTool(context.Background(), t, ts, "demo__greet", `{"name": "Ada"}`)
			require.NoError(t, err)
			require.Equal(t, "hello Ada", resultData(t, res)["text"])
			// The core validates the arguments inside the tool too.
			_, err = callTool(context.Background(), t, ts, "demo__greet", `{"name": "Ada", "x": 1}`)
			require.Error(t, err)
		})
	}
}
