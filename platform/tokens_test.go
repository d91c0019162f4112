package platform

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// routeScopes is what each route of the server needs: the platform's
// promise to its users, written out here apart from the code. A route
// the server has and this table lacks (or the reverse) fails
// TestEveryRouteNeedsItsScope.
var routeScopes = map[string]Scope{
	"POST /api/v1/platform/toolsets":                ScopePublish,
	"GET /api/v1/platform/toolsets":                 ScopeRead,
	"GET /api/v1/platform/toolsets/buildTarget":     ScopeRead,
	"GET /api/v1/platform/toolsets/{name}":          ScopeRead,
	"DELETE /api/v1/platform/toolsets/{name}":       ScopePublish,
	"PUT /api/v1/platform/toolsets/{name}/package":  ScopePublish,
	"GET /api/v1/platform/toolsets/{name}/package":  ScopeRead,
	"PATCH /api/v1/platform/toolsets/{name}/config": ScopePublish,
	"GET /api/v1/platform/toolsets/{name}/config":   ScopeRead,
	"GET /api/v1/platform/agents":                   ScopeRead,
	"PUT /api/v1/platform/agents/{name}":            ScopeAgents,
	"POST /api/v1/platform/agents/{name}/check":     ScopeAgents,
	"GET /api/v1/platform/agents/{name}":            ScopeRead,
	"DELETE /api/v1/platform/agents/{name}":         ScopeAgents,
	"POST /api/v1/platform/agents/{name}/deploy":    ScopeAgents,
	"GET /api/v1/platform/agents/{name}/effective":  ScopeRead,
	"GET /api/v1/platform/skills":                   ScopeRead,
	"GET /api/v1/platform/skills/{name}":            ScopeRead,
	"GET /api/v1/platform/skills/{name}/archive":    ScopeRead,
	"PUT /api/v1/platform/skills/{name}":            ScopePublish,
	"DELETE /api/v1/platform/skills/{name}":         ScopePublish,
	"POST /api/v1/platform/tokens":                  ScopeAdmin,
	"GET /api/v1/platform/tokens":                   ScopeAdmin,
	"DELETE /api/v1/platform/tokens/{name}":         ScopeAdmin,
	// The page: "" needs no login.
	"GET /{$}":                   ScopeRead,
	"GET /toolsets/{name}":       ScopeRead,
	"POST /upload":               ScopePublish,
	"GET /agents":                ScopeRead,
	"GET /agents/{name}":         ScopeRead,
	"POST /agents/{name}/deploy": ScopeAgents,
	"GET /agents/{name}/attach":  ScopeAgents,
	"POST /agents/{name}/attach": ScopeAgents,
	"GET /skills":                ScopeRead,
	"GET /skills/{name}":         ScopeRead,
	"GET /style.css":             "",
	"GET /login":                 "",
	"POST /login":                "",
	"POST /logout":               "",
}

// createToken creates a stored token through the API with the server's
// own token and returns the answer.
func (e *testEnv) createToken(name string, scopes ...Scope) NewToken {
	e.t.Helper()
	body, err := json.Marshal(map[string]any{"name": name, "scopes": scopes})
	require.NoError(e.t, err)
	r := e.do("POST", "/api/v1/platform/tokens", body)
	require.Equal(e.t, http.StatusCreated, r.status, "%s", r.body)
	var nt NewToken
	require.NoError(e.t, json.Unmarshal(r.body, &nt))
	return nt
}

// login logs in through the page's form with the secret and returns a
// client holding the session, which follows no redirect.
func (e *testEnv) login(secret string) *http.Client {
	e.t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(e.t, err)
	c := noRedirect(e, jar)
	res, err := c.PostForm(e.hs.URL+"/login", url.Values{"token": {secret}})
	require.NoError(e.t, err)
	res.Body.Close()
	require.Equal(e.t, http.StatusSeeOther, res.StatusCode)
	return c
}

// samplePath is a path the pattern's route matches.
func samplePath(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	path = strings.ReplaceAll(path, "{name}", "x")
	path = strings.ReplaceAll(path, "{$}", "")
	return method, path
}

