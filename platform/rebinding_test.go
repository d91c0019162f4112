package platform

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without authentication, a hostile web page can still reach a platform
// on loopback through DNS rebinding: its own name, resolved to 127.0.0.1,
// makes every request same-origin. Such a request names the attacker's
// host, so a Host that is neither an IP address nor localhost is refused
// before anything is done (an upload would run its discovery here).
func TestDNSRebindingIsRefusedWithoutAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{InsecureNoAuth: true})
	port := e.hs.Listener.Addr().(*net.TCPAddr).Port
	pkg := goodPackage(t, "greet", "x", 0)
	for _, host := range []string{"evil.example", fmt.Sprintf("evil.example:%d", port), "localhost.evil.example", "127.0.0.1.nip.io"} {
		r := doHost(t, e, host, "PUT", "/api/v1/platform/toolsets/rebound/package", pkg)
		assert.Equal(t, http.StatusMisdirectedRequest, r.status, "%s: %s", host, r.body)
		assert.Equal(t, "MisdirectedRequest", r.errCode(t), host)
		r = doHost(t, e, host, "GET", "/", nil)
		assert.Equal(t, http.StatusMisdirectedRequest, r.status, host)
	}
	assert.Empty(t, e.store.List(), "nothing uploaded through a rebound name")
	for _, host := range []string{"localhost", fmt.Sprintf("localhost:%d", port), fmt.Sprintf("127.0.0.1:%d", port), "[::1]:1", "LOCALHOST", "app.localhost", "192.0.2.7"} {
		r := doHost(t, e, host, "GET", "/api/v1/platform/toolsets", nil)
		assert.Equal(t, http.StatusOK, r.status, "%s: %s", host, r.body)
	}
}

// doHost sends a request without a token, naming host in its Host header.
func doHost(t *testing.T, e *testEnv, host, method, path string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, e.hs.URL+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Host = host
	res, err := e.client.Do(req)
	require.NoError(t, err)
	return response{status: res.StatusCode, header: res.Header, body: readBody(t, res)}
}

// Without authentication, a hostile page's cross-site fetch of a "simple"
// request (POST, text/plain) needs no preflight: the API refuses what a
// browser marks as cross-site, as the page's forms do.
func TestCrossSiteAPIPostIsRefusedWithoutAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{InsecureNoAuth: true})
	r := e.doToken("", "POST", "/api/v1/platform/toolsets", []byte(`{"name":"csrf"}`),
		"Content-Type", "text/plain", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	assert.Equal(t, "CrossOriginRequest", r.errCode(t))
	assert.Empty(t, e.store.List())
	// A client that is no browser sends neither header.
	r = e.doToken("", "POST", "/api/v1/platform/toolsets", []byte(`{"name":"fine"}`))
	assert.Equal(t, http.StatusCreated, r.status, "%s", r.body)
}
