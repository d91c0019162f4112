package mcptoolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

var userKey = toolset.NewKey[string]("test_user")

// turnAs builds the tools of ts in a turn of a run of user.
func turnAs(t *testing.T, ts toolset.Toolset, user string) (context.Context, *toolset.ToolList, error) {
	t.Helper()
	run := toolset.NewRun("", toolset.WithValue(userKey, user))
	t.Cleanup(run.End)
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "agent", ts)
	return turn, tools, err
}

func execText(t *testing.T, ctx context.Context, tools *toolset.ToolList, name string) string {
	t.Helper()
	res, err := tools.Execute(ctx, toolset.ToolCall{ID: "1", Name: name, Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	text, err := toolset.ResultText(res)
	require.NoError(t, err)
	return text
}

// One toolset serves two users, each calling the server with a token of
// their own: the server sees two users with their own scopes.
func TestOAuthClientIdentityPerRun(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools", "admin")
	as.addService("ops", "ops-secret")
	as.addService("viewer", "viewer-secret")
	hs := oauthMCP(t, as)
	scopes := map[string][]string{"ops": {"tools", "admin"}, "viewer": {"tools"}}
	var mu sync.Mutex
	asked := map[string]int{}
	ts := mcptoolset.NewHTTP(hs.URL+"/mcp",
		mcptoolset.WithIdentity(userKey),
		mcptoolset.WithMaxIdentities(1),
		mcptoolset.WithTokenSource(func(_ context.Context, id string) (oauth2.TokenSource, error) {
			mu.Lock()
			asked[id]++
			mu.Unlock()
			if _, ok := scopes[id]; !ok {
				return nil, errors.New("unknown user")
			}
			return as.serviceSource(id, id+"-secret", scopes[id]...), nil
		}))
	defer ts.Close()

	who := map[string]string{}
	for range 2 { // the bound of one identity closes the other's connection each time
		for _, user := range []string{"ops", "viewer"} {
			turn, tools, err := turnAs(t, ts, user)
			require.NoError(t, err)
			if user == "ops" {
				assert.ElementsMatch(t, []string{"admin_reset", "whoami"}, tools.Names())
			} else {
				assert.Equal(t, []string{"whoami"}, tools.Names())
			}
			text := execText(t, turn, tools, "whoami")
			assert.True(t, strings.HasSuffix(text, " "+strings.Join(sorted(scopes[user]), ",")), text)
			if prev, ok := who[user]; ok {
				assert.Equal(t, prev, text, "the same user each time")
			}
			who[user] = text
		}
	}
	assert.NotEqual(t, who["ops"], who["viewer"])
	mu.Lock()
	assert.Equal(t, 2, asked["ops"], "one token source per connection of the identity")
	mu.Unlock()

	// A user whose source fails does not get another's connection.
	_, _, err := turnAs(t, ts, "mallory")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown user")
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// A user without a token gets an AuthRequiredError with the URL of the
// authorization server; once they consent and the toolset completes the
// authorization, their calls go through.
func TestOAuthClientAuthorizationCode(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools", "admin")
	redirect := "http://127.0.0.1:1/callback-of-the-client"
	as.addPublic("desk", redirect)
	hs := oauthMCP(t, as)
	ts := mcptoolset.NewHTTP(hs.URL+"/mcp",
		mcptoolset.WithIdentity(userKey),
		mcptoolset.WithAuthorization(&auth.AuthorizationCodeHandlerConfig{
			PreregisteredClient: &oauthex.ClientCredentials{ClientID: "desk"},
			RedirectURL:         redirect,
		}, 0))
	defer ts.Close()

	_, _, err := turnAs(t, ts, "alice")
	var are *mcptoolset.AuthRequiredError
	require.ErrorAs(t, err, &are)
	assert.Equal(t, "alice", are.Identity)
	assert.Equal(t, hs.URL+"/mcp", are.Resource)
	require.True(t, strings.HasPrefix(are.URL, as.URL+"/authorize?"), are.URL)

	// Asked again before the user answered: the same URL.
	_, _, err = turnAs(t, ts, "alice")
	var again *mcptoolset.AuthRequiredError
	require.ErrorAs(t, err, &again)
	assert.Equal(t, are.URL, again.URL)

	q := consent(t, are.URL)
	require.NotEmpty(t, q.Get("code"))
	ctx := context.Background()
	assert.ErrorIs(t, ts.CompleteAuthorization(ctx, "bob", &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state")}), mcptoolset.ErrNoAuthorization)
	require.Error(t, ts.CompleteAuthorization(ctx, "alice", &auth.AuthorizationResult{Code: q.Get("code"), State: "forged"}), "a wrong state is refused")
	require.NoError(t, ts.CompleteAuthorization(ctx, "alice", &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}))

	turn, tools, err := turnAs(t, ts, "alice")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"admin_reset", "whoami"}, tools.Names())
	assert.True(t, strings.HasSuffix(execText(t, turn, tools, "whoami"), " admin,tools"))

	// Another user of the same toolset has to authorize on their own.
	_, _, err = turnAs(t, ts, "bob")
	require.ErrorAs(t, err, &are)
	assert.Equal(t, "bob", are.Identity)
}

// A server that answers 401 to a toolset without WithAuthorization
// fails the run with an AuthRequiredError, even under
// WithSkipUnavailable.
func TestOAuthClientAuthRequiredWithoutFlow(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools")
	hs := oauthMCP(t, as)
	ts := mcptoolset.NewHTTP(hs.URL+"/mcp", mcptoolset.WithSkipUnavailable(),
		mcptoolset.WithTokenSource(func(context.Context, string) (oauth2.TokenSource, error) {
			return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "not-a-token-of-the-issuer"}), nil
		}))
	defer ts.Close()
	_, _, err := turnAs(t, ts, "")
	var are *mcptoolset.AuthRequiredError
	require.ErrorAs(t, err, &are)
	assert.Empty(t, are.URL)
}