// Every route, of the API and of the page, refuses a token lacking its
// scope (403 Forbidden, in JSON for the API) and serves one holding it;
// a read token reads everything, admin does everything.
func TestEveryRouteNeedsItsScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	got := map[string]Scope{}
	for _, r := range e.srv.Routes() {
		_, dup := got[r.Pattern]
		require.False(t, dup, "%s registered twice", r.Pattern)
		got[r.Pattern] = r.Scope
	}
	for p, want := range routeScopes {
		s, ok := got[p]
		if assert.True(t, ok, "the server has no route %s", p) {
			assert.Equal(t, want, s, "the scope of %s", p)
		}
	}
	for p := range got {
		_, ok := routeScopes[p]
		assert.True(t, ok, "the route %s is missing from routeScopes: say which scope it needs", p)
	}

	secrets := map[Scope]string{}
	sessions := map[Scope]*http.Client{}
	for _, sc := range AllScopes {
		secrets[sc] = e.createToken("only-"+string(sc), sc).Secret
		sessions[sc] = e.login(secrets[sc])
	}
	for _, r := range e.srv.Routes() {
		method, path := samplePath(r.Pattern)
		for _, held := range AllScopes {
			allowed := setOf([]Scope{held}).allows(r.Scope)
			what := fmt.Sprintf("%s with a %s token", r.Pattern, held)
			if !strings.HasPrefix(path, apiPrefix) {
				if r.Scope == "" {
					continue
				}
				req, err := http.NewRequest(method, e.hs.URL+path, nil)
				require.NoError(t, err)
				res, err := sessions[held].Do(req)
				require.NoError(t, err)
				body := readBody(t, res)
				assert.NotEqual(t, http.StatusSeeOther, res.StatusCode, "%s: the session holds", what)
				if allowed {
					assert.NotEqual(t, http.StatusForbidden, res.StatusCode, "%s: %s", what, body)
				} else {
					assert.Equal(t, http.StatusForbidden, res.StatusCode, what)
					assert.Contains(t, string(body), "lacks the "+string(r.Scope)+" scope", what)
				}
				continue
			}
			res := e.doToken(secrets[held], method, path, nil)
			assert.NotEqual(t, http.StatusUnauthorized, res.status, what)
			if allowed {
				assert.NotEqual(t, http.StatusForbidden, res.status, "%s: %s", what, res.body)
				continue
			}
			if assert.Equal(t, http.StatusForbidden, res.status, "%s: %s", what, res.body) {
				var eb ErrorBody
				require.NoError(t, json.Unmarshal(res.body, &eb), what)
				assert.Equal(t, "Forbidden", eb.Error.Code, what)
				assert.Equal(t, "this token lacks the "+string(r.Scope)+" scope", eb.Error.Message, what)
				assert.Equal(t, "application/json", res.header.Get("Content-Type"), what)
			}
		}
		// The server's own token is an admin token.
		if strings.HasPrefix(path, apiPrefix) {
			res := e.do(method, path, nil)
			assert.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, res.status, "%s with the server's token: %s", r.Pattern, res.body)
		}
	}
	// A request no route matches needs a token, and no more.
	r := e.doToken(secrets[ScopeRead], "GET", "/api/v1/platform/nosuch", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	r = e.doToken(secrets[ScopeRead], "POST", "/api/v1/platform/toolsets/x", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
}

// A route the API's mux holds but whose scope was never declared needs
// admin: an omission fails closed.
func TestUndeclaredRouteNeedsAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/platform/undeclared", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := e.srv.authorize(mux, mux)
	for _, c := range []struct {
		who  principal
		want int
	}{
		{principal{scopes: setOf([]Scope{ScopeRead, ScopePublish, ScopeAgents})}, http.StatusForbidden},
		{principal{scopes: ScopeAdmin.bit()}, http.StatusNoContent},
	} {
		req := withPrincipal(mustRequest(t, "POST", "/api/v1/platform/undeclared"), c.who)
		rec := &statusRecorder{header: http.Header{}}
		h.ServeHTTP(rec, req)
		assert.Equal(t, c.want, rec.code)
	}
}

func mustRequest(t *testing.T, method, path string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://127.0.0.1"+path, nil)
	require.NoError(t, err)
	return req
}

type statusRecorder struct {
	header http.Header
	code   int
}

func (s *statusRecorder) Header() http.Header { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return len(b), nil
}
func (s *statusRecorder) WriteHeader(code int) { s.code = code }

