package mesh

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// ClientOptions configure [NewClient]. A nil *ClientOptions, and a zero
// field, take the defaults.
type ClientOptions struct {
	// Namespace is the mesh's namespace (default [DefaultNamespace]).
	Namespace string
	// Agent is the agent's name in its response and status subjects, one
	// subject token (default "agent-" and random characters).
	Agent string
	// Logger receives the client's logs (default slog.Default()).
	Logger *slog.Logger
	// MaxInlineArtifactBytes bounds an input artifact sent inline with a
	// call (preloaded_artifacts, at most MaxInlineArtifactLimit); a larger
	// one goes by reference through the shared artifact store (default
	// DefaultMaxInlineArtifactBytes; negative: every input by reference).
	// The inputs of one call go inline up to half of MaxMessageBytes
	// together, encoded; the rest by reference.
	MaxInlineArtifactBytes int
	// Artifacts is where the agent's artifacts are, the input artifacts
	// of its calls (default: the shared artifact store of the namespace,
	// [NewArtifactStore]). The artifacts calls create are in the shared
	// store.
	Artifacts toolpkg.ArtifactStore
	// HeartbeatTimeout is how long a call may go without a word from the
	// runtime that took it before it fails (default
	// DefaultHeartbeatTimeout, three of the runtimes' default heartbeats).
	HeartbeatTimeout time.Duration
	// AcceptTimeout is how long a call may wait for a runtime to take it
	// (its first status) before it fails (default DefaultAcceptTimeout).
	AcceptTimeout time.Duration
	// RequestTimeout bounds a catalog or init_request round trip (default
	// DefaultRequestTimeout).
	RequestTimeout time.Duration
	// BusyWait is how long a call is sent again while the server answers
	// "no responders" to it (every runtime serving its version is busy,
	// or restarting) before it fails with an *UnavailableError (default
	// DefaultBusyWait, within the call's deadline).
	BusyWait time.Duration
	// CatalogWait is how long NewClient, and a refresh, gather the
	// runtimes' catalogs after the first answer (default
	// DefaultCatalogWait).
	CatalogWait time.Duration
}

// Defaults of [ClientOptions].
const (
	DefaultMaxInlineArtifactBytes = 64 << 10
	DefaultBusyWait               = 5 * time.Second
	DefaultHeartbeatTimeout       = 3500 * time.Millisecond
	DefaultAcceptTimeout          = 10 * time.Second
	DefaultRequestTimeout         = 10 * time.Second
	DefaultCatalogWait            = 100 * time.Millisecond
)

// Bounds of what a client keeps of what runtimes announce.
const (
	maxStatusReports  = 1000
	maxCachedBuilds   = 1024
	callDeadlineGrace = 10 * time.Second
	noResponderTries  = 3
	maxBusyBackoff    = 250 * time.Millisecond
	catalogRefreshGap = time.Second
)

// ErrClosed reports a call or a listing of a closed client.
var ErrClosed = errors.New("mesh: client closed")

// Client is an agent's side of the mesh: it learns the toolsets the
// runtimes serve (their init and removed broadcasts, and the catalog they
// answer), and calls their tools. Its [Toolset]s are toolset.Toolsets
// whose tools run on the runtimes. One subscription on its response and
// status subjects serves every call, demultiplexed by correlation ID.
// Safe for concurrent use.
type Client struct {
	nc    *nats.Conn
	subj  Subjects
	agent string
	log   *slog.Logger
	opts  ClientOptions

	respPrefix, statusPrefix, cancelPrefix string

	shared     *ArtifactStore
	sharedErr  error
	sharedOnce sync.Once

	mu          sync.RWMutex
	pending     map[string]*pending
	catalog     map[string]*catalogEntry
	builds      map[string]*built
	closed      bool
	lastRefresh time.Time
	subs        []*nats.Subscription
	done        chan struct{}

	// The decoder of the call subscription's messages.
	dec msgDecoder
}

// catalogEntry is what runtimes announced of one toolset.
type catalogEntry struct {
	versions map[int]*versionEntry
	// failed is the latest failure a catalog reported, when no version
	// serves.
	failed []string
}

// Bounds of what announcements may make a client keep.
const (
	maxVersionsPerToolset = 8
	maxRuntimesPerVersion = 256
)

// versionEntry is one version of a toolset, as its runtimes announce it.
type versionEntry struct {
	version     int
	tools       map[string]InitParams // by the tool's name in the package
	unavailable map[string]string
	runtimes    map[string]bool
	gen         uint64
}

// latest returns the newest version announced, or nil.
func (e *catalogEntry) latest() *versionEntry {
	var best *versionEntry
	for _, v := range e.versions {
		if len(v.tools) > 0 && (best == nil || v.version > best.version) {
			best = v
		}
	}
	return best
}

var buildGen atomic.Uint64

