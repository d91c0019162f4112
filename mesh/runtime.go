package mesh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/nats-io/nats.go"
)

// QueueGroup is the queue group runtimes join on the invoke and
// init_request subjects: runtimes are competing consumers.
const QueueGroup = "toolset-runtime"

// DefaultHeartbeat is the default of RuntimeOptions.Heartbeat.
const DefaultHeartbeat = time.Second

// maxCachedToolsets bounds the configured toolsets a runtime keeps.
const maxCachedToolsets = 256

// acceptDelay is how long a call runs before its runtime says it took it
// (StateAccepted), at most; a call that ends sooner is answered with its
// result alone.
const acceptDelay = 20 * time.Millisecond

// DefaultMaxInitRequests is the default of RuntimeOptions.MaxInitRequests.
const DefaultMaxInitRequests = 64

// RuntimeOptions configure a Runtime.
type RuntimeOptions struct {
	// Namespace of the subjects (DefaultNamespace when "").
	Namespace string
	// ID names the runtime in reports and status notifications; one
	// subject token (default: the host name and random hex).
	ID string
	// Dir is the runtime's own directory (required): its toolpkg.Store
	// under Dir/store, its sync state, its fetches.
	Dir string
	// Store configure the runtime's toolpkg.Store: sandbox, Python,
	// limits... (nil: the defaults). Its Artifacts.Store defaults to the
	// namespace's shared [ArtifactStore], so that the agents read what
	// the calls create; each call's input artifacts are put in front of
	// it (see the package documentation, Input artifacts).
	Store *toolpkg.Options
	// MaxCalls is how many calls run at once (default 4 per CPU); calls
	// beyond it are not taken from the queue (see the package
	// documentation, Capacity).
	MaxCalls int
	// Heartbeat is the interval of a running call's heartbeat (default
	// DefaultHeartbeat).
	Heartbeat time.Duration
	// MaxInitRequests is how many init_requests are taken at once
	// (default DefaultMaxInitRequests), of which
	// toolpkg.DefaultMaxParallelDiscovery are described at a time (a
	// configuration not seen before runs discovery); one beyond is
	// answered RESOURCE_EXHAUSTED, and the client asks again.
	MaxInitRequests int
	// Logger receives the runtime's logs (default slog.Default()).
	Logger *slog.Logger
}

// Runtime is the Secure Tool Runtime as a service: it syncs the packages
// of its namespace into its own store, announces their tools, and runs the
// calls it takes from the queue in the store's sandbox.
type Runtime struct {
	nc        *nats.Conn
	subj      Subjects
	id        string
	logger    *slog.Logger
	store     *toolpkg.Store
	pk        *Packages
	sync      *syncer
	heartbeat time.Duration
	maxCalls  int
	initSlots chan struct{} // one token per init_request being answered
	describes chan struct{} // one token per init_request whose tools are being described
	inits     sync.WaitGroup

	syncCancel context.CancelFunc
	syncDone   chan struct{}
	callCtx    context.Context // canceled when Close gives up waiting
	callStop   context.CancelFunc
	calls      sync.WaitGroup

	mu       sync.Mutex
	ready    bool
	closing  bool
	gateOpen bool
	running  int
	slotFree chan struct{} // closed, and replaced, when a slot frees
	served   map[string]*served
	active   map[callKey]*activeCall
	cache    map[string]*toolpkg.Toolset
	subs     []*nats.Subscription // cancel, catalog, report requests
}

// served is a toolset version a runtime serves.
type served struct {
	name    string
	version int // the platform's
	local   int // the store's
	tools   []toolpkg.ToolInfo
	invoke  []*nats.Subscription
	initReq []*nats.Subscription
}

type callKey struct{ agent, corr string }

type activeCall struct {
	cancel context.CancelCauseFunc
}

// errCanceledByCaller is the cause of a call its caller canceled.
var errCanceledByCaller = errors.New("call canceled by its caller")

// errClosing is the cause of a call canceled by Close.
var errClosing = errors.New("the runtime is shutting down")

