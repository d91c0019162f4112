package toolpkg

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
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
		if _, gopkgErr = Pack(context.Background(), "testdata/gopkg", &buf, nil); gopkgErr != nil {
			return
		}
		gopkgZip, gopkgErr = storedZip(buf.Bytes())
	})
	require.NoError(t, gopkgErr)
	return gopkgZip
}

// storedZip returns the zip with the same entries, each stored.
func storedZip(data []byte) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		h := f.FileHeader
		h.Method = zip.Store
		w, err := zw.CreateHeader(&h)
		if err != nil {
			return nil, err
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(w, rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
