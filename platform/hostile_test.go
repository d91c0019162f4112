package platform

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/toolpkg"
)

// An upload above the limit is answered 413 as soon as the limit is
// passed, while the client is still sending: the server neither reads
// nor stores the rest.
func TestOversizeUploadIsRefusedWhileReading(t *testing.T) {
	t.Parallel()
	const max = 64 << 10
	e := newEnv(t, &Options{MaxPackageBytes: max})
	// A raw connection: the body is chunked (no length declared) and
	// never finished; the answer must come all the same.
	conn, err := net.Dial("tcp", e.hs.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(15*time.Second)))
	bw := bufio.NewWriter(conn)
	fmt.Fprintf(bw, "PUT /api/v1/platform/toolsets/big/package HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n", testToken)
	chunk := make([]byte, 4096)
	for sent := 0; sent < max+32<<10; sent += len(chunk) {
		fmt.Fprintf(bw, "%x\r\n", len(chunk))
		bw.Write(chunk)
		bw.WriteString("\r\n")
	}
	require.NoError(t, bw.Flush())
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "no answer while the body was still coming")
	body := readBody(t, res)
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "%s", body)
	assert.Contains(t, string(body), "PackageTooLarge")
	_, err = e.store.Info("big")
	assert.ErrorIs(t, err, toolpkg.ErrNotFound, "nothing stored")
	des, err := os.ReadDir(filepath.Join(e.dir, ".platform", "tmp"))
	require.NoError(t, err)
	assert.Empty(t, des, "the spooled part is deleted")

	// A declared length above the limit is refused before reading.
	r := e.do("PUT", "/api/v1/platform/toolsets/big/package", bytes.Repeat([]byte{'x'}, max+1))
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	assert.Equal(t, "PackageTooLarge", r.errCode(t))
	// At the limit is fine (and invalid).
	r = e.do("PUT", "/api/v1/platform/toolsets/big/package", bytes.Repeat([]byte{'x'}, max))
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
}

// A zip that inflates far beyond the store's bound is refused as an
// invalid package, and so are zips that are not zips at all.
func TestZipBombIsRefused(t *testing.T) {
	t.Parallel()
	e := openEnvWith(t, storeDir(t), nil, &toolpkg.Options{Limits: toolpkg.Limits{MaxUncompressedBytes: 1 << 20}})
	bomb := makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)},
		zfile{name: "python/bin/greet.sh", data: []byte(scriptTool(schemaDoc("greet", "x"))), mode: 0o755},
		zfile{name: "padding.bin", data: make([]byte, 8<<20)})
	require.Less(t, len(bomb), 64<<10)
	r := e.do("PUT", "/api/v1/platform/toolsets/bomb/package", bomb)
	assert.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	assert.Equal(t, "InvalidPackage", r.errCode(t))

	// Truncated, and garbage behind a zip's signature.
	good := goodPackage(t, "greet", "x", 0)
	for _, data := range [][]byte{good[:len(good)/2], append([]byte("PK\x03\x04"), bytes.Repeat([]byte{0xff}, 4096)...)} {
		r := e.do("PUT", "/api/v1/platform/toolsets/bomb/package", data)
		assert.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
		assert.Equal(t, "InvalidPackage", r.errCode(t))
	}
	assert.Empty(t, e.store.List())
}

// Names that try to leave the store's folders, or to look like another
// name, are refused before anything touches the disk.
func TestPathTrickNamesAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	outside := filepath.Dir(e.dir)
	before, err := os.ReadDir(outside)
	require.NoError(t, err)
	tricks := []string{
		"..", "%2e%2e", "%2E%2E", ".", "%2e", "..%2f..%2fetc", "a%2Fb", "a%2fb", "%2Fetc",
		"a%00b", "%00", "a%5Cb", "..%5C..", ".hidden", "-flag", "_x",
		"%D0%B0dmin",      // Cyrillic а
		"%EF%BD%97eather", // fullwidth w
		"caf%C3%A9",       // é
		"a%E2%80%8Bb",     // zero-width space
		"a%20b", "a+b", "a;b", "a:b", "a*b",
		strings.Repeat("a", 65), strings.Repeat("a", 4000),
	}
	paths := []string{
		"/api/v1/platform/toolsets/%s",
		"/api/v1/platform/toolsets/%s/package",
		"/api/v1/platform/toolsets/%s/config",
		"/api/v1/platform/agents/%s",
		"/toolsets/%s",
	}
	pkg := goodPackage(t, "greet", "x", 0)
	cookie := sessionCookie + "=" + e.srv.newSession(time.Now())
	for _, trick := range tricks {
		for _, p := range paths {
			target := strings.Replace(p, "%s", trick, 1)
			for _, method := range []string{"GET", "PUT", "PATCH", "DELETE"} {
				var body []byte
				switch {
				case strings.HasSuffix(target, "/package") && method == "PUT":
					body = pkg
				case strings.HasSuffix(target, "/config"):
					body = []byte(`{"a":"b"}`)
				case strings.Contains(target, "/agents/"):
					body = []byte("toolsets: []\n")
				}
				r := e.do(method, target, body, "Cookie", cookie)
				assert.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed}, r.status, "%s %s: %s", method, target, r.body)
				if strings.HasPrefix(target, "/api/") || r.status != http.StatusBadRequest {
					code := r.errCode(t)
					assert.Contains(t, []string{"InvalidName", "NotFound", "MethodNotAllowed"}, code, "%s %s", method, target)
				}
				assert.LessOrEqual(t, len(r.body), 2048, "a message quotes a bounded part of the name")
			}
		}
	}
	assert.Empty(t, e.store.List())
	after, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Equal(t, len(before), len(after), "nothing created beside the store")
	des, err := os.ReadDir(filepath.Join(e.dir, ".platform", "agents"))
	require.NoError(t, err)
	assert.Empty(t, des)
}