// NewRuntime opens the runtime's store, syncs every current package
// version, and then serves: a runtime never answers with an older version
// than the platform published while it was away.
func NewRuntime(ctx context.Context, nc *nats.Conn, o *RuntimeOptions) (*Runtime, error) {
	if o == nil || o.Dir == "" {
		return nil, errors.New("mesh: runtime: Dir is required")
	}
	subj, err := NewSubjects(o.Namespace)
	if err != nil {
		return nil, err
	}
	id := o.ID
	if id == "" {
		id = defaultID()
	}
	if err := CheckID("runtime id", id); err != nil {
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("runtime", id)
	maxCalls := o.MaxCalls
	if maxCalls <= 0 {
		maxCalls = 4 * runtime.NumCPU()
	}
	hb := o.Heartbeat
	if hb <= 0 {
		hb = DefaultHeartbeat
	}
	var sopts toolpkg.Options
	if o.Store != nil {
		sopts = *o.Store
	}
	if sopts.Logger == nil {
		sopts.Logger = logger
	}
	maxInits := o.MaxInitRequests
	if maxInits <= 0 {
		maxInits = DefaultMaxInitRequests
	}
	// The calls' artifacts: the base store (the namespace's shared one
	// unless the options name another), with each call's input artifacts
	// in front.
	var aopts toolpkg.ArtifactOptions
	if sopts.Artifacts != nil {
		aopts = *sopts.Artifacts
	}
	if aopts.Store == nil {
		shared, err := NewArtifactStore(ctx, nc, &ArtifactStoreOptions{Namespace: subj.Namespace(), MaxArtifactBytes: aopts.MaxArtifactBytes})
		if err != nil {
			return nil, fmt.Errorf("mesh: runtime: %w", err)
		}
		aopts.Store = shared
	}
	aopts.Store = &inputStore{base: aopts.Store}
	sopts.Artifacts = &aopts
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("mesh: runtime dir: %w", err)
	}
	store, err := toolpkg.Open(filepath.Join(o.Dir, "store"), &sopts)
	if err != nil {
		return nil, fmt.Errorf("mesh: runtime store: %w", err)
	}
	pk, err := OpenPackages(ctx, nc, subj.Namespace())
	if err != nil {
		store.Close()
		return nil, err
	}
	sy, err := newSyncer(pk, store, o.Dir, id, logger)
	if err != nil {
		store.Close()
		return nil, err
	}
	r := &Runtime{nc: nc, subj: subj, id: id, logger: logger, store: store, pk: pk, sync: sy,
		heartbeat: hb, maxCalls: maxCalls, gateOpen: true, initSlots: make(chan struct{}, maxInits),
		describes: make(chan struct{}, toolpkg.DefaultMaxParallelDiscovery), slotFree: make(chan struct{}),
		served: map[string]*served{}, active: map[callKey]*activeCall{}, cache: map[string]*toolpkg.Toolset{}}
	r.callCtx, r.callStop = context.WithCancel(context.Background())
	sy.onChange = func(name string) {
		r.mu.Lock()
		ready := r.ready
		r.mu.Unlock()
		if ready {
			r.refresh(name)
		}
	}

	// The cancel subscription is up before any call can be taken.
	if err := r.subscribeControl(); err != nil {
		r.stop()
		return nil, err
	}
	syncCtx, cancel := context.WithCancel(context.Background())
	r.syncCancel, r.syncDone = cancel, make(chan struct{})
	readyCh := make(chan error, 1)
	go func() {
		defer close(r.syncDone)
		sy.watch(syncCtx, func(err error) { readyCh <- err })
	}()
	select {
	case err = <-readyCh:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		r.stop()
		return nil, fmt.Errorf("mesh: runtime: initial sync: %w", err)
	}
	r.mu.Lock()
	r.ready = true
	r.mu.Unlock()
	for _, name := range sy.names() {
		r.refresh(name)
	}
	if err := nc.Flush(); err != nil {
		r.stop()
		return nil, fmt.Errorf("mesh: runtime: %w", err)
	}
	return r, nil
}

