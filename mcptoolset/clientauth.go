package mcptoolset

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// TokenSourceFunc returns the token source of an identity, for a
// toolset of [NewHTTP] (see [WithTokenSource]). It is called once for
// each connection of the identity, under the context of the run whose
// turn opens it (a panic fails that connection attempt). A nil source with a nil error means the identity has
// no token yet: with [WithAuthorization] the toolset asks the user for
// one, without it the server's 401 fails the run with an
// [*AuthRequiredError].
type TokenSourceFunc func(ctx context.Context, identity string) (oauth2.TokenSource, error)

// DefaultMaxIdentities is the default of [WithMaxIdentities].
const DefaultMaxIdentities = 64

// DefaultAuthorizationTimeout is how long an authorization the toolset
// asked a user for waits for [Toolset.CompleteAuthorization].
const DefaultAuthorizationTimeout = 10 * time.Minute

// WithIdentity makes a toolset of [NewHTTP] call the server as the
// identity that the run's value k names (a user ID, say): one toolset
// serves many users, each with a connection and credentials of their
// own (see [WithTokenSource], [WithAuthorization]). A run without the
// value is the identity "". At most [WithMaxIdentities] identities keep
// a connection; the least recently used one's is closed beyond it.
func WithIdentity(k toolset.Key[string]) Option {
	return func(c *config) { c.identity, c.hasIdentity = k, true }
}

// WithTokenSource gives a toolset of [NewHTTP] the access tokens it sends
// (Authorization: Bearer, to the endpoint's origin only) for each
// identity (see [WithIdentity]; without it, one identity ""). Wrap a
// source that makes a request for each token in oauth2.ReuseTokenSource.
// A panic in fn, or in the Token method of the source it returns, fails
// the connection.
func WithTokenSource(fn TokenSourceFunc) Option {
	return func(c *config) { c.tokenSource = fn }
}

// WithMaxIdentities bounds the identities whose connection a toolset of
// [WithIdentity] keeps; the default is [DefaultMaxIdentities].
func WithMaxIdentities(n int) Option { return func(c *config) { c.maxIdentities = n } }

// WithAuthorization makes a toolset of [NewHTTP] get the tokens of an
// identity that has none (see [WithTokenSource]) by the OAuth
// authorization code flow of the SDK (auth.AuthorizationCodeHandler:
// protected resource metadata, authorization server discovery, client ID
// metadata documents, pre-registration or dynamic registration, PKCE,
// the RFC 9207 iss check, refresh tokens). cfg is copied for each
// identity; its AuthorizationCodeFetcher is the toolset's and is
// ignored. When the server answers 401 for an identity without a token,
// the request fails at once with an [*AuthRequiredError] carrying the
// URL to send the user to; once the authorization server has redirected
// the user to cfg.RedirectURL, give what it sent to
// [Toolset.CompleteAuthorization], and the next turn connects with the
// token. An authorization not completed within timeout (zero for
// [DefaultAuthorizationTimeout]) is dropped, and the next request asks
// again.
func WithAuthorization(cfg *auth.AuthorizationCodeHandlerConfig, timeout time.Duration) Option {
	return func(c *config) { c.authz, c.authzTimeout = cfg, timeout }
}

// AuthRequiredError reports that an MCP server requires authorization
// that the identity has not given: the server answered 401 and there is
// no token to send, or none that it accepts. With [WithAuthorization],
// URL is where to send the user (in a browser); then call
// [Toolset.CompleteAuthorization]. It is returned as the cause of the
// [*ServerError] of the request, so errors.As finds it in the error of
// a turn or a call.
type AuthRequiredError struct {
	// Server is the server's name (see [WithName]).
	Server string
	// Identity is the identity that needs to authorize.
	Identity string
	// Resource is the protected resource the token is for: the endpoint.
	Resource string
	// URL is the authorization URL to send the user to; empty without
	// [WithAuthorization].
	URL string
}

// Error implements error.
func (e *AuthRequiredError) Error() string {
	if e.URL == "" {
		return fmt.Sprintf("MCP server %s requires authorization that identity %q has not given", e.Server, e.Identity)
	}
	return fmt.Sprintf("MCP server %s requires authorization: send the user of identity %q to the authorization URL, then complete it", e.Server, e.Identity)
}