// Create, list, use, revoke: the secret is shown once, kept hashed, and
// opens nothing from the request after its revocation.
func TestTokenLifecycle(t *testing.T) {
	dir := storeDir(t)
	e := openEnv(t, dir, nil)
	start := time.Now().Add(-time.Second)
	nt := e.createToken("ci", ScopePublish, ScopeRead)
	assert.True(t, strings.HasPrefix(nt.Secret, TokenPrefix), nt.Secret)
	assert.GreaterOrEqual(t, len(nt.Secret), len(TokenPrefix)+43, "256 random bits")
	assert.Equal(t, "ci", nt.Name)
	assert.Equal(t, []Scope{ScopeRead, ScopePublish}, nt.Scopes, "in the order of AllScopes")
	assert.WithinRange(t, nt.CreatedAt, start.Truncate(time.Second), time.Now())
	assert.Nil(t, nt.LastUsedAt)
	other := e.createToken("bot", ScopeAgents)
	assert.NotEqual(t, nt.Secret, other.Secret)

	// On disk: the hash, never the secret.
	file := filepath.Join(dir, ".platform", "tokens", "ci.json")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(nt.Secret))
	assert.Contains(t, string(data), hex.EncodeToString(sum[:]))
	assert.NotContains(t, string(data), nt.Secret)
	assert.NotContains(t, string(data), strings.TrimPrefix(nt.Secret, TokenPrefix))
	fi, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The secret works, and its use is noted.
	r := e.doToken(nt.Secret, "POST", "/api/v1/platform/toolsets", []byte(`{"name":"weather"}`))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	// The listing: never a secret, never a hash.
	r = e.do("GET", "/api/v1/platform/tokens", nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.NotContains(t, string(r.body), nt.Secret)
	assert.NotContains(t, string(r.body), hex.EncodeToString(sum[:]))
	assert.NotContains(t, string(r.body), "secret")
	assert.NotContains(t, string(r.body), "sha256")
	var list List[TokenInfo]
	require.NoError(t, json.Unmarshal(r.body, &list))
	require.Len(t, list.Data, 2)
	assert.Equal(t, 2, list.Meta.Total)
	assert.Equal(t, "bot", list.Data[0].Name)
	assert.Equal(t, "ci", list.Data[1].Name)
	require.NotNil(t, list.Data[1].LastUsedAt)
	assert.Nil(t, list.Data[0].LastUsedAt)
	r = e.do("GET", "/api/v1/platform/tokens?pageSize=1&page=2", nil)
	require.NoError(t, json.Unmarshal(r.body, &list))
	require.Len(t, list.Data, 1)
	assert.Equal(t, "ci", list.Data[0].Name)

	// The secret is shown once: a second create of the name is refused,
	// and nothing gives it again.
	r = e.do("POST", "/api/v1/platform/tokens", []byte(`{"name":"ci","scopes":["read"]}`))
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, "Conflict", r.errCode(t))
	assert.NotContains(t, string(r.body), nt.Secret)

	// A restart keeps the tokens.
	e.close()
	e = openEnv(t, dir, nil)
	r = e.doToken(nt.Secret, "GET", "/api/v1/platform/toolsets/weather", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	// Revoked: refused from the next request, gone from the list and
	// from the disk.
	r = e.do("DELETE", "/api/v1/platform/tokens/ci", nil)
	require.Equal(t, http.StatusNoContent, r.status, "%s", r.body)
	r = e.doToken(nt.Secret, "GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, "Unauthorized", r.errCode(t))
	_, err = os.Stat(file)
	assert.ErrorIs(t, err, os.ErrNotExist)
	r = e.do("DELETE", "/api/v1/platform/tokens/ci", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "NotFound", r.errCode(t))
	r = e.doToken(other.Secret, "GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, http.StatusOK, r.status, "the other token is untouched")

	// A new token of the revoked one's name is another secret.
	again := e.createToken("ci", ScopeRead)
	assert.NotEqual(t, nt.Secret, again.Secret)
	r = e.doToken(nt.Secret, "GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.NotContains(t, e.logs.String(), nt.Secret, "a secret is never logged")
	assert.NotContains(t, e.logs.String(), again.Secret, "a secret is never logged")
}

// A stored admin token manages tokens; a token of another scope cannot
// make itself one.
func TestOnlyAdminManagesTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	admin := e.createToken("root", ScopeAdmin)
	pub := e.createToken("pub", ScopePublish, ScopeAgents)
	r := e.doToken(pub.Secret, "POST", "/api/v1/platform/tokens", []byte(`{"name":"escalate","scopes":["admin"]}`))
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.Equal(t, "Forbidden", r.errCode(t))
	r = e.doToken(pub.Secret, "DELETE", "/api/v1/platform/tokens/root", nil)
	assert.Equal(t, http.StatusForbidden, r.status)
	r = e.doToken(admin.Secret, "POST", "/api/v1/platform/tokens", []byte(`{"name":"made","scopes":["read"]}`))
	assert.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = e.doToken(admin.Secret, "DELETE", "/api/v1/platform/tokens/pub", nil)
	assert.Equal(t, http.StatusNoContent, r.status)
	// An admin token may revoke itself; it then opens nothing.
	r = e.doToken(admin.Secret, "DELETE", "/api/v1/platform/tokens/root", nil)
	assert.Equal(t, http.StatusNoContent, r.status)
	r = e.doToken(admin.Secret, "GET", "/api/v1/platform/tokens", nil)
	assert.Equal(t, http.StatusUnauthorized, r.status)
}

// Without authentication everything is open, the tokens' routes too.
func TestInsecureNoAuthOpensTheTokenRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{InsecureNoAuth: true})
	r := e.doToken("", "POST", "/api/v1/platform/tokens", []byte(`{"name":"later","scopes":["read"]}`))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = e.doToken("", "GET", "/api/v1/platform/tokens", nil)
	assert.Equal(t, http.StatusOK, r.status)
	r = e.doToken("", "GET", "/", nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, string(r.body), `form class="upload"`)
}