// defaultID is the host name, as a subject token, and random hex.
func defaultID() string {
	host, _ := os.Hostname()
	var b strings.Builder
	for _, c := range host {
		if c < 128 && badTokenByte(string(c)) < 0 {
			b.WriteRune(c)
		}
		if b.Len() >= 48 {
			break
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	if b.Len() == 0 {
		b.WriteString("runtime")
	}
	return b.String() + "-" + hex.EncodeToString(rnd[:])
}

// ID returns the runtime's ID.
func (r *Runtime) ID() string { return r.id }

// Store returns the runtime's store.
func (r *Runtime) Store() *toolpkg.Store { return r.store }

// subscribeControl subscribes to the subjects every runtime hears.
func (r *Runtime) subscribeControl() error {
	for subject, h := range map[string]nats.MsgHandler{
		r.subj.CancelAll():         r.onCancel,
		r.subj.Catalog():           r.onCatalog,
		r.subj.SyncReportRequest(): func(*nats.Msg) { go r.sync.reportAll() },
	} {
		sub, err := r.nc.Subscribe(subject, h)
		if err != nil {
			return fmt.Errorf("mesh: runtime: subscribe %s: %w", subject, err)
		}
		r.subs = append(r.subs, sub)
	}
	return nil
}

// refresh serves the version of toolset name the store serves now, or
// stops serving it.
func (r *Runtime) refresh(name string) {
	e, ok := r.sync.entry(name)
	var info toolpkg.Info
	if ok && e.ServingLocal > 0 {
		var err error
		info, err = r.store.Info(name)
		if err != nil || info.Serving != e.ServingLocal {
			ok = false
		}
	} else {
		ok = false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.served[name]
	if ok && old != nil && old.version == e.ServingVersion && old.local == info.Serving {
		return
	}
	var keep map[string]bool
	if ok {
		keep = map[string]bool{}
		for _, t := range info.Tools {
			keep[name+ToolSeparator+t.Name] = true
		}
	}
	if old != nil {
		drainAll(old.invoke)
		drainAll(old.initReq)
		delete(r.served, name)
		for _, t := range old.tools {
			full := name + ToolSeparator + t.Name
			if !keep[full] {
				r.announceRemoved(full, old.version)
			}
		}
	}
	if !ok || r.closing {
		return
	}
	s := &served{name: name, version: e.ServingVersion, local: info.Serving, tools: info.Tools}
	r.served[name] = s
	for _, t := range info.Tools {
		full := name + ToolSeparator + t.Name
		if CheckToolName(full) != nil {
			r.logger.Warn("mesh: tool name cannot be a subject token; not served", "tool", cut(full, 80))
			continue
		}
		subject, _ := r.subj.InitRequest(full)
		if sub, err := r.nc.QueueSubscribe(subject, QueueGroup, r.onInitRequest); err == nil {
			s.initReq = append(s.initReq, sub)
		} else {
			r.logger.Warn("mesh: subscribe", "subject", subject, "err", err)
		}
	}
	if r.gateOpen {
		r.subscribeInvoke(s)
	}
	for _, t := range info.Tools {
		r.announceInit(s, t)
	}
}

// subscribeInvoke subscribes to the invoke subjects of s; r.mu is held.
func (r *Runtime) subscribeInvoke(s *served) {
	for _, t := range s.tools {
		full := name2(s.name, t.Name)
		if CheckToolName(full) != nil {
			continue
		}
		plain, _ := r.subj.Invoke(full)
		pinned, _ := r.subj.InvokeVersion(full, s.version)
		for _, subject := range []string{plain, pinned} {
			sub, err := r.nc.QueueSubscribe(subject, QueueGroup, r.onInvoke)
			if err != nil {
				r.logger.Warn("mesh: subscribe", "subject", subject, "err", err)
				continue
			}
			_ = sub.SetPendingLimits(-1, -1)
			s.invoke = append(s.invoke, sub)
		}
	}
}

func name2(toolset, tool string) string { return toolset + ToolSeparator + tool }

// drainAll stops subs from receiving; messages already delivered are still
// handled (never dropped).
func drainAll(subs []*nats.Subscription) {
	for _, sub := range subs {
		_ = sub.Drain()
	}
}

// closeGate stops taking calls while every slot is busy; r.mu is held.
func (r *Runtime) closeGate() {
	if !r.gateOpen {
		return
	}
	r.gateOpen = false
	for _, s := range r.served {
		drainAll(s.invoke)
		s.invoke = nil
	}
}

// openGate takes calls again; r.mu is held.
func (r *Runtime) openGate() {
	if r.gateOpen || r.closing {
		return
	}
	r.gateOpen = true
	for _, s := range r.served {
		r.subscribeInvoke(s)
	}
}

// initParams describes tool t of s.
func (r *Runtime) initParams(s *served, t toolpkg.ToolInfo) InitParams {
	return InitParams{
		ToolName: name2(s.name, t.Name), Description: t.Description, Parameters: t.Parameters,
		ArtifactParams: t.ArtifactParams, Instructions: t.Instructions, ConfigSchema: t.Config,
		Toolset: s.name, Tool: t.Name, Version: s.version, Runtime: r.id,
		TimeoutSeconds: t.TimeoutSeconds, Auth: len(t.Auth) > 0,
	}
}

func (r *Runtime) announceInit(s *served, t toolpkg.ToolInfo) {
	subject, err := r.subj.Init(name2(s.name, t.Name))
	if err != nil {
		return
	}
	data, err := encodeRequest("", MethodInit, r.initParams(s, t))
	if err != nil {
		r.logger.Warn("mesh: init announcement too large", "tool", name2(s.name, t.Name), "err", err)
		return
	}
	_ = r.nc.Publish(subject, data)
}

func (r *Runtime) announceRemoved(tool string, version int) {
	subject, err := r.subj.Removed(tool)
	if err != nil {
		return
	}
	if data, err := encodeRequest("", MethodRemoved, RemovedParams{ToolName: tool, Version: version, Runtime: r.id}); err == nil {
		_ = r.nc.Publish(subject, data)
	}
}

// replyTarget is where the answers of one request go.
type replyTarget struct {
	agent, corr string
	reply       string // response subject or a request inbox
	status      string // status subject; "" for init_request
	viaInbox    bool
}

// invokeTarget checks that an invoke's replyTo and statusTo are the
// caller's own response and status subjects for the call's correlation ID
// (corr, "" when the body could not be read: then the subject's). It
// returns ok false when nothing may be sent.
func (r *Runtime) invokeTarget(m *nats.Msg, corr string) (replyTarget, bool) {
	replyTo := m.Header.Get(HeaderReplyTo)
	if replyTo == "" {
		replyTo = m.Reply
	}
	kind, agent, c, ok := r.subj.ParseCall(replyTo)
	if !ok || kind != "response" || (corr != "" && c != corr) {
		return replyTarget{}, false
	}
	if m.Reply != "" && m.Reply != replyTo {
		return replyTarget{}, false
	}
	status, _ := r.subj.Status(agent, c)
	if st := m.Header.Get(HeaderStatusTo); st != "" && st != status {
		return replyTarget{}, false
	}
	return replyTarget{agent: agent, corr: c, reply: replyTo, status: status}, true
}

// requestTarget checks the reply subject of an init_request or catalog
// request: the caller's response subject for id, or a request inbox.
func (r *Runtime) requestTarget(m *nats.Msg, id string) (replyTarget, bool) {
	replyTo := m.Header.Get(HeaderReplyTo)
	if replyTo == "" {
		replyTo = m.Reply
	}
	if strings.HasPrefix(replyTo, nats.InboxPrefix) && (m.Reply == "" || m.Reply == replyTo) {
		rest := replyTo[len(nats.InboxPrefix):]
		if rest != "" && len(replyTo) <= 256 && !strings.ContainsAny(rest, "*> \t\r\n") {
			return replyTarget{reply: replyTo, viaInbox: true}, true
		}
		return replyTarget{}, false
	}
	kind, agent, c, ok := r.subj.ParseCall(replyTo)
	if !ok || kind != "response" || (id != "" && c != id) || (m.Reply != "" && m.Reply != replyTo) {
		return replyTarget{}, false
	}
	return replyTarget{agent: agent, corr: c, reply: replyTo}, true
}

func (r *Runtime) send(subject string, data []byte) {
	if err := r.nc.Publish(subject, data); err != nil {
		r.logger.Warn("mesh: publish", "subject", subject, "err", err)
	}
}

func (r *Runtime) sendError(t replyTarget, id, code, message string, data *ErrorData) {
	if data == nil {
		data = &ErrorData{}
	}
	data.Runtime = r.id
	b, err := encodeError(id, code, message, data)
	if err != nil {
		return
	}
	r.send(t.reply, b)
}

func (r *Runtime) sendStatus(t replyTarget, taskID, state, text string, fraction *float64) {
	if t.status == "" {
		return
	}
	p := StatusParams{TaskID: taskID, StatusText: cut(text, MaxStatusTextBytes), Timestamp: Timestamp(time.Now()),
		State: state, Fraction: fraction, Runtime: r.id}
	if b, err := encodeRequest("", MethodStatus, p); err == nil {
		r.send(t.status, b)
	}
}

// onInvoke takes a call: it checks the message, waits for a slot, and runs
// the call on a goroutine of its own.
func (r *Runtime) onInvoke(m *nats.Msg) {
	if len(m.Data) > MaxMessageBytes {
		if t, ok := r.invokeTarget(m, ""); ok {
			r.sendError(t, t.corr, CodeInvalidRequest, fmt.Sprintf("message of %d bytes, at most %d", len(m.Data), MaxMessageBytes), nil)
		}
		return
	}
	req, err := DecodeRequest(m.Data, MethodInvoke, true)
	if err != nil {
		if t, ok := r.invokeTarget(m, ""); ok {
			r.sendError(t, t.corr, CodeInvalidRequest, err.Error(), nil)
		}
		return
	}
	t, ok := r.invokeTarget(m, req.ID)
	if !ok {
		r.logger.Warn("mesh: invoke dropped: its reply subjects are not the caller's own for its id",
			"subject", m.Subject, "reply", cut(m.Reply, 200), "replyTo", cut(m.Header.Get(HeaderReplyTo), 200))
		return
	}
	var p InvokeParams
	if err := Decode(req.Params, 0, &p); err != nil {
		r.sendError(t, req.ID, CodeInvalidRequest, "params: "+err.Error(), nil)
		return
	}
	_, subjTool, subjVersion, ok := r.subj.ParseTool(m.Subject)
	if !ok || p.ToolName != subjTool {
		r.sendError(t, req.ID, CodeInvalidRequest, fmt.Sprintf("tool_name %q is not the subject's tool %q", cut(p.ToolName, 80), subjTool), nil)
		return
	}
	if p.Version != 0 && subjVersion != 0 && p.Version != subjVersion {
		r.sendError(t, req.ID, CodeInvalidRequest, "version differs from the subject's", nil)
		return
	}
	if subjVersion != 0 {
		p.Version = subjVersion
	}
	if p.TimeoutSeconds < 0 || p.TimeoutSeconds > MaxTimeoutSeconds {
		r.sendError(t, req.ID, CodeInvalidRequest, fmt.Sprintf("timeout_seconds must be between 0 and %d", MaxTimeoutSeconds), nil)
		return
	}
	if err := checkScopes(p.Scopes); err != nil {
		r.sendError(t, req.ID, CodeInvalidRequest, "scopes: "+err.Error(), nil)
		return
	}
	if len(p.Args) == 0 {
		p.Args = json.RawMessage("{}")
	}
	if p.TaskID == "" {
		p.TaskID = req.ID
	}

	// Wait for a slot. The gate closed when the last one was taken, so
	// only the messages already on their way wait here.
	r.mu.Lock()
	for !r.closing && r.running >= r.maxCalls {
		free := r.slotFree
		r.mu.Unlock()
		select {
		case <-free:
		case <-r.callCtx.Done():
		}
		r.mu.Lock()
	}
	if r.closing {
		r.mu.Unlock()
		r.sendError(t, req.ID, CodeToolNotAvailable, "the runtime is shutting down; the call did not run", nil)
		return
	}
	key := callKey{t.agent, t.corr}
	if _, dup := r.active[key]; dup {
		r.mu.Unlock()
		r.logger.Warn("mesh: invoke dropped: its correlation id is running already", "agent", t.agent, "id", t.corr)
		return
	}
	ctx, cancel := context.WithCancelCause(r.callCtx)
	r.active[key] = &activeCall{cancel: cancel}
	r.running++
	if r.running >= r.maxCalls {
		r.closeGate()
	}
	r.calls.Add(1)
	r.mu.Unlock()

	go func() {
		defer r.calls.Done()
		defer func() {
			cancel(nil)
			r.mu.Lock()
			delete(r.active, key)
			r.running--
			r.wakeWaiters()
			if r.running < r.maxCalls {
				r.openGate()
			}
			r.mu.Unlock()
		}()
		r.run(ctx, t, req.ID, &p)
	}()
}

// wakeWaiters wakes the calls waiting for a slot; r.mu is held.
func (r *Runtime) wakeWaiters() {
	close(r.slotFree)
	r.slotFree = make(chan struct{})
}

// checkScopes checks the scopes of an invoke.
func checkScopes(scopes []string) error {
	if len(scopes) > MaxScopes {
		return fmt.Errorf("%d scopes, at most %d", len(scopes), MaxScopes)
	}
	for _, sc := range scopes {
		if sc == "" || len(sc) > MaxScopeBytes || !utf8.ValidString(sc) {
			return fmt.Errorf("a scope is empty, longer than %d bytes or not UTF-8", MaxScopeBytes)
		}
	}
	return nil
}

// run runs one call and answers it.
func (r *Runtime) run(ctx context.Context, t replyTarget, id string, p *InvokeParams) {
	start := time.Now()
	hbDone := make(chan struct{})
	defer close(hbDone)
	go func() {
		// A call that ends at once is answered with its result alone: the
		// acceptance, which tells the caller who runs the call and starts
		// its heartbeat watch, goes out only once the call has run
		// acceptDelay, so a quick call costs two messages, as a bare
		// request does.
		accept := time.NewTimer(min(r.heartbeat, acceptDelay))
		defer accept.Stop()
		select {
		case <-hbDone:
			return
		case <-accept.C:
			r.sendStatus(t, p.TaskID, StateAccepted, "accepted", nil)
		}
		tick := time.NewTicker(r.heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-hbDone:
				return
			case <-tick.C:
				r.sendStatus(t, p.TaskID, StateRunning, "running", nil)
			}
		}
	}()

	res, err := r.execute(ctx, t, p)
	elapsed := time.Since(start).Milliseconds()
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) && (errors.Is(cause, errCanceledByCaller) || errors.Is(cause, errClosing)) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		code, msg, data := r.mapError(err, p)
		data.ExecutionTimeMS = elapsed
		r.sendError(t, id, code, msg, data)
		return
	}
	out := InvokeResult{ExecutionTimeMS: elapsed}
	out.ToolResult, out.CreatedArtifacts = toolResult(res)
	b, err := encodeResult(id, out)
	if err != nil {
		r.sendError(t, id, CodeResourceExhausted, "the result is too large to send: "+err.Error(), &ErrorData{ExecutionTimeMS: elapsed})
		return
	}
	r.send(t.reply, b)
}