// ErrNoAuthorization is returned by [Toolset.CompleteAuthorization] when
// the identity has no authorization waiting to be completed.
var ErrNoAuthorization = errors.New("mcptoolset: no authorization is waiting for this identity")

// identities are the connections of a toolset of WithIdentity, one per
// identity, least recently used first.
type identities struct {
	newConn func(id string, a *identityAuth) *conn
	max     int
	cfg     *config
	server  string
	base    context.Context // ends when the toolset closes
	stop    context.CancelFunc

	mu     sync.Mutex
	closed bool
	byID   map[string]*list.Element // of *identity
	lru    list.List
	flows  sync.WaitGroup // the authorizations in flight
}

// identity is one identity's connection and credentials.
type identity struct {
	id   string
	c    *conn
	auth *identityAuth
}

func newIdentities(cfg *config, server string, mk func(id string, a *identityAuth) *conn) *identities {
	ids := &identities{newConn: mk, max: cfg.maxIdentities, cfg: cfg, server: server, byID: map[string]*list.Element{}}
	if ids.max <= 0 {
		ids.max = DefaultMaxIdentities
	}
	ids.base, ids.stop = context.WithCancel(context.Background())
	return ids
}

// of returns the identity of the run of ctx.
func (ids *identities) of(ctx context.Context) string {
	if !ids.cfg.hasIdentity {
		return ""
	}
	return ids.cfg.identity.Get(ctx)
}

// conn returns the connection of identity id, making it if needed, held
// (see conn.hold): the caller releases it once done, and until then the
// eviction of the identity does not close it.
func (ids *identities) conn(id string) (*conn, error) {
	ids.mu.Lock()
	if ids.closed {
		ids.mu.Unlock()
		return nil, ErrClosed
	}
	if e, ok := ids.byID[id]; ok {
		ids.lru.MoveToBack(e)
		c := e.Value.(*identity).c
		// Still in the table, so not closed: the eviction that would
		// close it takes it out first, under ids.mu.
		c.hold()
		ids.mu.Unlock()
		return c, nil
	}
	a := &identityAuth{ids: ids, id: id}
	it := &identity{id: id, auth: a}
	it.c = ids.newConn(id, a)
	it.c.reroute = func() (*conn, error) { return ids.conn(id) }
	it.c.hold()
	ids.byID[id] = ids.lru.PushBack(it)
	var evicted *identity
	if ids.lru.Len() > ids.max {
		front := ids.lru.Front()
		evicted = ids.lru.Remove(front).(*identity)
		delete(ids.byID, evicted.id)
	}
	ids.mu.Unlock()
	if evicted != nil {
		evicted.auth.cancel()
		_ = evicted.c.release()
	}
	return it.c, nil
}

// lookup returns identity id, or nil.
func (ids *identities) lookup(id string) *identity {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if e, ok := ids.byID[id]; ok {
		return e.Value.(*identity)
	}
	return nil
}

// each calls fn with every identity's connection.
func (ids *identities) each(fn func(*conn)) {
	ids.mu.Lock()
	var cs []*conn
	for e := ids.lru.Front(); e != nil; e = e.Next() {
		cs = append(cs, e.Value.(*identity).c)
	}
	ids.mu.Unlock()
	for _, c := range cs {
		fn(c)
	}
}

// close closes every identity's connection and ends the authorizations
// waiting.
func (ids *identities) close() error {
	ids.mu.Lock()
	ids.closed = true
	var all []*identity
	for e := ids.lru.Front(); e != nil; e = e.Next() {
		all = append(all, e.Value.(*identity))
	}
	ids.byID, ids.lru = nil, list.List{}
	ids.mu.Unlock()
	ids.stop()
	ids.flows.Wait()
	var errs []error
	for _, it := range all {
		errs = append(errs, it.c.shut())
	}
	return errors.Join(errs...)
}

// identityAuth is the auth.OAuthHandler of one identity's connection:
// the token source of WithTokenSource, else the tokens of the SDK's
// authorization code flow, which it runs on the toolset's behalf.
type identityAuth struct {
	ids *identities
	id  string

	mu      sync.Mutex
	ts      oauth2.TokenSource // of WithTokenSource, or nil
	asked   bool               // WithTokenSource was called
	handler *auth.AuthorizationCodeHandler
	flow    *authFlow // the authorization waiting, or nil
}