// A handler's panic is a 500 InternalError to the client, which learns
// nothing of it; the log has it.
func TestPanickingHandlerIs500(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.srv.mux.HandleFunc("GET /test/panic", func(http.ResponseWriter, *http.Request) {
		panic("secret panic text 7f3a")
	})
	r := e.doToken("", "GET", "/test/panic", nil)
	assert.Equal(t, http.StatusInternalServerError, r.status)
	assert.Equal(t, "InternalError", r.errCode(t))
	assert.NotContains(t, string(r.body), "secret panic text")
	assert.NotContains(t, string(r.body), "goroutine")
	assert.Contains(t, e.logs.String(), "secret panic text 7f3a")
	// The server goes on.
	r = e.do("GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, http.StatusOK, r.status)
}

// A failure to spool an upload is the server's, not the client's: 500,
// and the message names no path of the server's.
func TestSpoolFailureLeaksNoServerPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tmp := filepath.Join(e.dir, ".platform", "tmp")
	require.NoError(t, os.RemoveAll(tmp))
	require.NoError(t, os.WriteFile(tmp, nil, 0o600)) // no folder to spool into
	r := e.do("PUT", "/api/v1/platform/toolsets/x/package", goodPackage(t, "greet", "x", 0))
	assert.Equal(t, http.StatusInternalServerError, r.status, "%s", r.body)
	assert.Equal(t, "InternalError", r.errCode(t))
	assert.NotContains(t, string(r.body), e.dir)
	assert.NotContains(t, string(r.body), ".platform")
	assert.Contains(t, e.logs.String(), "tmp", "the log says why")

	r = e.uploadForm("x", goodPackage(t, "greet", "x", 0), false)
	assert.Equal(t, http.StatusInternalServerError, r.status, "%s", r.body)
	assert.NotContains(t, string(r.body), e.dir)
	assert.NotContains(t, string(r.body), ".platform")
}

// A discovery that fails to start names the executable's path on the
// server; what a client is shown (the API, the page, an agent's
// problems) names the store's folder "<store>" instead.
func TestDiscoveryErrorsDoNotNameTheStoreFolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("broken", makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)},
		zfile{name: "python/bin/greet.sh", data: []byte("#!/nonexistent/interpreter\n"), mode: 0o755}))
	m := e.settle("broken")
	require.Equal(t, "failed", m["discoveryStatus"])
	info, err := e.store.Info("broken")
	require.NoError(t, err)
	require.Contains(t, strings.Join(info.Errors, "\n"), e.dir, "the store's own error names the path")

	for _, r := range []response{
		e.do("GET", "/api/v1/platform/toolsets/broken", nil),
		e.do("GET", "/api/v1/platform/toolsets", nil),
		e.page("/toolsets/broken"),
		e.do("PUT", "/api/v1/platform/agents/a", []byte(agentYAML("a", "broken"))),
	} {
		assert.NotContains(t, string(r.body), e.dir)
		assert.NotContains(t, string(r.body), filepath.Dir(e.dir), "not even cut short")
		assert.Regexp(t, `&lt;store&gt;|<store>`, string(r.body), "%d: %.300s", r.status, r.body)
	}
}

// A package whose every executable fails with a long stderr gives its
// toolset hundreds of kilobytes of discovery errors; a listing, which
// holds up to 500 toolsets, bounds what it shows of each.
func TestListingBoundsEachToolsetsDiscoveryErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var man strings.Builder
	man.WriteString("version: 1\ntools:\n")
	var files []zfile
	for i := range 20 {
		fmt.Fprintf(&man, "  t%d:\n    runtime: python\n    executable: t%d.sh\n    timeout_seconds: 5\n", i, i)
		files = append(files, zfile{name: fmt.Sprintf("python/bin/t%d.sh", i), data: []byte("#!/bin/sh\nhead -c 6000 /dev/zero | tr '\\0' x >&2\nexit 1\n"), mode: 0o755})
	}
	files = append(files, zfile{name: "manifest.yaml", data: []byte(man.String())})
	e.upload("loud", makeZip(t, files...))
	m := e.settle("loud")
	require.Equal(t, "failed", m["discoveryStatus"])
	require.Equal(t, 20, len(m["discoveryErrors"].([]any)), "the detail has every error")

	r := e.do("GET", "/api/v1/platform/toolsets", nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Less(t, len(r.body), 8<<10, "the listing's entry is bounded")
	errs := r.json(t)["data"].([]any)[0].(map[string]any)["discoveryErrors"].([]any)
	require.Equal(t, MaxListedErrors+1, len(errs))
	assert.Contains(t, errs[MaxListedErrors], "17 more")
	assert.Contains(t, errs[0], "cut")
}
