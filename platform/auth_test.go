package platform

import (
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/toolpkg"
)

func TestAPIRequiresTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tok := range []string{"", "wrong-token-0123456789abcdef", testToken + "x", strings.ToUpper(testToken)} {
		for _, p := range []string{"/api/v1/platform/toolsets", "/api/v1/platform/agents", "/api/v1/platform/nosuch"} {
			r := e.doToken(tok, "GET", p, nil)
			assert.Equal(t, http.StatusUnauthorized, r.status, "%q %s", tok, p)
			assert.Equal(t, "Unauthorized", r.errCode(t))
			assert.NotEmpty(t, r.header.Get("WWW-Authenticate"))
		}
	}
	r := e.doToken("", "GET", "/api/v1/platform/toolsets", nil, "Authorization", "Basic "+testToken)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	// A session cookie does not open the API: only the bearer token.
	r = e.doToken("", "GET", "/api/v1/platform/toolsets", nil, "Cookie", sessionCookie+"="+e.srv.newSession(time.Now()))
	assert.Equal(t, http.StatusUnauthorized, r.status)

	r = e.do("GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, http.StatusOK, r.status)
	r = e.doToken("", "GET", "/api/v1/platform/toolsets", nil, "Authorization", "bearer "+testToken)
	assert.Equal(t, http.StatusOK, r.status, "the scheme is case-insensitive")
}

func TestNewRefusesMissingOrWeakTokens(t *testing.T) {
	t.Parallel()
	store, err := toolpkg.Open(storeDir(t), &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer store.Close()
	for _, o := range []*Options{nil, {}, {Token: "short"}, {Token: "has a space in it 0123456789"}, {Token: testToken, InsecureNoAuth: true}} {
		_, err := New(store, o)
		assert.Error(t, err, "%+v", o)
	}
	_, err = New(nil, &Options{Token: testToken})
	assert.Error(t, err)
}

func TestInsecureNoAuthWarnsAndShowsABanner(t *testing.T) {
	t.Parallel()
	logs := newSyncBuffer()
	e := newEnv(t, &Options{InsecureNoAuth: true, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	assert.Contains(t, logs.String(), "WITHOUT AUTHENTICATION")
	r := e.doToken("", "GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, http.StatusOK, r.status)
	r = e.doToken("", "GET", "/", nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, string(r.body), "runs without authentication")
}

// noRedirect is a client that shows redirects instead of following them.
func noRedirect(e *testEnv, jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

func TestPageLogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := noRedirect(e, jar)

	// Every page needs a session.
	for _, p := range []string{"/", "/toolsets/x"} {
		res, err := c.Get(e.hs.URL + p)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusSeeOther, res.StatusCode, p)
		assert.Equal(t, "/login", res.Header.Get("Location"), p)
	}
	res, err := c.Get(e.hs.URL + "/login")
	require.NoError(t, err)
	body := string(readBody(t, res))
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, body, `name="token"`)

	res, err = c.PostForm(e.hs.URL+"/login", url.Values{"token": {"wrong-token-0123456789abcdef"}})
	require.NoError(t, err)
	body = string(readBody(t, res))
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	assert.Contains(t, body, "not the platform")
	assert.Empty(t, res.Cookies())

	res, err = c.PostForm(e.hs.URL+"/login", url.Values{"token": {testToken}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	cookies := res.Cookies()
	require.Len(t, cookies, 1)
	ck := cookies[0]
	assert.Equal(t, sessionCookie, ck.Name)
	assert.True(t, ck.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	assert.False(t, ck.Secure, "plain HTTP")
	assert.NotContains(t, ck.Value, testToken, "the cookie does not hold the token")
	tokSum := sha256.Sum256([]byte(testToken))
	assert.NotContains(t, ck.Value, string(tokSum[:]))

	res, err = c.Get(e.hs.URL + "/")
	require.NoError(t, err)
	body = string(readBody(t, res))
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, body, "Toolsets")
	assert.Contains(t, body, "Log out")

	// A forged or tampered cookie is no session.
	for _, v := range []string{"x", ck.Value + "x", "1.AAAA", strings.Repeat("a", 500)} {
		req, _ := http.NewRequest("GET", e.hs.URL+"/", nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: v})
		res, err := noRedirect(e, nil).Do(req)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusSeeOther, res.StatusCode, v)
	}
	// An old session is over.
	old := e.srv.newSession(time.Now().Add(-DefaultSessionLifetime - time.Minute))
	req, _ := http.NewRequest("GET", e.hs.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: old})
	res, err = noRedirect(e, nil).Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusSeeOther, res.StatusCode)

	res, err = c.PostForm(e.hs.URL+"/logout", nil)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusSeeOther, res.StatusCode)
	res, err = c.Get(e.hs.URL + "/")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusSeeOther, res.StatusCode, "logged out")
}

// A session of one process is no session of the next: the key signing
// cookies is random per process.
func TestSessionDoesNotOutliveTheProcess(t *testing.T) {
	dir := storeDir(t)
	e := openEnv(t, dir, nil)
	cookie := e.srv.newSession(time.Now())
	e.close()
	e = openEnv(t, dir, nil)
	req, _ := http.NewRequest("GET", e.hs.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
	res, err := noRedirect(e, nil).Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusSeeOther, res.StatusCode)
}