// The page: a read-only session sees no upload form and is refused an
// upload; a publish session sees it; revoking the token ends its
// sessions.
func TestPageSessionCarriesTheTokensScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("weather", goodPackage(t, "forecast", "Tells the weather.", 0))
	e.settle("weather")
	ro := e.createToken("viewer", ScopeRead)
	pub := e.createToken("publisher", ScopePublish)
	roc, pubc := e.login(ro.Secret), e.login(pub.Secret)

	get := func(c *http.Client, path string) (int, string) {
		t.Helper()
		res, err := c.Get(e.hs.URL + path)
		require.NoError(t, err)
		return res.StatusCode, string(readBody(t, res))
	}
	for _, p := range []string{"/", "/toolsets/weather"} {
		code, body := get(roc, p)
		require.Equal(t, http.StatusOK, code, p)
		assert.NotContains(t, body, `form class="upload"`, p)
		assert.NotContains(t, body, `action="/upload"`, p)
		assert.Contains(t, body, "Log out", p)
		code, body = get(pubc, p)
		require.Equal(t, http.StatusOK, code, p)
		assert.Contains(t, body, `form class="upload"`, p)
	}
	_, body := get(roc, "/")
	assert.Contains(t, body, "weather")

	post := func(c *http.Client) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", e.hs.URL+"/upload", strings.NewReader("--x--\r\n"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
		res, err := c.Do(req)
		require.NoError(t, err)
		return res.StatusCode, string(readBody(t, res))
	}
	code, body := post(roc)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "lacks the publish scope")
	code, _ = post(pubc)
	assert.Equal(t, http.StatusBadRequest, code, "reaches the form's checks")

	// The session never opens the API, whatever its token's scopes.
	req, _ := http.NewRequest("GET", e.hs.URL+"/api/v1/platform/toolsets", nil)
	res, err := pubc.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)

	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/platform/tokens/viewer", nil).status)
	code, _ = get(roc, "/")
	assert.Equal(t, http.StatusSeeOther, code, "the revoked token's session ended")
	code, _ = get(pubc, "/")
	assert.Equal(t, http.StatusOK, code, "another token's session goes on")
	// Nor does a token made again under the name revive the session.
	e.createToken("viewer", ScopeRead)
	code, _ = get(roc, "/")
	assert.Equal(t, http.StatusSeeOther, code)
}