// execute runs the call through the store's toolset, as in process.
func (r *Runtime) execute(ctx context.Context, t replyTarget, p *InvokeParams) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("mesh: call panicked: %v", v)
		}
	}()
	name, tool, ok := SplitToolName(p.ToolName)
	if !ok {
		return nil, &notFoundError{tool: p.ToolName}
	}
	r.mu.Lock()
	s := r.served[name]
	r.mu.Unlock()
	if s == nil {
		return nil, &notFoundError{tool: p.ToolName}
	}
	if p.Version != 0 && p.Version != s.version {
		return nil, &versionError{toolset: name, want: p.Version, have: s.version}
	}
	var artifactParams map[string]toolpkg.ArtifactParam
	for _, ti := range s.tools {
		if ti.Name == tool {
			artifactParams = ti.ArtifactParams
		}
	}
	inputs, err := readInputs(p, artifactParams)
	if err != nil {
		return nil, err
	}
	ctx = withInputs(ctx, inputs)
	ts, err := r.toolset(name, s.local, wireConfig(p.ToolsetConfig, p.ToolConfig, p.ToolName))
	if err != nil {
		return nil, err
	}
	if p.TimeoutSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.TimeoutSeconds*float64(time.Second)))
		defer cancel()
	}
	values := map[string]any{}
	for k, v := range map[string]string{"app_name": p.AppName, "user_id": p.UserID, "session_id": p.SessionID} {
		if v != "" {
			values[k] = v
		}
	}
	run := toolset.NewRun("", toolset.WithValues(values), toolset.WithValue(toolpkg.Scopes, p.Scopes))
	defer run.End()
	ctx = run.Turn(ctx)
	ctx = toolset.WithProgress(ctx, func(pr toolset.Progress) {
		f := pr.Fraction
		var fp *float64
		if f >= 0 {
			fp = &f
		}
		r.sendStatus(t, p.TaskID, StateProgress, pr.Message, fp)
	})
	list, err := toolset.BuildTools(ctx, t.agent, ts)
	if err != nil {
		return nil, err
	}
	// The policy of the tool under this configuration, applied again
	// here: a caller that does not know it cannot get around it.
	policy, hasPolicy := ts.Policies()[tool]
	if hasPolicy && len(policy.Scopes) > 0 && !toolpkg.HasScopes(ctx, policy.Scopes) {
		return nil, &scopeError{tool: p.ToolName, missing: missingScopes(policy.Scopes, p.Scopes)}
	}
	listed, ok := list.Lookup(p.ToolName)
	if !ok {
		if why, ok := ts.Unavailable()[tool]; ok {
			return nil, &initError{tool: p.ToolName, reason: why, missing: policy.Missing}
		}
		return nil, &notFoundError{tool: p.ToolName}
	}
	// The store may have moved to the next version since the call was
	// taken (its upload done, the runtime not yet resubscribed): a call
	// pinned to a version never runs on another.
	if p.Version != 0 && listed.Metadata["toolpkg.version"] != strconv.Itoa(s.local) {
		return nil, &versionError{toolset: name, want: p.Version}
	}
	call := toolset.ToolCall{ID: t.corr, Name: p.ToolName, Args: p.Args}
	if policy.Approval {
		if !p.Approved {
			return nil, &approvalError{tool: p.ToolName}
		}
		// The caller's run asked its human: the call runs once, as
		// approved.
		run.RecordApproval(call)
	}
	return list.Execute(ctx, call)
}