// NewClient subscribes to the runtimes' broadcasts and to the agent's
// response and status subjects, and asks the runtimes for their catalog
// (waiting at most ctx, RequestTimeout, for the first answer). The
// connection stays the caller's: Close leaves it open.
func NewClient(ctx context.Context, nc *nats.Conn, o *ClientOptions) (*Client, error) {
	if nc == nil {
		return nil, errors.New("mesh: client: nil connection")
	}
	var opts ClientOptions
	if o != nil {
		opts = *o
	}
	subj, err := NewSubjects(opts.Namespace)
	if err != nil {
		return nil, err
	}
	if opts.Agent == "" {
		opts.Agent = "agent-" + randomID()[:12]
	}
	if err := CheckID("agent", opts.Agent); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	switch {
	case opts.MaxInlineArtifactBytes == 0:
		opts.MaxInlineArtifactBytes = DefaultMaxInlineArtifactBytes
	case opts.MaxInlineArtifactBytes < 0:
		opts.MaxInlineArtifactBytes = 0
	}
	opts.MaxInlineArtifactBytes = min(opts.MaxInlineArtifactBytes, MaxInlineArtifactLimit)
	if opts.BusyWait <= 0 {
		opts.BusyWait = DefaultBusyWait
	}
	if opts.HeartbeatTimeout <= 0 {
		opts.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if opts.AcceptTimeout <= 0 {
		opts.AcceptTimeout = DefaultAcceptTimeout
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.CatalogWait <= 0 {
		opts.CatalogWait = DefaultCatalogWait
	}
	resp, _ := subj.Response(opts.Agent, "x")
	status, _ := subj.Status(opts.Agent, "x")
	cancel, _ := subj.Cancel(opts.Agent, "x")
	c := &Client{
		nc: nc, subj: subj, agent: opts.Agent, log: opts.Logger, opts: opts,
		respPrefix: strings.TrimSuffix(resp, "x"), statusPrefix: strings.TrimSuffix(status, "x"),
		cancelPrefix: strings.TrimSuffix(cancel, "x"),
		pending:      map[string]*pending{}, catalog: map[string]*catalogEntry{}, builds: map[string]*built{},
		done: make(chan struct{}),
	}
	// One subscription for the agent's response and status subjects:
	// "{ns}.a2a.v1.sam_remote_tool.*.{agent}.*", demultiplexed by kind
	// and correlation ID on one goroutine.
	calls := strings.TrimSuffix(subj.Catalog(), "catalog") + "*." + c.agent + ".*"
	for _, s := range []struct {
		subject string
		fn      nats.MsgHandler
	}{
		{calls, c.onCall},
		{subj.InitAll(), c.onInit},
		{subj.RemovedAll(), c.onRemoved},
	} {
		sub, err := nc.Subscribe(s.subject, s.fn)
		if err != nil {
			c.unsubscribe()
			return nil, fmt.Errorf("mesh: client: subscribe %s: %w", s.subject, err)
		}
		c.subs = append(c.subs, sub)
	}
	fctx, fcancel := context.WithTimeout(ctx, opts.RequestTimeout)
	err = nc.FlushWithContext(fctx)
	fcancel()
	if err != nil {
		c.unsubscribe()
		return nil, fmt.Errorf("mesh: client: %w", err)
	}
	if err := c.refreshCatalog(ctx); err != nil {
		c.log.Warn("mesh: no catalog from the runtimes", "error", err)
	}
	return c, nil
}

// Agent returns the agent's name in its subjects.
func (c *Client) Agent() string { return c.agent }

// Close stops the client: calls waiting fail with ErrClosed, and its
// subscriptions end. The connection stays open.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	c.mu.Unlock()
	c.unsubscribe()
	return nil
}

func (c *Client) unsubscribe() {
	for _, s := range c.subs {
		_ = s.Unsubscribe()
	}
}

// randomID returns 32 hexadecimal characters of crypto/rand.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var h [32]byte
	hex.Encode(h[:], b[:])
	return string(h[:])
}

// pending is a call, an init_request or a catalog request waiting for its
// answers on the client's response subject.
type pending struct {
	// replies gets the answers: one for a call or an init_request (the
	// first valid one), any number for a catalog.
	replies chan reply
	multi   bool
	taken   atomic.Bool

	// A call's status: the runtime that took it, when it was last heard
	// of (unix nanoseconds), its progress reports.
	isCall   bool
	runtime  atomic.Pointer[string]
	lastSeen atomic.Int64
	reports  atomic.Int32
	progress chan toolset.Progress
}

// reply is one answer: a call's decoded response, another request's
// bytes, or the server's no-responders status.
type reply struct {
	call         *invokeResponse
	data         []byte
	noResponders bool
}

func (c *Client) register(corr string, p *pending) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.pending[corr] = p
	return nil
}

func (c *Client) unregister(corr string) {
	c.mu.Lock()
	delete(c.pending, corr)
	c.mu.Unlock()
}

func (c *Client) lookup(corr string) *pending {
	c.mu.RLock()
	p := c.pending[corr]
	c.mu.RUnlock()
	return p
}

// onCall routes a message of the agent's call subjects: a response or a
// status. Anything else that matches the wildcard (the agent's own
// cancels, say) is dropped.
func (c *Client) onCall(m *nats.Msg) {
	if corr, ok := strings.CutPrefix(m.Subject, c.respPrefix); ok {
		c.onResponse(m, corr)
	} else if corr, ok := strings.CutPrefix(m.Subject, c.statusPrefix); ok {
		c.onStatus(m, corr)
	}
}

// onResponse routes an answer to the call, init_request or catalog
// request it is for. Anything else (an unknown or finished correlation
// ID, a second answer, a message too large) is dropped.
func (c *Client) onResponse(m *nats.Msg, corr string) {
	p := c.lookup(corr)
	if p == nil {
		return
	}
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		// The server's "no responders" proves nobody took the call, and
		// lets it be sent again; once a runtime was heard of, it is a
		// forgery (anyone who learns the correlation ID can publish one)
		// and must not make the call run twice.
		if p.isCall && p.lastSeen.Load() != 0 {
			c.log.Debug("mesh: dropped a no-responders status after a runtime took the call", "subject", m.Subject)
			return
		}
		if p.taken.CompareAndSwap(false, true) {
			p.replies <- reply{noResponders: true}
		}
		return
	}
	if len(m.Data) > MaxMessageBytes {
		c.log.Debug("mesh: dropped a response too large", "subject", m.Subject, "bytes", len(m.Data))
		return
	}
	if p.multi {
		select {
		case p.replies <- reply{data: m.Data}:
		default:
		}
		return
	}
	// The answer is checked here, so that a malformed or forged one
	// does not take the place of the real one.
	var r reply
	if p.isCall {
		r.call = c.dec.invokeResponse(m.Data, corr)
		if r.call == nil {
			c.log.Debug("mesh: dropped a malformed response", "subject", m.Subject)
			return
		}
	} else {
		if !validResponse(m.Data, corr) {
			c.log.Debug("mesh: dropped a malformed response", "subject", m.Subject)
			return
		}
		r.data = m.Data
	}
	if p.taken.CompareAndSwap(false, true) {
		p.replies <- r
	}
}