var _ auth.OAuthHandler = (*identityAuth)(nil)

// authFlow is an authorization the SDK's handler runs on a goroutine of
// its own, waiting for the user's answer.
type authFlow struct {
	known  chan struct{} // closed once where is set
	answer chan *auth.AuthorizationResult
	done   chan struct{}
	err    error // once done
	cancel context.CancelFunc

	mu    sync.Mutex
	where string // the URL, once known
}

// url returns the authorization URL, once known.
func (f *authFlow) url() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.where
}

func (f *authFlow) finished() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// resolve asks WithTokenSource for the identity's token source, once
// (again after a failure), under the context of the connection attempt,
// which is the run's.
func (a *identityAuth) resolve(ctx context.Context) (err error) {
	fn := a.ids.cfg.tokenSource
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.asked || fn == nil {
		return nil
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = &toolset.PanicError{Callback: "WithTokenSource", Value: p, Stack: debug.Stack()}
			}
		}()
		a.ts, err = fn(ctx, a.id)
	}()
	if err != nil {
		a.ts = nil
		return fmt.Errorf("the token source of identity %q: %w", a.id, err)
	}
	if a.ts != nil {
		a.ts = safeSource{a.ts}
	}
	a.asked = true
	return nil
}

// safeSource is a token source of WithTokenSource under recover: the SDK
// asks it for a token on each request, some on goroutines of its own,
// where a panic would end the program.
type safeSource struct{ ts oauth2.TokenSource }

// Token implements oauth2.TokenSource.
func (s safeSource) Token() (tok *oauth2.Token, err error) {
	defer func() {
		if p := recover(); p != nil {
			tok, err = nil, &toolset.PanicError{Callback: "the token source of WithTokenSource", Value: p, Stack: debug.Stack()}
		}
	}()
	return s.ts.Token()
}

// TokenSource implements auth.OAuthHandler: the identity's source of
// WithTokenSource, else that of the authorization it completed, if any.
func (a *identityAuth) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ts != nil {
		return a.ts, nil
	}
	if a.handler != nil {
		return a.handler.TokenSource(ctx)
	}
	return nil, nil
}

// required returns the AuthRequiredError of authorization URL u.
func (a *identityAuth) required(u string) *AuthRequiredError {
	e := &AuthRequiredError{Server: a.ids.server, Identity: a.id, URL: u}
	if pu, err := url.Parse(u); err == nil {
		e.Resource = pu.Query().Get("resource")
	}
	return e
}

// Authorize implements auth.OAuthHandler: the server answered 401 or
// 403. Without WithAuthorization, or with a token the identity's source
// gave, the request fails with an AuthRequiredError. Otherwise the SDK's
// handler begins the authorization code flow on a goroutine of its own,
// and the request fails with the URL the user is to visit.
func (a *identityAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	a.mu.Lock()
	if a.ts != nil || a.ids.cfg.authz == nil {
		a.mu.Unlock()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		e := a.required("")
		e.Resource = req.URL.String()
		return e
	}
	if a.flow != nil && !a.flow.finished() {
		f := a.flow
		a.mu.Unlock()
		resp.Body.Close()
		return a.wait(ctx, f)
	}
	if a.handler == nil {
		h, err := a.newHandler()
		if err != nil {
			a.mu.Unlock()
			resp.Body.Close()
			return fmt.Errorf("mcptoolset: WithAuthorization: %w", err)
		}
		a.handler = h
	}
	timeout := a.ids.cfg.authzTimeout
	if timeout <= 0 {
		timeout = DefaultAuthorizationTimeout
	}
	fctx, cancel := context.WithTimeout(a.ids.base, timeout)
	f := &authFlow{known: make(chan struct{}), answer: make(chan *auth.AuthorizationResult, 1), done: make(chan struct{}), cancel: cancel}
	a.flow = f
	h := a.handler
	a.mu.Unlock()
	a.ids.flows.Add(1)
	go func() {
		defer a.ids.flows.Done()
		defer cancel()
		defer close(f.done)
		defer func() {
			if p := recover(); p != nil {
				f.err = &toolset.PanicError{Callback: "authorization", Value: p}
			}
		}()
		f.err = h.Authorize(fctx, req.Clone(fctx), resp)
	}()
	return a.wait(ctx, f)
}