// wireConfig is the toolpkg.Config of a call: the toolset's configuration
// when given, else tool_config as the overlay of the called tool.
func wireConfig(wc *WireConfig, toolConfig map[string]any, fullName string) toolpkg.Config {
	var c toolpkg.Config
	if wc != nil {
		c.Toolset = plainNumbers(wc.Toolset)
		c.Tools = map[string]map[string]any{}
		for k, v := range wc.Tools {
			c.Tools[k] = plainNumbers(v)
		}
		c.Exclude = wc.Exclude
	}
	// A caller of this package sends toolset_config, and tool_config too
	// (the tool's merged values, for SAM's runtimes): the former holds
	// all of it, with the precedence in process. tool_config alone is the
	// per-tool overlay of a SAM peer.
	if wc == nil && len(toolConfig) > 0 {
		_, tool, _ := SplitToolName(fullName)
		if c.Tools == nil {
			c.Tools = map[string]map[string]any{}
		}
		m := map[string]any{}
		for k, v := range c.Tools[tool] {
			m[k] = v
		}
		for k, v := range plainNumbers(toolConfig) {
			m[k] = v
		}
		c.Tools[tool] = m
	}
	return c
}

// toolset returns the store's toolset name configured with c, one value
// per version and configuration, so that its discovery is done once.
func (r *Runtime) toolset(name string, local int, c toolpkg.Config) (*toolpkg.Toolset, error) {
	key, err := json.Marshal(struct {
		N string
		V int
		T map[string]any
		O map[string]map[string]any
		X []string
	}{name, local, c.Toolset, c.Tools, c.Exclude})
	if err != nil {
		return nil, &initError{tool: name, reason: "configuration cannot be encoded: " + err.Error()}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ts, ok := r.cache[string(key)]; ok {
		return ts, nil
	}
	if len(r.cache) >= maxCachedToolsets {
		clear(r.cache)
	}
	ts := r.store.ToolsetWithConfig(name, c)
	r.cache[string(key)] = ts
	return ts, nil
}

// toolResult turns what a call returned into tool_result and the artifacts
// it created.
func toolResult(res any) (*ToolResult, []CreatedArtifact) {
	var arts []CreatedArtifact
	fromResult := func(tr *ToolResult, pr *toolpkg.Result) {
		tr.Status, tr.Message, tr.Data, tr.DataObjects = pr.Status, pr.Message, pr.Data, pr.DataObjects
		tr.ErrorCode, tr.Omitted = pr.ErrorCode, pr.Omitted
		for _, a := range pr.Artifacts {
			arts = append(arts, CreatedArtifact{Filename: a.Name, Version: a.Version, MIMEType: a.MIMEType, SizeBytes: a.Size, Description: a.Description})
		}
	}
	switch v := res.(type) {
	case *toolpkg.Result:
		tr := &ToolResult{Kind: ResultKindResult, Text: v.ModelText(), Truncated: v.Truncated()}
		fromResult(tr, v)
		return tr, arts
	case *toolset.Content:
		tr := &ToolResult{Kind: ResultKindContent, Text: v.ModelText()}
		if pr, ok := v.Structured.(*toolpkg.Result); ok {
			fromResult(tr, pr)
		}
		if v.Structured != nil {
			if b, err := json.Marshal(v.Structured); err == nil {
				tr.Structured = b
			}
		}
		return tr, arts
	case string:
		return &ToolResult{Kind: ResultKindText, Text: v}, nil
	case nil:
		return &ToolResult{Kind: ResultKindText}, nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return &ToolResult{Kind: ResultKindText, Text: fmt.Sprint(v)}, nil
		}
		return &ToolResult{Kind: ResultKindText, Text: string(b)}, nil
	}
}