// validResponse reports whether data is a JSON-RPC response, within the
// bounds, for correlation ID corr.
func validResponse(data []byte, corr string) bool {
	if len(data) > MaxMessageBytes || checkDepth(data, MaxJSONDepth) != nil {
		return false
	}
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &env) != nil {
		return false
	}
	hasResult := len(env.Result) > 0 && string(env.Result) != "null"
	hasError := len(env.Error) > 0 && string(env.Error) != "null"
	return env.JSONRPC == JSONRPCVersion && env.ID == corr && hasResult != hasError
}

// invokeResponse decodes, in one pass, a response to the call corr; nil
// when it is not one.
func (m *msgDecoder) invokeResponse(data []byte, corr string) *invokeResponse {
	var resp invokeResponse
	if m.decode(data, &resp) != nil || !resp.JSONRPC.is(JSONRPCVersion) || !resp.ID.is(corr) || (resp.Result == nil) == (resp.Error == nil) {
		return nil
	}
	return &resp
}

// msgDecoder decodes the messages of one subscription, one at a time (a
// subscription's handler is never called concurrently), keeping the
// decoder's buffers from one message to the next.
type msgDecoder struct {
	r   msgReader
	dec *json.Decoder
	fed int64
}

// msgReader serves the message being decoded, then io.EOF.
type msgReader struct{ data []byte }

func (r *msgReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

var errNotOneObject = errors.New("mesh: a message is not one JSON object")

// decode decodes data, one JSON object within the bounds, into v. What
// it leaves in v aliases the decoder's buffer only through rawTokens,
// valid until the next message.
func (m *msgDecoder) decode(data []byte, v any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || len(data) > MaxMessageBytes {
		return errNotOneObject
	}
	if err := checkDepth(data, MaxJSONDepth); err != nil {
		return err
	}
	if m.dec == nil {
		m.dec, m.fed = json.NewDecoder(&m.r), 0
	}
	m.r.data = data
	m.fed += int64(len(data))
	err := m.dec.Decode(v)
	if err == nil && (m.dec.InputOffset() != m.fed || len(m.r.data) != 0) {
		err = errNotOneObject
	}
	if err != nil {
		// Whatever went wrong, the next message starts afresh.
		m.dec, m.r.data = nil, nil
	}
	return err
}

// statusMessage is what a client reads of a status notification.
type statusMessage struct {
	JSONRPC rawToken `json:"jsonrpc"`
	Method  rawToken `json:"method"`
	Params  struct {
		StatusText rawToken `json:"status_text"`
		State      rawToken `json:"state"`
		Fraction   *float64 `json:"fraction"`
		Runtime    rawToken `json:"runtime"`
	} `json:"params"`
}

// rawToken is a JSON value kept as its bytes, quotes included, for the
// strings a client compares rather than keeps: decoding one costs no
// allocation. It aliases the decoder's buffer: it is read before the
// next message is decoded.
type rawToken []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawToken) UnmarshalJSON(data []byte) error {
	*r = data
	return nil
}

// is reports whether r is the JSON string s, written without escapes.
func (r rawToken) is(s string) bool {
	return len(r) == len(s)+2 && r[0] == '"' && r[len(r)-1] == '"' && string(r[1:len(r)-1]) == s
}

// text returns r as a string: "" when r is absent, null or not a string.
func (r rawToken) text() string {
	if len(r) < 2 || r[0] != '"' {
		return ""
	}
	if !bytes.ContainsRune(r, '\\') {
		return string(r[1 : len(r)-1])
	}
	var s string
	_ = json.Unmarshal(r, &s)
	return s
}

// token returns r as a subject token, ok false when it is absent or
// is not one.
func (r rawToken) token() (string, bool) {
	if len(r) < 3 || r[0] != '"' || r[len(r)-1] != '"' || badTokenByte(string(r[1:len(r)-1])) >= 0 || len(r)-2 > MaxIDBytes {
		return "", false
	}
	return string(r[1 : len(r)-1]), true
}

// onStatus records a call's status: the runtime that took it is heard of,
// and progress goes to the call. A status for an unknown call, or from
// another runtime than the one that took it, is dropped.
func (c *Client) onStatus(m *nats.Msg, corr string) {
	p := c.lookup(corr)
	if p == nil || !p.isCall || len(m.Data) > MaxMessageBytes {
		return
	}
	var msg statusMessage
	if c.dec.decode(m.Data, &msg) != nil || !msg.JSONRPC.is(JSONRPCVersion) || !msg.Method.is(MethodStatus) {
		return
	}
	st := &msg.Params
	if len(st.Runtime) == 0 || string(st.Runtime) == "null" {
		// A status that names no runtime keeps no call alive once a
		// runtime took it: only that runtime's heartbeats do.
		if p.runtime.Load() != nil {
			return
		}
	} else {
		if prev := p.runtime.Load(); prev != nil {
			if !st.Runtime.is(*prev) {
				return
			}
		} else {
			rt, ok := st.Runtime.token()
			if !ok {
				return
			}
			if !p.runtime.CompareAndSwap(nil, &rt) && *p.runtime.Load() != rt {
				return
			}
		}
	}
	p.lastSeen.Store(time.Now().UnixNano())
	if st.State.is(StateAccepted) || st.State.is(StateRunning) {
		return
	}
	if p.progress == nil || p.reports.Add(1) > maxStatusReports {
		return
	}
	frac := -1.0
	if st.Fraction != nil {
		frac = *st.Fraction
	}
	select {
	case p.progress <- toolset.Progress{Message: cut(st.StatusText.text(), MaxStatusTextBytes), Fraction: frac}:
	default: // the caller is behind: this report is dropped
	}
}