// What a client may send to the tokens' routes is bounded and checked:
// every refusal a clear JSON error, nothing stored.
func TestTokenRequestsAreChecked(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	e := openEnv(t, dir, nil)
	huge := `{"name":"big","scopes":["read"],"x":"` + strings.Repeat("a", MaxJSONBody) + `"}`
	for _, c := range []struct {
		body   string
		status int
		code   string
	}{
		{huge, http.StatusRequestEntityTooLarge, "RequestTooLarge"},
		{`{"name":"../etc","scopes":["read"]}`, http.StatusBadRequest, "InvalidName"},
		{`{"name":"","scopes":["read"]}`, http.StatusBadRequest, "InvalidName"},
		{`{"name":"a b","scopes":["read"]}`, http.StatusBadRequest, "InvalidName"},
		{`{"name":"` + strings.Repeat("n", 65) + `","scopes":["read"]}`, http.StatusBadRequest, "InvalidName"},
		{`{"name":".hidden","scopes":["read"]}`, http.StatusBadRequest, "InvalidName"},
		{`{"name":"ok","scopes":["root"]}`, http.StatusBadRequest, "InvalidRequest"},
		{`{"name":"ok","scopes":["Read"]}`, http.StatusBadRequest, "InvalidRequest"},
		{`{"name":"ok","scopes":[]}`, http.StatusBadRequest, "InvalidRequest"},
		{`{"name":"ok"}`, http.StatusBadRequest, "InvalidRequest"},
		{`{"name":"ok","scopes":["read","read"]}`, http.StatusBadRequest, "InvalidRequest"},
		{`{"name":"ok","scopes":["read","publish","agents","admin","read"]}`, http.StatusBadRequest, "InvalidRequest"},
		{`{"name":"ok","scopes":"read"}`, http.StatusBadRequest, "InvalidRequest"},
		{`{"name":"ok","scopes":["read"],"secret":"tsp_mine"}`, http.StatusBadRequest, "InvalidRequest"},
		{`{"name":"ok","scopes":["read"]} {}`, http.StatusBadRequest, "InvalidRequest"},
		{`not json`, http.StatusBadRequest, "InvalidRequest"},
	} {
		r := e.do("POST", "/api/v1/platform/tokens", []byte(c.body))
		what := c.body
		if len(what) > 80 {
			what = what[:80]
		}
		assert.Equal(t, c.status, r.status, "%s: %s", what, r.body)
		assert.Equal(t, c.code, r.errCode(t), what)
		assert.Less(t, len(r.body), 2048, "the answer quotes a bounded part: %s", what)
	}
	for _, p := range []string{"/api/v1/platform/tokens/..%2f..%2fetc", "/api/v1/platform/tokens/a%20b"} {
		r := e.do("DELETE", p, nil)
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, r.status, p)
	}
	des, err := os.ReadDir(filepath.Join(dir, ".platform", "tokens"))
	require.NoError(t, err)
	assert.Empty(t, des, "nothing stored")
}