// The token goes to the endpoint's origin and nowhere else: a redirect
// to another origin is refused before anything is sent there.
func TestOAuthClientTokenNeverLeavesTheOrigin(t *testing.T) {
	checkLeaks(t)
	var mu sync.Mutex
	var elsewhere, here []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer other.Close()
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		here = append(here, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer endpoint.Close()
	ts := mcptoolset.NewHTTP(endpoint.URL+"/mcp", mcptoolset.WithTokenSource(func(context.Context, string) (oauth2.TokenSource, error) {
		return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "the-secret-token"}), nil
	}))
	defer ts.Close()
	_, _, err := turnAs(t, ts, "")
	var re *mcptoolset.RedirectError
	require.ErrorAs(t, err, &re)
	assert.NotContains(t, err.Error(), "the-secret-token")
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, here)
	assert.Equal(t, "Bearer the-secret-token", here[0], "the endpoint gets the token")
	assert.Empty(t, elsewhere, "the other origin gets nothing")
}

// A token source that panics fails the turn of its identity, and the
// toolset goes on serving the others.
func TestOAuthClientTokenSourcePanics(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools")
	as.addService("ops", "ops-secret")
	hs := oauthMCP(t, as)
	ts := mcptoolset.NewHTTP(hs.URL+"/mcp", mcptoolset.WithIdentity(userKey),
		mcptoolset.WithTokenSource(func(_ context.Context, id string) (oauth2.TokenSource, error) {
			if id == "ops" {
				return as.serviceSource("ops", "ops-secret", "tools"), nil
			}
			panic("no such user")
		}))
	defer ts.Close()
	_, _, err := turnAs(t, ts, "eve")
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	_, tools, err := turnAs(t, ts, "ops")
	require.NoError(t, err)
	assert.Equal(t, []string{"whoami"}, tools.Names())
}

// A token got by the authorization code flow is refreshed with its
// refresh token (offline_access) when it expires, without asking the
// user again.
func TestOAuthClientAuthorizationRefreshes(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools")
	redirect := "http://127.0.0.1:1/callback-of-the-client"
	as.addPublic("desk", redirect)
	as.store.mu.Lock()
	as.store.shortLived = true
	as.store.mu.Unlock()
	hs := oauthMCP(t, as)
	ts := mcptoolset.NewHTTP(hs.URL+"/mcp",
		mcptoolset.WithIdentity(userKey),
		mcptoolset.WithAuthorization(&auth.AuthorizationCodeHandlerConfig{
			PreregisteredClient: &oauthex.ClientCredentials{ClientID: "desk"},
			RedirectURL:         redirect,
			RequestRefreshToken: true,
		}, 0))
	defer ts.Close()
	_, _, err := turnAs(t, ts, "alice")
	var are *mcptoolset.AuthRequiredError
	require.ErrorAs(t, err, &are)
	assert.Contains(t, are.URL, "offline_access")
	q := consent(t, are.URL)
	require.NoError(t, ts.CompleteAuthorization(context.Background(), "alice", &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}))
	for range 3 {
		turn, tools, err := turnAs(t, ts, "alice")
		require.NoError(t, err)
		assert.True(t, strings.HasSuffix(execText(t, turn, tools, "whoami"), " offline_access,tools"))
	}
	as.store.mu.Lock()
	defer as.store.mu.Unlock()
	assert.Positive(t, as.store.refreshed, "the expiring token was refreshed")
}