// notFoundError is a tool this runtime does not serve.
type notFoundError struct{ tool string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("tool %q is not served by this runtime", cut(e.tool, 80))
}

// versionError is a call pinned to a version this runtime does not hold.
type versionError struct {
	toolset    string
	want, have int
}

func (e *versionError) Error() string {
	if e.have == 0 {
		return fmt.Sprintf("no runtime serves version %d of toolset %s here (this runtime is moving to another version)", e.want, e.toolset)
	}
	return fmt.Sprintf("no runtime serves version %d of toolset %s here (this runtime serves version %d)", e.want, e.toolset, e.have)
}

// scopeError is a call whose scopes do not cover the tool's
// required_scopes.
type scopeError struct {
	tool    string
	missing []string
}

func (e *scopeError) Error() string {
	return fmt.Sprintf("tool %s requires scopes the call does not carry: %s", e.tool, strings.Join(e.missing, ", "))
}

// missingScopes returns the scopes of need that have lacks.
func missingScopes(need, have []string) []string {
	var out []string
	for _, s := range need {
		if !slices.Contains(have, s) {
			out = append(out, s)
		}
	}
	return out
}

// approvalError is a call of a tool that requires a human's approval,
// and that does not say it was approved.
type approvalError struct{ tool string }

func (e *approvalError) Error() string {
	return fmt.Sprintf("tool %s requires a human's approval, and the call does not say it was approved", e.tool)
}

// initError is a tool the configuration leaves out (missing holds the
// required keys without a value), or a configuration that cannot be used.
type initError struct {
	tool, reason string
	missing      []string
}

func (e *initError) Error() string {
	return fmt.Sprintf("tool %s is not available with this configuration: %s", e.tool, e.reason)
}