// wait returns the AuthRequiredError of flow f once it knows its URL, or
// why it failed before.
func (a *identityAuth) wait(ctx context.Context, f *authFlow) error {
	select {
	case <-f.known:
		return a.required(f.url())
	case <-f.done:
		if f.err == nil {
			return nil // authorized: the SDK sends the request again
		}
		return fmt.Errorf("mcptoolset: authorization: %w", f.err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newHandler makes the identity's SDK handler from the toolset's
// configuration, whose fetcher hands the authorization URL to the
// request waiting and then waits for CompleteAuthorization.
func (a *identityAuth) newHandler() (*auth.AuthorizationCodeHandler, error) {
	cfg := *a.ids.cfg.authz
	if d := cfg.DynamicClientRegistrationConfig; d != nil {
		dc := *d
		if d.Metadata != nil {
			m := *d.Metadata
			dc.Metadata = &m
		}
		cfg.DynamicClientRegistrationConfig = &dc
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: defaultFetchTimeout}
	}
	cfg.AuthorizationCodeFetcher = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		a.mu.Lock()
		f := a.flow
		a.mu.Unlock()
		if f == nil {
			return nil, errors.New("no authorization in flight")
		}
		f.mu.Lock()
		if f.where != "" {
			f.mu.Unlock()
			return nil, errors.New("the authorization was asked for twice")
		}
		f.where = args.URL
		f.mu.Unlock()
		close(f.known)
		select {
		case r := <-f.answer:
			return r, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("the user did not complete the authorization: %w", ctx.Err())
		}
	}
	return auth.NewAuthorizationCodeHandler(&cfg)
}

// cancel ends the authorization waiting, if any.
func (a *identityAuth) cancel() {
	a.mu.Lock()
	f := a.flow
	a.mu.Unlock()
	if f != nil {
		f.cancel()
	}
}

// complete hands the user's answer to the authorization waiting and
// returns once the token is exchanged.
func (a *identityAuth) complete(ctx context.Context, res *auth.AuthorizationResult) error {
	a.mu.Lock()
	f := a.flow
	a.mu.Unlock()
	if f == nil || f.finished() {
		return ErrNoAuthorization
	}
	where := f.url()
	if where == "" {
		return ErrNoAuthorization
	}
	// A wrong state is refused here, leaving the authorization waiting
	// for the right answer: the SDK's handler would end it.
	if pu, err := url.Parse(where); err != nil || pu.Query().Get("state") != res.State {
		return errors.New("mcptoolset: CompleteAuthorization: the state is not that of the authorization waiting")
	}
	select {
	case f.answer <- res:
	default:
		return ErrNoAuthorization // answered already
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if f.err != nil {
		return fmt.Errorf("mcptoolset: CompleteAuthorization: %w", f.err)
	}
	return nil
}

// CompleteAuthorization completes the authorization that an
// [*AuthRequiredError] asked identity's user for (see
// [WithAuthorization]): res is what the authorization server sent to the
// redirect URL (its code, state and, per RFC 9207, iss query
// parameters). It exchanges the code for a token and returns once that
// is done; the next turn of the identity's runs connects with it. It
// fails with [ErrNoAuthorization] when no authorization waits for the
// identity, and without consuming the authorization when res.State is
// not its state.
func (t *Toolset) CompleteAuthorization(ctx context.Context, identity string, res *auth.AuthorizationResult) error {
	if t == nil || t.c == nil {
		return errZero
	}
	if res == nil {
		return errors.New("mcptoolset: CompleteAuthorization: a nil result")
	}
	ids := t.c.ids
	if ids == nil {
		return ErrNoAuthorization
	}
	it := ids.lookup(identity)
	if it == nil {
		return ErrNoAuthorization
	}
	if err := it.auth.complete(ctx, res); err != nil {
		return err
	}
	it.c.forgetFailure()
	return nil
}

// forgetFailure drops the last failed connection attempt, so that the
// next use connects at once.
func (c *conn) forgetFailure() {
	c.mu.Lock()
	c.failErr = nil
	c.mu.Unlock()
}