// onInit records a tool a runtime announces.
func (c *Client) onInit(m *nats.Msg) {
	_, tool, _, ok := c.subj.ParseTool(m.Subject)
	if !ok {
		return
	}
	req, err := DecodeRequest(m.Data, MethodInit, false)
	if err != nil {
		return
	}
	var ip InitParams
	if Decode(req.Params, MaxMessageBytes, &ip) != nil || ip.ToolName != tool {
		return
	}
	if err := checkInit(&ip); err != nil {
		c.log.Debug("mesh: dropped an init", "tool", tool, "error", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addTool(ip, ip.Runtime)
}

// checkInit checks what a runtime announces of one tool.
func checkInit(ip *InitParams) error {
	if ip.Version <= 0 {
		return errors.New("no version")
	}
	name, err := ToolName(ip.Toolset, ip.Tool)
	if err != nil || name != ip.ToolName || toolpkg.CheckName(ip.Toolset) != nil {
		return fmt.Errorf("tool name %q is not <toolset>__<tool> of %q and %q", ip.ToolName, ip.Toolset, ip.Tool)
	}
	if ip.Runtime != "" && CheckID("runtime", ip.Runtime) != nil {
		return errors.New("bad runtime ID")
	}
	if strings.TrimSpace(ip.Description) == "" {
		return errors.New("no description")
	}
	if len(ip.RequiredScopes) > MaxScopes {
		return fmt.Errorf("%d required scopes, at most %d", len(ip.RequiredScopes), MaxScopes)
	}
	for _, sc := range ip.RequiredScopes {
		if strings.TrimSpace(sc) == "" || len(sc) > MaxScopeBytes || !utf8.ValidString(sc) {
			return errors.New("a required scope is empty, too long or not UTF-8")
		}
	}
	if len(ip.Parameters) > 0 {
		var head struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(ip.Parameters, &head); err != nil {
			return fmt.Errorf("parameters: %w", err)
		}
		if head.Type != nil && head.Type != "object" {
			return errors.New(`parameters: the type is not "object"`)
		}
		if _, err := toolset.ParseSchema(ip.Parameters); err != nil {
			return fmt.Errorf("parameters: %w", err)
		}
	}
	return nil
}

// addTool records ip, announced by runtime; c.mu is held.
func (c *Client) addTool(ip InitParams, runtime string) {
	e := c.catalog[ip.Toolset]
	if e == nil {
		if len(c.catalog) >= MaxToolsets {
			return
		}
		e = &catalogEntry{versions: map[int]*versionEntry{}}
		c.catalog[ip.Toolset] = e
	}
	v := e.versions[ip.Version]
	if v == nil {
		v = &versionEntry{version: ip.Version, tools: map[string]InitParams{}, runtimes: map[string]bool{}, gen: buildGen.Add(1)}
		e.versions[ip.Version] = v
	}
	if runtime == "" {
		runtime = "?"
	}
	if !v.runtimes[runtime] {
		if len(v.runtimes) >= maxRuntimesPerVersion {
			return
		}
		v.runtimes[runtime] = true
	}
	// A runtime serves one version of a toolset: announcing this one, it
	// no longer serves the others, and a version no runtime serves any
	// more is forgotten (an upgraded runtime does not announce its old
	// version removed).
	if runtime != "?" {
		for n, other := range e.versions {
			if n == ip.Version || !other.runtimes[runtime] {
				continue
			}
			delete(other.runtimes, runtime)
			if len(other.runtimes) == 0 {
				delete(e.versions, n)
			}
		}
	}
	// Announcements cannot make the catalog grow without bound: the
	// oldest versions beyond a few go.
	for len(e.versions) > maxVersionsPerToolset {
		oldest := -1
		for n := range e.versions {
			if oldest < 0 || n < oldest {
				oldest = n
			}
		}
		delete(e.versions, oldest)
	}
	if e.versions[ip.Version] == nil {
		return // this very version was the oldest
	}
	if old, ok := v.tools[ip.Tool]; !ok || !sameInit(old, ip) {
		if !ok && len(v.tools) >= MaxTools {
			return
		}
		v.tools[ip.Tool] = ip
		v.gen = buildGen.Add(1)
	}
	e.failed = nil
}

func sameInit(a, b InitParams) bool {
	a.Runtime, b.Runtime = "", ""
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// onRemoved forgets what a runtime no longer serves.
func (c *Client) onRemoved(m *nats.Msg) {
	_, tool, _, ok := c.subj.ParseTool(m.Subject)
	if !ok {
		return
	}
	req, err := DecodeRequest(m.Data, MethodRemoved, false)
	if err != nil {
		return
	}
	var rp RemovedParams
	if Decode(req.Params, MaxMessageBytes, &rp) != nil || rp.ToolName != tool {
		return
	}
	ts, _, ok := SplitToolName(tool)
	if !ok {
		return
	}
	runtime := rp.Runtime
	if runtime == "" {
		runtime = "?"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.catalog[ts]
	if e == nil {
		return
	}
	for n, v := range e.versions {
		if rp.Version != 0 && n != rp.Version {
			continue
		}
		delete(v.runtimes, runtime)
		if len(v.runtimes) == 0 {
			delete(e.versions, n)
		}
	}
}

// request publishes a request on subject, with the client's response
// subject of a fresh correlation ID as its reply subject and replyTo
// header, and returns its answers on a pending entry. The caller calls
// done when it no longer waits.
func (c *Client) request(subject, method string, params any, multi bool) (p *pending, corr string, done func(), err error) {
	corr = randomID()
	data, err := encodeRequest(corr, method, params)
	if err != nil {
		return nil, "", nil, err
	}
	p = &pending{replies: make(chan reply, 1), multi: multi}
	if multi {
		p.replies = make(chan reply, 64)
	}
	if err := c.register(corr, p); err != nil {
		return nil, "", nil, err
	}
	resp := c.respPrefix + corr
	m := &nats.Msg{Subject: subject, Reply: resp, Data: data, Header: nats.Header{HeaderReplyTo: []string{resp}}}
	if err := c.nc.PublishMsg(m); err != nil {
		c.unregister(corr)
		return nil, "", nil, fmt.Errorf("mesh: publish %s: %w", method, err)
	}
	return p, corr, func() { c.unregister(corr) }, nil
}

// refreshCatalog asks every runtime for its catalog and records the
// answers that arrive within the client's bounds.
func (c *Client) refreshCatalog(ctx context.Context) error {
	c.mu.Lock()
	c.lastRefresh = time.Now()
	c.mu.Unlock()
	p, corr, done, err := c.request(c.subj.Catalog(), MethodCatalog, struct{}{}, true)
	if err != nil {
		return err
	}
	defer done()
	first := time.NewTimer(c.opts.RequestTimeout)
	defer first.Stop()
	var quiet <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return ErrClosed
		case <-first.C:
			if quiet == nil {
				return errors.New("mesh: no runtime answered the catalog request")
			}
		case <-quiet:
			return nil
		case r := <-p.replies:
			if r.noResponders {
				return errors.New("mesh: no runtime answers the catalog request")
			}
			if cat, err := decodeCatalog(r.data, corr); err != nil {
				c.log.Debug("mesh: dropped a catalog", "error", err)
			} else {
				c.addCatalog(cat)
			}
			if quiet == nil {
				quiet = time.After(c.opts.CatalogWait)
			}
		}
	}
}

// decodeCatalog decodes a runtime's answer to a catalog request.
func decodeCatalog(data []byte, corr string) (*Catalog, error) {
	resp, err := DecodeResponse(data)
	if err != nil {
		return nil, err
	}
	if resp.ID != corr {
		return nil, errors.New("mesh: catalog for another request")
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	var cat Catalog
	if err := Decode(resp.Result, MaxMessageBytes, &cat); err != nil {
		return nil, err
	}
	if CheckID("runtime", cat.Runtime) != nil || len(cat.Toolsets) > MaxToolsets {
		return nil, errors.New("mesh: catalog with a bad runtime ID or too many toolsets")
	}
	return &cat, nil
}

func (c *Client) addCatalog(cat *Catalog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ts := range cat.Toolsets {
		if toolpkg.CheckName(ts.Name) != nil || ts.Version <= 0 || len(ts.Tools) > MaxTools {
			continue
		}
		if ts.Status != string(toolpkg.StatusReady) {
			e := c.catalog[ts.Name]
			if e == nil && len(c.catalog) < MaxToolsets {
				e = &catalogEntry{versions: map[int]*versionEntry{}}
				c.catalog[ts.Name] = e
			}
			if e != nil && e.latest() == nil {
				e.failed = boundStrings(ts.Errors)
			}
			continue
		}
		for _, ip := range ts.Tools {
			ip.Toolset, ip.Version = ts.Name, ts.Version
			if ip.Runtime == "" {
				ip.Runtime = cat.Runtime
			}
			if checkInit(&ip) == nil {
				c.addTool(ip, cat.Runtime)
			}
		}
		if e := c.catalog[ts.Name]; e != nil {
			if v := e.versions[ts.Version]; v != nil && len(ts.Unavailable) > 0 {
				v.unavailable = map[string]string{}
				for k, r := range ts.Unavailable {
					if len(v.unavailable) < MaxTools {
						v.unavailable[k] = cut(r, 1024)
					}
				}
			}
		}
	}
}

func boundStrings(in []string) []string {
	var out []string
	for _, s := range in {
		if len(out) == 100 {
			break
		}
		out = append(out, cut(s, 4096))
	}
	return out
}

// Info returns what the runtimes announce of the toolset name: status
// ready with the newest version they serve and its tools (under the
// runtimes' configuration, the agent's not applied), failed with the
// errors a runtime reported, or an error wrapping toolpkg.ErrNotFound when
// no runtime announces it.
func (c *Client) Info(name string) (toolpkg.Info, error) {
	if err := toolpkg.CheckName(name); err != nil {
		return toolpkg.Info{}, err
	}
	c.maybeRefresh(name)
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.catalog[name]
	if e == nil {
		return toolpkg.Info{}, fmt.Errorf("mesh: toolset %q: no runtime serves it: %w", name, toolpkg.ErrNotFound)
	}
	v := e.latest()
	if v == nil {
		if len(e.failed) > 0 {
			return toolpkg.Info{Name: name, Status: toolpkg.StatusFailed, Errors: append([]string(nil), e.failed...)}, nil
		}
		return toolpkg.Info{}, fmt.Errorf("mesh: toolset %q: no runtime serves it: %w", name, toolpkg.ErrNotFound)
	}
	info := toolpkg.Info{Name: name, Status: toolpkg.StatusReady, Version: v.version, Serving: v.version}
	for _, ip := range v.sorted() {
		ti := toolpkg.ToolInfo{
			Name: ip.Tool, Description: ip.Description, Parameters: ip.Parameters, Config: ip.ConfigSchema,
			TimeoutSeconds: ip.TimeoutSeconds, ArtifactParams: ip.ArtifactParams, Instructions: ip.Instructions,
		}
		if ip.Auth {
			ti.Auth = json.RawMessage("true")
		}
		info.Tools = append(info.Tools, ti)
	}
	return info, nil
}

// maybeRefresh asks the runtimes for their catalog when name is unknown,
// at most once every catalogRefreshGap.
func (c *Client) maybeRefresh(name string) {
	c.mu.RLock()
	e := c.catalog[name]
	known := e != nil && e.latest() != nil
	recent := time.Since(c.lastRefresh) < catalogRefreshGap
	c.mu.RUnlock()
	if known || recent {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.RequestTimeout)
	defer cancel()
	_ = c.refreshCatalog(ctx)
}

func (v *versionEntry) sorted() []InitParams {
	out := make([]InitParams, 0, len(v.tools))
	for _, ip := range v.tools {
		out = append(out, ip)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// Toolset returns the toolset name of the mesh as a toolset.Toolset,
// configured with config (the toolset's values); it is
// ToolsetWithConfig(name, toolpkg.Config{Toolset: config}).
func (c *Client) Toolset(name string, config map[string]any) *Toolset {
	return c.ToolsetWithConfig(name, toolpkg.Config{Toolset: config})
}

// ToolsetWithConfig returns the toolset name of the mesh as a
// toolset.Toolset for one agent, configured as toolpkg.Store's
// ToolsetWithConfig is: its tools are named <toolset>__<tool>, listed from
// the newest version the runtimes serve, and run there. With a
// configuration, the tools are those the runtimes answer to an
// init_request with it (so configured names and schemas hold remotely),
// asked once per version and configuration and remembered by the
// client. The configuration is copied.
func (c *Client) ToolsetWithConfig(name string, config toolpkg.Config) *Toolset {
	t := &Toolset{client: c, name: name}
	t.config = agentWireConfig(config)
	if t.config != nil {
		data, _ := json.Marshal(t.config)
		sum := sha256.Sum256(data)
		t.configKey = hex.EncodeToString(sum[:16])
		t.configJSON = data
	}
	return t
}

// agentWireConfig copies config for the wire; nil when it holds nothing.
func agentWireConfig(config toolpkg.Config) *WireConfig {
	if len(config.Toolset) == 0 && len(config.Tools) == 0 && len(config.Exclude) == 0 {
		return nil
	}
	w := &WireConfig{Exclude: append([]string(nil), config.Exclude...)}
	if len(config.Toolset) > 0 {
		w.Toolset = make(map[string]any, len(config.Toolset))
		for k, v := range config.Toolset {
			w.Toolset[k] = v
		}
	}
	if len(config.Tools) > 0 {
		w.Tools = make(map[string]map[string]any, len(config.Tools))
		for tool, vals := range config.Tools {
			m := make(map[string]any, len(vals))
			for k, v := range vals {
				m[k] = v
			}
			w.Tools[tool] = m
		}
	}
	return w
}

// Toolset is a toolset served by the mesh's runtimes, for one agent's
// configuration (see [Client.ToolsetWithConfig]). It implements
// toolset.Toolset, toolset.Labeler and toolset.InstructionsProvider.
// Safe for concurrent use.
type Toolset struct {
	client     *Client
	name       string
	config     *WireConfig
	configKey  string
	configJSON []byte

	last atomic.Pointer[built]
}

// built is the tools of one version of a toolset for one configuration.
type built struct {
	version      int
	gen          uint64
	tools        []toolset.Tool
	instructions string
	unavailable  map[string]string
	policies     map[string]toolpkg.ToolPolicy
	err          error
}

// Name returns the toolset's name.
func (t *Toolset) Name() string { return t.name }

// Label implements toolset.Labeler: "mesh:<name>".
func (t *Toolset) Label() string { return "mesh:" + t.name }

// Unavailable returns, by tool name, the tools of the version last listed
// that the runtimes leave out for this configuration, and why.
func (t *Toolset) Unavailable() map[string]string {
	b := t.last.Load()
	if b == nil {
		return nil
	}
	out := make(map[string]string, len(b.unavailable))
	for k, v := range b.unavailable {
		out[k] = v
	}
	return out
}

// Policies returns, by tool name, what the configuration makes of each
// tool of the version last listed, as the runtimes answered (see
// toolpkg.Toolset.Policies): approval, required scopes, and the missing
// required keys of the tools left out. Nil before a listing, or when the
// last one failed.
func (t *Toolset) Policies() map[string]toolpkg.ToolPolicy {
	b := t.last.Load()
	if b == nil || b.err != nil {
		return nil
	}
	out := make(map[string]toolpkg.ToolPolicy, len(b.policies))
	for k, p := range b.policies {
		p.Scopes = append([]string(nil), p.Scopes...)
		p.Missing = append([]string(nil), p.Missing...)
		out[k] = p
	}
	return out
}

// GetTools implements toolset.Toolset: the tools of the newest version the
// runtimes serve. A steady turn is a lookup and a copy; a new version, or
// a first listing with a configuration, asks the runtimes.
func (t *Toolset) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	b, err := t.current(ctx)
	if err != nil {
		return nil, err
	}
	return append([]toolset.Tool(nil), b.tools...), nil
}

// Instructions implements toolset.InstructionsProvider: the tools'
// instructions, in tool order, separated by blank lines; "" while nothing
// serves the toolset.
func (t *Toolset) Instructions(ctx context.Context) (string, error) {
	b, err := t.current(ctx)
	if err != nil {
		var nr *toolpkg.NotReadyError
		if errors.As(err, &nr) || errors.Is(err, toolpkg.ErrNotFound) {
			return "", nil
		}
		return "", err
	}
	return b.instructions, nil
}

func (t *Toolset) current(ctx context.Context) (*built, error) {
	c := t.client
	if t.name == "" || toolpkg.CheckName(t.name) != nil {
		return nil, fmt.Errorf("mesh: toolset %q: invalid name", t.name)
	}
	c.mu.RLock()
	closed := c.closed
	var v *versionEntry
	var failed []string
	if e := c.catalog[t.name]; e != nil {
		v, failed = e.latest(), e.failed
	}
	var version int
	var gen uint64
	if v != nil {
		version, gen = v.version, v.gen
	}
	c.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if v == nil {
		if len(failed) > 0 {
			return nil, &toolpkg.NotReadyError{Toolset: t.name, Status: toolpkg.StatusFailed, Errors: failed}
		}
		c.maybeRefresh(t.name)
		c.mu.RLock()
		if e := c.catalog[t.name]; e != nil {
			v = e.latest()
		}
		if v != nil {
			version, gen = v.version, v.gen
		}
		c.mu.RUnlock()
		if v == nil {
			// No runtime serves the toolset now (they restart, say): the
			// tools last listed stay in the list, so that the turn and
			// the prompt hold, and their calls fail with an
			// *UnavailableError the model reads.
			if b := t.last.Load(); b != nil && b.err == nil {
				return b, nil
			}
			return nil, fmt.Errorf("mesh: toolset %q: no runtime serves it: %w", t.name, toolpkg.ErrNotFound)
		}
	}
	if b := t.last.Load(); b != nil && b.version == version && b.gen == gen {
		return b, b.err
	}
	key := fmt.Sprintf("%s\x00%d\x00%d\x00%s", t.name, version, gen, t.configKey)
	c.mu.RLock()
	b := c.builds[key]
	c.mu.RUnlock()
	if b == nil {
		var err error
		b, err = t.build(ctx, version, gen)
		if err != nil && ctx.Err() != nil {
			return nil, err // canceled: the next turn tries again
		}
		c.mu.Lock()
		if len(c.builds) >= maxCachedBuilds {
			clear(c.builds)
		}
		c.builds[key] = b
		c.mu.Unlock()
	}
	t.last.Store(b)
	return b, b.err
}

// build makes the tools of version of the toolset for t's configuration.
func (t *Toolset) build(ctx context.Context, version int, gen uint64) (*built, error) {
	c := t.client
	c.mu.RLock()
	var tools []InitParams
	if e := c.catalog[t.name]; e != nil {
		if v := e.versions[version]; v != nil {
			tools = v.sorted()
		}
	}
	c.mu.RUnlock()
	b := &built{version: version, gen: gen, unavailable: map[string]string{}, policies: map[string]toolpkg.ToolPolicy{}}
	// The runtimes resolve the configuration, the agent's (none
	// included) over the one stored with the package: each tool is asked
	// for once per version and configuration.
	configured, err := t.initRequests(ctx, tools, version, b.unavailable, b.policies)
	if err != nil {
		b.err = err
		return b, err
	}
	tools = configured
	var instr []string
	for _, ip := range tools {
		tool, err := t.makeTool(ip, version)
		if err != nil {
			b.err = err
			return b, err
		}
		b.tools = append(b.tools, tool)
		if ip.Instructions != "" {
			instr = append(instr, ip.Instructions)
		}
	}
	b.instructions = strings.Join(instr, "\n\n")
	return b, nil
}

// initRequests asks the runtimes for each tool under t's configuration,
// in parallel, and returns the configured tools; unavailable gets those
// left out.
func (t *Toolset) initRequests(ctx context.Context, tools []InitParams, version int, unavailable map[string]string, policies map[string]toolpkg.ToolPolicy) ([]InitParams, error) {
	cfg := t.config
	if cfg == nil {
		cfg = &WireConfig{}
	}
	excluded := map[string]bool{}
	for _, x := range cfg.Exclude {
		excluded[x] = true
	}
	known := map[string]bool{}
	for _, ip := range tools {
		known[ip.Tool] = true
	}
	var problems []string
	for _, x := range cfg.Exclude {
		if !known[x] {
			problems = append(problems, fmt.Sprintf("excluded tool %q: no such tool", x))
		}
	}
	for x := range cfg.Tools {
		if !known[x] {
			problems = append(problems, fmt.Sprintf("configured tool %q: no such tool", x))
		}
	}
	type answer struct {
		ip       InitParams
		err      error
		problems []string
		left     string
		missing  []string
	}
	answers := make([]answer, len(tools))
	var wg sync.WaitGroup
	for i, ip := range tools {
		if excluded[ip.Tool] {
			answers[i].left = "excluded"
			continue
		}
		wg.Go(func() {
			a := &answers[i]
			a.ip, a.err = t.initRequest(ctx, ip, version)
			var rpc *RPCError
			if errors.As(a.err, &rpc) {
				var d ErrorData
				if len(rpc.Data) > 0 {
					_ = Decode(rpc.Data, MaxMessageBytes, &d)
				}
				switch {
				case rpc.Code == CodeInitError && d.Unavailable:
					// A tool the configuration leaves out (a required
					// value missing): the others stay, as in process.
					a.left, a.err = cut(strings.Join(boundStrings(d.Problems), "; "), 1024), nil
					if a.left == "" {
						a.left = cut(rpc.Message, 1024)
					}
					a.missing = boundStrings(d.MissingKeys)
				case rpc.Code == CodeInitError, rpc.Code == CodeInvalidRequest:
					a.problems, a.err = boundStrings(d.Problems), nil
					if len(a.problems) == 0 {
						a.problems = []string{cut(rpc.Message, 1024)}
					}
				case rpc.Code == CodeToolNotAvailable:
					a.left, a.err = cut(rpc.Message, 1024), nil
				}
			}
		})
	}
	wg.Wait()
	var out []InitParams
	for i, a := range answers {
		switch {
		case a.err != nil:
			return nil, a.err
		case a.left == "excluded":
		case a.left != "":
			unavailable[tools[i].Tool] = a.left
			if len(a.missing) > 0 {
				policies[tools[i].Tool] = toolpkg.ToolPolicy{Missing: a.missing}
			}
		case len(a.problems) > 0:
			problems = append(problems, a.problems...)
		default:
			out = append(out, a.ip)
			policies[tools[i].Tool] = a.ip.policy()
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, &toolpkg.ConfigError{Toolset: t.name, Problems: dedupe(problems)}
	}
	if len(out) == 0 && len(unavailable) > 0 {
		var ps []string
		for tool, r := range unavailable {
			ps = append(ps, fmt.Sprintf("tool %q: %s", tool, r))
		}
		sort.Strings(ps)
		return nil, &toolpkg.ConfigError{Toolset: t.name, Problems: ps}
	}
	return out, nil
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// initRequest asks the runtimes serving version for tool ip under t's
// configuration.
func (t *Toolset) initRequest(ctx context.Context, ip InitParams, version int) (InitParams, error) {
	c := t.client
	subject, err := c.subj.InitRequest(ip.ToolName)
	if err != nil {
		return InitParams{}, err
	}
	params := InitRequestParams{ToolName: ip.ToolName, Version: version, ToolsetConfig: t.config, ToolConfig: toolConfig(t.config, ip.Tool)}
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	for try := 1; ; try++ {
		p, corr, done, err := c.request(subject, MethodInitRequest, params, false)
		if err != nil {
			return InitParams{}, err
		}
		var r reply
		select {
		case r = <-p.replies:
		case <-ctx.Done():
			done()
			return InitParams{}, fmt.Errorf("mesh: toolset %q: tool %q: init_request: %w", t.name, ip.Tool, ctx.Err())
		case <-c.done:
			done()
			return InitParams{}, ErrClosed
		}
		done()
		if r.noResponders {
			if try < noResponderTries && sleepCtx(ctx, time.Duration(try)*50*time.Millisecond) {
				continue
			}
			return InitParams{}, &UnavailableError{Toolset: t.name, Tool: ip.Tool, Version: version, Reason: "no runtime answers for this version"}
		}
		resp, err := DecodeResponse(r.data)
		if err != nil || resp.ID != corr {
			return InitParams{}, fmt.Errorf("mesh: toolset %q: tool %q: init_request: bad answer: %v", t.name, ip.Tool, err)
		}
		if resp.Error != nil {
			if resp.Error.Code == CodeResourceExhausted && sleepCtx(ctx, min(time.Duration(try)*20*time.Millisecond, maxBusyBackoff)) {
				// The runtime answers as many init_requests as it can at
				// once; this one may be asked again.
				continue
			}
			return InitParams{}, resp.Error
		}
		var got InitParams
		if err := Decode(resp.Result, MaxMessageBytes, &got); err != nil {
			return InitParams{}, fmt.Errorf("mesh: toolset %q: tool %q: init_request: %w", t.name, ip.Tool, err)
		}
		if got.Toolset == "" {
			got.Toolset = t.name
		}
		if got.Tool == "" {
			_, got.Tool, _ = SplitToolName(got.ToolName)
		}
		if got.Version == 0 {
			got.Version = version
		}
		if got.Toolset != t.name || got.Version != version {
			return InitParams{}, fmt.Errorf("mesh: toolset %q: tool %q: init_request answered for %q version %d", t.name, ip.Tool, got.Toolset, got.Version)
		}
		if err := checkInit(&got); err != nil {
			return InitParams{}, fmt.Errorf("mesh: toolset %q: tool %q: init_request: %w", t.name, ip.Tool, err)
		}
		return got, nil
	}
}

// policy is what the runtime's answer says of the tool's approval and
// scopes.
func (ip InitParams) policy() toolpkg.ToolPolicy {
	return toolpkg.ToolPolicy{Approval: ip.RequiresApproval, Scopes: append([]string(nil), ip.RequiredScopes...)}
}

// toolConfig is SAM's tool_config for tool: the toolset's values under
// the agent's overlay for the tool.
func toolConfig(w *WireConfig, tool string) map[string]any {
	if w == nil || len(w.Toolset) == 0 && len(w.Tools[tool]) == 0 {
		return nil
	}
	out := make(map[string]any, len(w.Toolset)+len(w.Tools[tool]))
	for k, v := range w.Toolset {
		out[k] = v
	}
	for k, v := range w.Tools[tool] {
		out[k] = v
	}
	return out
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// UnavailableError reports a tool no runtime can run now: none serves its
// version (no responders), one answered TOOL_NOT_FOUND,
// TOOL_NOT_AVAILABLE or RESOURCE_EXHAUSTED, or the runtime that took the
// call stopped answering. The model sees it (the next turn lists what
// serves then); an application branches on it with errors.As.
type UnavailableError struct {
	Toolset, Tool string
	Version       int
	// Code is the runtime's error code, or "" when no runtime answered.
	Code string
	// Reason says what happened.
	Reason string
	// MayHaveRun is set when the call reached a runtime that then went
	// silent: the tool may have run, and the call was not sent again.
	MayHaveRun bool
	// MissingKeys lists the required configuration keys without a value
	// when the configuration leaves the tool out (Code CodeInitError).
	MissingKeys []string
}

// Error implements error.
func (e *UnavailableError) Error() string {
	return fmt.Sprintf("mesh: toolset %q: tool %q (version %d) unavailable: %s", e.Toolset, e.Tool, e.Version, e.Reason)
}

// ModelText implements toolset.ModelError.
func (e *UnavailableError) ModelText() string {
	return fmt.Sprintf("the tool %s__%s is not available now: %s", e.Toolset, e.Tool, e.Reason)
}

// RemoteError reports a call a runtime failed for a reason the model
// cannot act on (SANDBOX_FAILED, IMPORT_ERROR, INTERNAL_ERROR,
// INIT_ERROR, INVALID_REQUEST, an unknown code): it should stop the run.
type RemoteError struct {
	Toolset, Tool string
	Code, Message string
	Runtime       string
}

// Error implements error.
func (e *RemoteError) Error() string {
	s := fmt.Sprintf("mesh: toolset %q: tool %q: %s: %s", e.Toolset, e.Tool, e.Code, e.Message)
	if e.Runtime != "" {
		s += " (runtime " + e.Runtime + ")"
	}
	return s
}