// mapError maps what a call returned to SAM's error codes.
func (r *Runtime) mapError(err error, p *InvokeParams) (code, message string, data *ErrorData) {
	name, tool, _ := SplitToolName(p.ToolName)
	data = &ErrorData{Toolset: name, Tool: tool}
	if me, ok := errors.AsType[toolset.ModelError](err); ok {
		data.ModelText = me.ModelText()
	}
	var (
		timeout  *toolset.TimeoutError
		auth     *toolpkg.AuthRequiredError
		failure  *toolpkg.ToolFailure
		artifact *toolpkg.ArtifactError
		stale    *toolpkg.StaleToolError
		notReady *toolpkg.NotReadyError
		cfg      *toolpkg.ConfigError
		exec     *toolpkg.ExecError
		nf       *notFoundError
		ve       *versionError
		ie       *initError
		se       *scopeError
		ae       *approvalError
		in       *inputError
		unknown  *toolset.UnknownToolError
	)
	switch {
	case errors.Is(err, errCanceledByCaller):
		return CodeExecutionError, err.Error(), data
	case errors.Is(err, errClosing):
		return CodeToolNotAvailable, err.Error(), data
	case errors.As(err, &timeout):
		data.TimedOut, data.TimeoutSeconds = true, timeout.After.Seconds()
		return CodeSandboxTimeout, err.Error(), data
	case errors.Is(err, context.DeadlineExceeded):
		data.TimedOut, data.TimeoutSeconds = true, p.TimeoutSeconds
		if data.ModelText == "" {
			data.ModelText = fmt.Sprintf("the tool %s did not finish within %gs", p.ToolName, p.TimeoutSeconds)
		}
		return CodeSandboxTimeout, err.Error(), data
	case errors.As(err, &auth):
		data.ModelText = auth.ModelText()
		return CodeAuthenticationFailed, auth.Message, data
	case errors.As(err, &failure):
		data.ToolErrorCode = failure.Code
		return CodeToolError, failure.Message, data
	case errors.As(err, &artifact):
		data.ArtifactParam, data.Problems = artifact.Param, []string{artifact.Reason}
		return CodeArtifactError, err.Error(), data
	case errors.As(err, &in):
		data.ArtifactParam, data.Problems = in.key, []string{in.reason}
		data.ModelText = (&toolpkg.ArtifactError{Param: in.key, Reason: in.reason}).ModelText()
		return CodeArtifactError, err.Error(), data
	case errors.As(err, &se):
		data.MissingScopes = se.missing
		return CodeToolNotFound, err.Error(), data
	case errors.As(err, &ae):
		return CodeInvalidRequest, err.Error(), data
	case errors.As(err, &stale), errors.As(err, &notReady):
		return CodeToolNotAvailable, err.Error(), data
	case errors.As(err, &ve):
		data.Version = ve.have
		return CodeToolNotAvailable, err.Error(), data
	case errors.As(err, &cfg):
		data.Problems = cfg.Problems
		return CodeInitError, err.Error(), data
	case errors.As(err, &ie):
		data.Problems = []string{ie.reason}
		data.Unavailable = len(ie.missing) > 0
		data.MissingKeys = ie.missing
		return CodeInitError, err.Error(), data
	case errors.As(err, &nf), errors.As(err, &unknown):
		return CodeToolNotFound, err.Error(), data
	case errors.As(err, &exec):
		return CodeSandboxFailed, err.Error(), data
	case data.ModelText != "":
		return CodeExecutionError, err.Error(), data
	default:
		return CodeInternalError, err.Error(), data
	}
}

// onCancel cancels a call of the agent the subject names, if it runs here.
func (r *Runtime) onCancel(m *nats.Msg) {
	kind, agent, corr, ok := r.subj.ParseCall(m.Subject)
	if !ok || kind != "cancel" || len(m.Data) > MaxMessageBytes {
		return
	}
	r.mu.Lock()
	c := r.active[callKey{agent, corr}]
	r.mu.Unlock()
	if c != nil {
		c.cancel(errCanceledByCaller)
	}
}

// onInitRequest answers with a tool's schema under the given configuration.
func (r *Runtime) onInitRequest(m *nats.Msg) {
	if len(m.Data) > MaxMessageBytes {
		return
	}
	req, err := DecodeRequest(m.Data, MethodInitRequest, false)
	if err != nil {
		if t, ok := r.requestTarget(m, ""); ok && !t.viaInbox {
			r.sendError(t, t.corr, CodeInvalidRequest, err.Error(), nil)
		} else if ok {
			r.sendError(t, "", CodeInvalidRequest, err.Error(), nil)
		}
		return
	}
	t, ok := r.requestTarget(m, req.ID)
	if !ok {
		r.logger.Warn("mesh: init_request dropped: its reply subject is not the caller's own", "subject", m.Subject)
		return
	}
	id := req.ID
	if id == "" {
		id = t.corr
	}
	var p InitRequestParams
	if err := Decode(req.Params, 0, &p); err != nil {
		r.sendError(t, id, CodeInvalidRequest, "params: "+err.Error(), nil)
		return
	}
	_, subjTool, _, ok := r.subj.ParseTool(m.Subject)
	if !ok || p.ToolName != subjTool {
		r.sendError(t, id, CodeInvalidRequest, "tool_name is not the subject's tool", nil)
		return
	}
	select {
	case r.initSlots <- struct{}{}:
	default:
		r.sendError(t, id, CodeResourceExhausted, fmt.Sprintf("this runtime answers %d init_requests at once; ask again", cap(r.initSlots)), nil)
		return
	}
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		<-r.initSlots
		r.sendError(t, id, CodeToolNotAvailable, "the runtime is shutting down", nil)
		return
	}
	r.inits.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.inits.Done()
		defer func() { <-r.initSlots }()
		// A configuration not seen before is discovered again (a
		// process per executable): a few at once, the others wait.
		r.describes <- struct{}{}
		ip, err := r.describe(&p)
		<-r.describes
		if err != nil {
			code, msg, data := r.mapError(err, &InvokeParams{ToolName: p.ToolName})
			if code == CodeInternalError || code == CodeExecutionError {
				code = CodeInitError
			}
			r.sendError(t, id, code, msg, data)
			return
		}
		b, err := encodeResult(id, ip)
		if err != nil {
			r.sendError(t, id, CodeResourceExhausted, err.Error(), nil)
			return
		}
		r.send(t.reply, b)
	}()
}