// Secrets near a real one open nothing: the hash on disk, the secret cut
// or changed by a byte, another case.
func TestNearMissSecretsAreRefused(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	e := openEnv(t, dir, nil)
	nt := e.createToken("ci", ScopeAdmin)
	sum := sha256.Sum256([]byte(nt.Secret))
	flip := []byte(nt.Secret)
	flip[len(flip)-1] ^= 1
	for _, tok := range []string{
		hex.EncodeToString(sum[:]),
		nt.Secret[:len(nt.Secret)-1],
		string(flip),
		strings.ToUpper(nt.Secret),
		strings.TrimPrefix(nt.Secret, TokenPrefix),
		nt.Secret + "x",
		TokenPrefix,
		strings.Repeat("a", maxTokenFile+1),
	} {
		r := e.doToken(tok, "GET", "/api/v1/platform/toolsets", nil)
		assert.Equal(t, http.StatusUnauthorized, r.status, "%.80s", tok)
	}
	r := e.doToken(nt.Secret, "GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, http.StatusOK, r.status)
	r = e.doToken("  "+nt.Secret+" ", "GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, http.StatusOK, r.status, "white space around is ignored, as for the server's token")
}

// The lookup of a token compares the hash of what was sent with every
// stored token's, and stops at none: the one that matches is found as
// late as the last, and a miss costs as many comparisons as a hit.
func TestTokenLookupComparesEveryToken(t *testing.T) {
	t.Parallel()
	ts := &tokenStore{toks: map[string]*storedToken{}, log: slog.New(slog.DiscardHandler)}
	ts.dir = t.TempDir()
	var sums [][sha256.Size]byte
	for i := range 50 {
		name := fmt.Sprintf("t%02d", i)
		sum := sha256.Sum256([]byte(name))
		now := time.Now()
		ts.toks[name] = &storedToken{rec: tokenRecord{Name: name, Scopes: []Scope{ScopeRead}, LastUsedAt: &now}, sum: sum, scopes: ScopeRead.bit()}
		sums = append(sums, sum)
	}
	for i, sum := range sums {
		p, ok := ts.match(sum)
		require.True(t, ok)
		assert.Equal(t, fmt.Sprintf("t%02d", i), p.name)
	}
	// A digest one bit from a stored one is no match.
	near := sums[7]
	near[31] ^= 1
	_, ok := ts.match(near)
	assert.False(t, ok)
}

// Too many tokens: the create past MaxTokens is refused 409
// TooManyTokens; a revocation makes room.
func TestTooManyTokens(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	tdir := filepath.Join(dir, ".platform", "tokens")
	require.NoError(t, os.MkdirAll(tdir, 0o700))
	for i := range MaxTokens {
		name := fmt.Sprintf("t%04d", i)
		sum := sha256.Sum256([]byte(name))
		rec := tokenRecord{Name: name, Scopes: []Scope{ScopeRead}, SHA256: hex.EncodeToString(sum[:]), CreatedAt: time.Now().UTC()}
		data, err := json.Marshal(rec)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(tdir, name+".json"), data, 0o600))
	}
	e := openEnv(t, dir, nil)
	r := e.do("POST", "/api/v1/platform/tokens", []byte(`{"name":"one-more","scopes":["read"]}`))
	assert.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	assert.Equal(t, "TooManyTokens", r.errCode(t))
	r = e.do("GET", "/api/v1/platform/tokens?pageSize=500&page=2", nil)
	var list List[TokenInfo]
	require.NoError(t, json.Unmarshal(r.body, &list))
	assert.Equal(t, MaxTokens, list.Meta.Total)
	assert.Len(t, list.Data, 500)
	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/platform/tokens/t0000", nil).status)
	e.createToken("one-more", ScopeRead)
}

// What is in the tokens' folder is untrusted: a record that does not
// parse, names another token, has no valid hash or scope, is too large,
// or is a link, opens nothing, and the server says so in its log.
func TestBadTokenFilesOpenNothing(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	tdir := filepath.Join(dir, ".platform", "tokens")
	require.NoError(t, os.MkdirAll(tdir, 0o700))
	secret := "tsp_planted-0123456789abcdef"
	sum := sha256.Sum256([]byte(secret))
	h := hex.EncodeToString(sum[:])
	files := map[string]string{
		"garbage.json":   "{not json",
		"other.json":     `{"name":"someone","scopes":["admin"],"sha256":"` + h + `","createdAt":"2026-01-01T00:00:00Z"}`,
		"noscope.json":   `{"name":"noscope","scopes":[],"sha256":"` + h + `","createdAt":"2026-01-01T00:00:00Z"}`,
		"badscope.json":  `{"name":"badscope","scopes":["root"],"sha256":"` + h + `","createdAt":"2026-01-01T00:00:00Z"}`,
		"badhash.json":   `{"name":"badhash","scopes":["admin"],"sha256":"` + secret + `","createdAt":"2026-01-01T00:00:00Z"}`,
		"extra.json":     `{"name":"extra","scopes":["admin"],"sha256":"` + h + `","createdAt":"2026-01-01T00:00:00Z","x":1}`,
		"huge.json":      `{"name":"huge","scopes":["admin"],"sha256":"` + h + `","createdAt":"2026-01-01T00:00:00Z"}` + strings.Repeat(" ", maxTokenRecord),
		"bad name!.json": `{"name":"bad name!","scopes":["admin"],"sha256":"` + h + `","createdAt":"2026-01-01T00:00:00Z"}`,
	}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(tdir, name), []byte(data), 0o600))
	}
	target := filepath.Join(t.TempDir(), "real.json")
	require.NoError(t, os.WriteFile(target, []byte(`{"name":"link","scopes":["admin"],"sha256":"`+h+`","createdAt":"2026-01-01T00:00:00Z"}`), 0o600))
	require.NoError(t, os.Symlink(target, filepath.Join(tdir, "link.json")))

	e := openEnv(t, dir, nil)
	r := e.doToken(secret, "GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	r = e.do("GET", "/api/v1/platform/tokens", nil)
	var list List[TokenInfo]
	require.NoError(t, json.Unmarshal(r.body, &list))
	assert.Empty(t, list.Data)
	logs := e.logs.String()
	for _, name := range []string{"garbage", "other", "noscope", "badscope", "badhash", "extra", "huge"} {
		assert.Contains(t, logs, "token="+name, name)
	}
	assert.Contains(t, logs, "bad name!.json")
	assert.Contains(t, logs, "link.json")
}