func TestSecureCookieOverTLS(t *testing.T) {
	t.Parallel()
	store, err := toolpkg.Open(storeDir(t), &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer store.Close()
	srv, err := New(store, &Options{Token: testToken, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer srv.Close()
	hs := httptest.NewTLSServer(srv)
	defer hs.Close()
	c := hs.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.PostForm(hs.URL+"/login", url.Values{"token": {testToken}})
	require.NoError(t, err)
	res.Body.Close()
	require.Len(t, res.Cookies(), 1)
	assert.True(t, res.Cookies()[0].Secure)
}

// Behind a proxy that ends TLS, the session cookie is Secure all the
// same: sent over the proxy's HTTPS only.
func TestSecureCookieBehindATLSProxy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	req, err := http.NewRequest("POST", e.hs.URL+"/login", strings.NewReader("token="+testToken))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	res, err := noRedirect(e, nil).Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Len(t, res.Cookies(), 1)
	assert.True(t, res.Cookies()[0].Secure)
}

// A form posted from another site is refused, whatever cookie the
// browser sends with it.
func TestCrossSiteFormPostIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	cookie := sessionCookie + "=" + e.srv.newSession(time.Now())
	for _, h := range [][]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Origin", "https://evil.example"},
	} {
		for _, p := range []string{"/upload", "/login", "/logout", "/agents/support/deploy", "/agents/support/attach"} {
			r := e.doToken("", "POST", p, []byte("token="+testToken), "Content-Type", "application/x-www-form-urlencoded", "Cookie", cookie, h[0], h[1])
			assert.Equal(t, http.StatusForbidden, r.status, "%s %v", p, h)
			assert.Equal(t, "CrossOriginRequest", r.errCode(t))
		}
	}
	r := e.doToken("", "POST", "/login", []byte("token="+testToken), "Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "same-origin")
	assert.Equal(t, http.StatusOK, r.status, "followed to the list page: %s", r.body)
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, p := range []string{"/login", "/api/v1/platform/toolsets", "/nosuch", "/style.css"} {
		r := e.do("GET", p, nil)
		csp := r.header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "default-src 'none'", p)
		assert.Contains(t, csp, "frame-ancestors 'none'", p)
		assert.NotContains(t, csp, "script-src", p)
		assert.NotContains(t, csp, "http", p)
		assert.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"), p)
		assert.Equal(t, "no-referrer", r.header.Get("Referrer-Policy"), p)
		assert.Equal(t, "DENY", r.header.Get("X-Frame-Options"), p)
	}
}

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o600))
		return p
	}
	tok, err := LoadToken(write("ok", "  "+testToken+"\n"))
	require.NoError(t, err)
	assert.Equal(t, testToken, tok)

	t.Setenv(TokenEnv, " "+testToken+" ")
	tok, err = LoadToken("")
	require.NoError(t, err)
	assert.Equal(t, testToken, tok)
	t.Setenv(TokenEnv, "")
	_, err = LoadToken("")
	assert.ErrorIs(t, err, ErrNoToken)

	for name, data := range map[string]string{
		"short": "abc", "space": "abcdefgh ijklmnopqrst", "ctrl": "abcdefghijklmnop\x01q",
		"unicode": "abcdefghijklmnopé", "empty": "", "huge": strings.Repeat("a", maxTokenFile+1),
	} {
		_, err := LoadToken(write(name, data))
		assert.Error(t, err, name)
	}
	_, err = LoadToken(filepath.Join(dir, "nosuch"))
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestRequireTokenPanicsOnAWeakToken(t *testing.T) {
	t.Parallel()
	assert.Panics(t, func() { RequireToken("short", http.NotFoundHandler()) })
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Disposition", "attachment")
	WriteError(rec, http.StatusTeapot, "Teapot", "short and stout")
	assert.Equal(t, http.StatusTeapot, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.Empty(t, rec.Header().Get("Content-Disposition"))
	assert.JSONEq(t, `{"error":{"code":"Teapot","message":"short and stout"}}`, rec.Body.String())

	// Read with curl, a message says <token>, not \u003ctoken\u003e.
	rec = httptest.NewRecorder()
	WriteError(rec, http.StatusUnauthorized, "Unauthorized", "send Authorization: Bearer <token> & retry")
	assert.Equal(t, `{"error":{"code":"Unauthorized","message":"send Authorization: Bearer <token> & retry"}}`+"\n", rec.Body.String())
}

func readBody(t testing.TB, res *http.Response) []byte {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return b
}

// A session cookie captured before its owner logged out (a shared
// machine, a proxy's log) opens nothing afterwards.
func TestSessionReplayAfterLogoutIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := noRedirect(e, jar)
	res, err := c.PostForm(e.hs.URL+"/login", url.Values{"token": {testToken}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Len(t, res.Cookies(), 1)
	stolen := res.Cookies()[0].Value

	get := func(value string) int {
		req, _ := http.NewRequest("GET", e.hs.URL+"/", nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: value})
		res, err := noRedirect(e, nil).Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	require.Equal(t, http.StatusOK, get(stolen))
	res, err = c.PostForm(e.hs.URL+"/logout", nil)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	assert.Equal(t, http.StatusSeeOther, get(stolen), "the session ended with the logout")

	// Another login is another session, unaffected by the first's end.
	res, err = c.PostForm(e.hs.URL+"/login", url.Values{"token": {testToken}})
	require.NoError(t, err)
	res.Body.Close()
	require.Len(t, res.Cookies(), 1)
	assert.NotEqual(t, stolen, res.Cookies()[0].Value)
	assert.Equal(t, http.StatusOK, get(res.Cookies()[0].Value))
}

// Anyone can post the login form: a flood of wrong tokens is logged as
// a count, not a line each.
func TestWrongLoginFloodDoesNotFloodTheLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for range 50 {
		r := e.doToken("", "POST", "/login", []byte("token=wrong-token-0123456789abcdef"), "Content-Type", "application/x-www-form-urlencoded")
		require.Equal(t, http.StatusUnauthorized, r.status)
	}
	assert.Equal(t, 1, strings.Count(e.logs.String(), "wrong token"), "%s", e.logs.String())
}