// Each identity lists on its own, and what its listing refused is
// explained to its runs.
func TestOAuthClientIdentityRefusals(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools")
	as.addService("ops", "ops-secret")
	v, err := mcptoolset.NewTokenVerifier(context.Background(), as.URL, testAudience, nil)
	require.NoError(t, err)
	cfg := &mcptoolset.OAuthConfig{Verifier: v.Verify, AuthorizationServers: []string{as.URL}}
	sdk := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "v0"}, nil)
	sdk.AddTool(&mcp.Tool{Name: "admin.reset", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	sdk.AddTool(&mcp.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
	})
	hs := httptest.NewServer(cfg.Protect(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdk }, nil)))
	defer hs.Close()
	log, _ := logBuffer()
	ts := mcptoolset.NewHTTP(hs.URL, mcptoolset.WithIdentity(userKey), mcptoolset.WithLogger(log),
		mcptoolset.WithTokenSource(func(context.Context, string) (oauth2.TokenSource, error) {
			return as.serviceSource("ops", "ops-secret", "tools"), nil
		}))
	defer ts.Close()
	turn, tools, err := turnAs(t, ts, "ops")
	require.NoError(t, err)
	assert.Equal(t, []string{"ping"}, tools.Names())
	refused := ts.RefusedTools(turn)
	require.Len(t, refused, 1)
	assert.Equal(t, "admin.reset", refused[0].Name)
	require.Len(t, ts.InvalidTools(), 1)
	other, _, err := turnAs(t, ts, "viewer")
	require.NoError(t, err)
	assert.Len(t, ts.RefusedTools(other), 1, "the other identity listed on its own")
	assert.Len(t, ts.InvalidTools(), 2, "one refusal per identity's listing")
}