// describe returns the tool's InitParams under the request's configuration.
func (r *Runtime) describe(p *InitRequestParams) (ip InitParams, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("mesh: describe panicked: %v", v)
		}
	}()
	name, tool, ok := SplitToolName(p.ToolName)
	if !ok {
		return ip, &notFoundError{tool: p.ToolName}
	}
	r.mu.Lock()
	s := r.served[name]
	r.mu.Unlock()
	if s == nil {
		return ip, &notFoundError{tool: p.ToolName}
	}
	if p.Version != 0 && p.Version != s.version {
		return ip, &versionError{toolset: name, want: p.Version, have: s.version}
	}
	ts, err := r.toolset(name, s.local, wireConfig(p.ToolsetConfig, p.ToolConfig, p.ToolName))
	if err != nil {
		return ip, err
	}
	ctx, cancel := context.WithTimeout(r.callCtx, 60*time.Second)
	defer cancel()
	tools, err := ts.GetTools(ctx)
	if err != nil {
		return ip, err
	}
	for _, tl := range tools {
		if tl.Name != p.ToolName {
			continue
		}
		for _, ti := range s.tools {
			if ti.Name == tool {
				ip = r.initParams(s, ti)
			}
		}
		if pol, ok := ts.Policies()[tool]; ok {
			ip.RequiresApproval, ip.RequiredScopes = pol.Approval, pol.Scopes
		}
		ip.ToolName, ip.Description = tl.Name, tl.Description
		if tl.Parameters != nil {
			b, err := json.Marshal(tl.Parameters)
			if err != nil {
				return ip, fmt.Errorf("mesh: schema of %s: %w", tl.Name, err)
			}
			ip.Parameters = b
		}
		return ip, nil
	}
	if why, ok := ts.Unavailable()[tool]; ok {
		return ip, &initError{tool: p.ToolName, reason: why, missing: ts.Policies()[tool].Missing}
	}
	return ip, &notFoundError{tool: p.ToolName}
}

// onCatalog answers with every toolset version this runtime serves.
func (r *Runtime) onCatalog(m *nats.Msg) {
	if len(m.Data) > MaxMessageBytes {
		return
	}
	t, ok := r.requestTarget(m, "")
	if !ok {
		return
	}
	id := "catalog"
	if req, err := DecodeRequest(m.Data, MethodCatalog, false); err == nil && req.ID != "" {
		id = req.ID
	}
	cat := r.catalog(true)
	b, err := encodeResult(id, cat)
	if errors.Is(err, ErrTooLarge) {
		b, err = encodeResult(id, r.catalog(false))
	}
	if err != nil {
		r.sendError(t, id, CodeResourceExhausted, err.Error(), nil)
		return
	}
	r.send(t.reply, b)
}

// catalog lists what r serves; without schemas when full is false.
func (r *Runtime) catalog(full bool) Catalog {
	cat := Catalog{Runtime: r.id, Toolsets: []CatalogToolset{}}
	for _, name := range r.sync.names() {
		e, _ := r.sync.entry(name)
		r.mu.Lock()
		s := r.served[name]
		r.mu.Unlock()
		ct := CatalogToolset{Name: name, Version: e.Version, Status: e.Status, Errors: e.Errors}
		if s != nil {
			ct.Version, ct.Status = s.version, SyncReady
			for _, t := range s.tools {
				ip := r.initParams(s, t)
				if !full {
					ip.Parameters, ip.Instructions = nil, ""
				}
				ct.Tools = append(ct.Tools, ip)
			}
		}
		cat.Toolsets = append(cat.Toolsets, ct)
		if len(cat.Toolsets) >= MaxToolsets {
			break
		}
	}
	return cat
}

// Close stops taking calls, lets the running ones finish within ctx, then
// cancels them (their tools get SIGTERM and the store's grace) and waits for
// them to answer; it announces its tools removed and closes its store. It
// does not close the connection. Closing twice is safe.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return nil
	}
	r.closing = true
	r.gateOpen = false
	r.wakeWaiters()
	for _, s := range r.served {
		drainAll(s.invoke)
		drainAll(s.initReq)
		s.invoke, s.initReq = nil, nil
	}
	r.mu.Unlock()
	r.syncCancel()
	<-r.syncDone

	done := make(chan struct{})
	go func() {
		r.calls.Wait()
		r.inits.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("mesh: runtime close: calls canceled: %w", ctx.Err())
		r.mu.Lock()
		for _, c := range r.active {
			c.cancel(errClosing)
		}
		r.mu.Unlock()
		r.callStop() // and the init_requests being answered
		<-done
	}
	r.mu.Lock()
	for _, s := range r.served {
		for _, t := range s.tools {
			r.announceRemoved(name2(s.name, t.Name), s.version)
		}
	}
	r.served = map[string]*served{}
	r.mu.Unlock()
	_ = r.nc.Flush()
	r.stop()
	return err
}

// stop releases what NewRuntime took.
func (r *Runtime) stop() {
	for _, sub := range r.subs {
		_ = sub.Unsubscribe()
	}
	r.callStop()
	if r.syncCancel != nil {
		r.syncCancel()
		<-r.syncDone
	}
	_ = r.store.Close()
}