func TestParseScopes(t *testing.T) {
	t.Parallel()
	got, err := ParseScopes(" publish, read ")
	require.NoError(t, err)
	assert.Equal(t, []Scope{ScopeRead, ScopePublish}, got)
	got, err = ParseScopes("admin")
	require.NoError(t, err)
	assert.Equal(t, []Scope{ScopeAdmin}, got)
	for _, bad := range []string{"", " ", "read,", ",read", "read,read", "Read", "root", "read publish", strings.Repeat("read,", 1000)} {
		_, err := ParseScopes(bad)
		assert.Error(t, err, "%q", bad)
	}
	for _, s := range AllScopes {
		assert.True(t, s.Valid())
	}
	assert.False(t, Scope("").Valid())
	assert.False(t, Scope("root").Valid())
}

// What each scope allows: admin everything, every scope reads, the
// others only themselves.
func TestScopeImplications(t *testing.T) {
	t.Parallel()
	for _, held := range AllScopes {
		set := setOf([]Scope{held})
		for _, need := range AllScopes {
			want := held == ScopeAdmin || need == ScopeRead || need == held
			assert.Equal(t, want, set.allows(need), "%s allows %s", held, need)
		}
		assert.False(t, set.allows(""), "no scope is no route's")
	}
	assert.False(t, scopeSet(0).allows(ScopeRead), "nobody reads nothing")
}

func FuzzParseScopes(f *testing.F) {
	for _, s := range []string{"read", "read,publish", " admin ", "", "read,read", "x,y,z,w,v", "publish,agents,admin,read"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scopes, err := ParseScopes(s)
		if err != nil {
			require.Empty(t, scopes)
			require.Less(t, len(err.Error()), 1024, "a bounded message")
			return
		}
		require.NotEmpty(t, scopes)
		require.LessOrEqual(t, len(scopes), len(AllScopes))
		for _, sc := range scopes {
			require.True(t, sc.Valid())
		}
		again, err := ParseScopes(joinScopes(scopes))
		require.NoError(t, err)
		require.Equal(t, scopes, again)
	})
}

func joinScopes(scopes []Scope) string {
	s := make([]string, len(scopes))
	for i, sc := range scopes {
		s[i] = string(sc)
	}
	return strings.Join(s, ",")
}

// A stored record, whatever its bytes, loads as a valid token or is an
// error: never a panic, never a token without scopes or hash.
func FuzzTokenRecord(f *testing.F) {
	sum := sha256.Sum256([]byte("x"))
	good := `{"name":"ci","scopes":["read"],"sha256":"` + hex.EncodeToString(sum[:]) + `","createdAt":"2026-01-01T00:00:00Z"}`
	for _, s := range []string{good, `{}`, `{"name":"ci","scopes":["admin","admin"]}`, `{"name":"ci","scopes":null,"sha256":""}`, "\x00", `[`} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	ts := &tokenStore{dir: dir, toks: map[string]*storedToken{}, log: slog.New(slog.DiscardHandler)}
	f.Fuzz(func(t *testing.T, data []byte) {
		require.NoError(t, os.WriteFile(ts.path("ci"), data, 0o600))
		st, err := ts.read("ci")
		if err != nil {
			return
		}
		require.Equal(t, "ci", st.rec.Name)
		require.NotZero(t, st.scopes)
		require.Equal(t, hex.EncodeToString(st.sum[:]), strings.ToLower(st.rec.SHA256))
		_, err = checkScopes(st.rec.Scopes)
		require.NoError(t, err)
	})
}