// Another identity's turn evicting an identity (beyond WithMaxIdentities)
// whose call is in flight does not cut that call off: the connection
// closes once the call has returned.
func TestIdentityEvictionSparesCallsInFlight(t *testing.T) {
	checkLeaks(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	wait := toolset.NewTool("wait", "Waits.", func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "waited", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	srv := mcptoolset.NewServer(toolset.NewFunction(wait))
	defer srv.Close()
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	defer hs.Close()
	ts := mcptoolset.NewHTTP(hs.URL, mcptoolset.WithIdentity(userKey), mcptoolset.WithMaxIdentities(1),
		mcptoolset.WithCallTimeout(10*time.Second))
	defer ts.Close()

	turn, tools, err := turnAs(t, ts, "alice")
	require.NoError(t, err)
	type answer struct {
		text string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := tools.Execute(turn, toolset.ToolCall{ID: "1", Name: "wait", Args: json.RawMessage(`{}`)})
		text, _ := toolset.ResultText(res)
		done <- answer{text, err}
	}()
	<-started
	_, _, err = turnAs(t, ts, "bob") // evicts alice's connection
	require.NoError(t, err)
	close(release)
	got := <-done
	require.NoError(t, got.err, "alice's call in flight was not cut off")
	assert.Equal(t, "waited", got.text)
}

// panicSource is a token source that gives good tokens n times, then
// panics.
type panicSource struct {
	ts oauth2.TokenSource
	n  atomic.Int32
}

func (p *panicSource) Token() (*oauth2.Token, error) {
	if p.n.Add(-1) < 0 {
		panic("the token store is gone")
	}
	return p.ts.Token()
}

// A token source of WithTokenSource whose Token method panics, on
// whichever request of the SDK's (some made on goroutines of its own),
// fails that identity's requests and neither crashes the program nor
// wedges the connection.
func TestOAuthClientTokenMethodPanics(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools")
	as.addService("ops", "ops-secret")
	hs := oauthMCP(t, as)
	for _, good := range []int32{0, 1, 2, 3, 4} {
		t.Run(fmt.Sprint(good), func(t *testing.T) {
			ts := mcptoolset.NewHTTP(hs.URL+"/mcp", mcptoolset.WithIdentity(userKey),
				mcptoolset.WithCallTimeout(5*time.Second), mcptoolset.WithConnectTimeout(5*time.Second),
				mcptoolset.WithTokenSource(func(_ context.Context, id string) (oauth2.TokenSource, error) {
					src := as.serviceSource("ops", "ops-secret", "tools")
					if id == "ops" {
						return src, nil
					}
					p := &panicSource{ts: src}
					p.n.Store(good)
					return p, nil
				}))
			defer ts.Close()
			turn, tools, err := turnAs(t, ts, "eve")
			for i := 0; err == nil && i < 8; i++ { // each call takes a token
				_, err = tools.Execute(turn, toolset.ToolCall{ID: "1", Name: "whoami", Args: json.RawMessage(`{}`)})
			}
			require.Error(t, err)
			turn, tools, err = turnAs(t, ts, "ops")
			require.NoError(t, err)
			execText(t, turn, tools, "whoami")
		})
	}
}

// Many runs of more identities than WithMaxIdentities keeps, at once:
// each turn lists and calls as its own identity, whichever connection
// the others' turns evict meanwhile.
func TestIdentitiesChurnConcurrently(t *testing.T) {
	checkLeaks(t)
	echo := toolset.NewTool("echo", "Says hi.", func(ctx context.Context, _ struct{}) (string, error) {
		return "hi", nil
	})
	srv := mcptoolset.NewServer(toolset.NewFunction(echo))
	defer srv.Close()
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	defer hs.Close()
	ts := mcptoolset.NewHTTP(hs.URL, mcptoolset.WithIdentity(userKey), mcptoolset.WithMaxIdentities(2),
		mcptoolset.WithCallTimeout(10*time.Second))
	defer ts.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Go(func() {
			for i := range 6 {
				run := toolset.NewRun("", toolset.WithValue(userKey, fmt.Sprint("user", (g+i)%5)))
				turn := run.Turn(context.Background())
				tools, err := toolset.BuildTools(turn, "agent", ts)
				if err == nil {
					_, err = tools.Execute(turn, toolset.ToolCall{ID: "1", Name: "echo", Args: json.RawMessage(`{}`)})
				}
				run.End()
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A malicious server whose authorization server names an authorization
// endpoint of a scheme a browser would run (javascript:, data:), of
// plain http elsewhere than loopback, or at a private address, never
// has its URL handed to the application to send a user to.
func TestOAuthClientRefusesHostileAuthorizationURLs(t *testing.T) {
	checkLeaks(t)
	var endpoint string
	var hs *httptest.Server
	hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+hs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		case "/.well-known/oauth-protected-resource/mcp":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": hs.URL + "/mcp", "authorization_servers": []string{hs.URL}})
		case "/.well-known/oauth-authorization-server":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"issuer": hs.URL, "authorization_endpoint": endpoint,
				"token_endpoint": hs.URL + "/token", "code_challenge_methods_supported": []string{"S256"}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer hs.Close()
	newToolset := func() *mcptoolset.Toolset {
		return mcptoolset.NewHTTP(hs.URL+"/mcp", mcptoolset.WithIdentity(userKey),
			mcptoolset.WithAuthorization(&auth.AuthorizationCodeHandlerConfig{
				PreregisteredClient: &oauthex.ClientCredentials{ClientID: "desk"},
				RedirectURL:         "http://127.0.0.1:1/callback",
			}, 0))
	}
	// The same server with a sound endpoint: its URL is handed on.
	endpoint = hs.URL + "/authorize"
	good := newToolset()
	_, _, err := turnAs(t, good, "alice")
	var are *mcptoolset.AuthRequiredError
	require.ErrorAs(t, err, &are)
	require.True(t, strings.HasPrefix(are.URL, endpoint+"?"), are.URL)
	require.NoError(t, good.Close())

	for _, bad := range []string{"javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<script>1</script>",
		"http://evil.example/authorize", "https://10.0.0.1/authorize", "https://169.254.169.254/authorize"} {
		t.Run(bad, func(t *testing.T) {
			endpoint = bad
			ts := newToolset()
			defer ts.Close()
			_, _, err := turnAs(t, ts, "alice")
			require.Error(t, err)
			var are *mcptoolset.AuthRequiredError
			if errors.As(err, &are) {
				assert.NotContains(t, strings.ToLower(are.URL), strings.ToLower(bad[:10]), "the hostile URL is not handed on")
			}
		})
	}
}
