package toolpkg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/gotoolset/toolset/internal/tracefields"
	"github.com/gotoolset/toolset/toolpkg/internal/protocol"
)

// Toolset is a packaged toolset of a [Store] as a [toolset.Toolset]: its
// tools are named <toolset>__<tool> and run in the store's sandbox with the
// configuration given to [Store.Toolset] over the store's configuration
// of the toolset ([Store.SetConfig]). It follows the store: the serving
// version (a re-upload once it is ready) and a new stored configuration
// are picked up on the next turn; while nothing serves, GetTools fails
// with a *NotReadyError. Safe for concurrent use.
type Toolset struct {
	store  *Store
	name   string
	config Config

	mu    sync.Mutex
	built *built
}

// built caches the tools of one version and stored configuration.
type built struct {
	version      int
	configGen    uint64
	tools        []toolset.Tool
	unavailable  map[string]string
	policies     map[string]ToolPolicy
	instructions string
	err          error
}

// Toolset returns the toolset name of the store as a [toolset.Toolset],
// configured with config: values for the keys of the tools' config schemas,
// checked each time a new version is listed (unknown, reserved and missing
// required keys and wrong types are a *ConfigError; defaults are applied).
// Each tool receives, as tool_config, the keys its own schema declares.
// The toolset may be in any state, or not exist yet: GetTools says what is
// wrong each turn. The config map is copied. It is
// ToolsetWithConfig(name, Config{Toolset: config}).
func (s *Store) Toolset(name string, config map[string]any) *Toolset {
	return s.ToolsetWithConfig(name, Config{Toolset: config})
}

// ToolsetWithConfig returns the toolset name of the store as a
// [toolset.Toolset] for one agent, configured as the platform models it:
// the toolset's values, the agent's overlay by tool, the excluded tools,
// and the reserved keys hil, required_scopes and auth (see
// [Config]). The configuration is copied, and checked
// each time a new version is listed.
func (s *Store) ToolsetWithConfig(name string, config Config) *Toolset {
	return &Toolset{store: s, name: name, config: config.clone()}
}

// Unavailable returns, by tool name, the tools of the version last
// listed that are left out because a required configuration value is
// missing, and why. The reasons never hold a value.
func (t *Toolset) Unavailable() map[string]string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.built == nil {
		return nil
	}
	out := make(map[string]string, len(t.built.unavailable))
	for k, v := range t.built.unavailable {
		out[k] = v
	}
	return out
}

// Name returns the toolset's name in the store.
func (t *Toolset) Name() string {
	if t == nil {
		return ""
	}
	return t.name
}

// Label implements [toolset.Labeler]: "toolpkg:<name>".
func (t *Toolset) Label() string {
	if t == nil {
		return ""
	}
	return "toolpkg:" + t.name
}

// errNilToolset is what the methods of a nil *Toolset return.
var errNilToolset = errors.New("toolpkg: nil *Toolset")

// NotReadyError is returned by GetTools while no version of a toolset
// serves: nothing was uploaded, discovery is running or failed for every
// upload so far, or the toolset was removed.
type NotReadyError struct {
	Toolset string
	Status  Status
	// Errors are the discovery errors of a failed toolset.
	Errors []string
}

// Error implements error.
func (e *NotReadyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "toolpkg: toolset %q: not ready (status %s)", e.Toolset, e.Status)
	switch e.Status {
	case StatusCreated:
		b.WriteString(": no package was uploaded yet")
	case StatusPending:
		b.WriteString(": discovery is running; its tools are available once it finishes")
	case StatusRemoved:
		b.WriteString(": it was removed")
	case StatusFailed:
		b.WriteString(": discovery failed:")
		for _, m := range e.Errors {
			b.WriteString("\n  - " + m)
		}
	}
	return b.String()
}

// GetTools implements [toolset.Toolset].
func (t *Toolset) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	if t == nil {
		return nil, errNilToolset
	}
	serving, status, gen, ok := t.store.servingKey(t.name)
	if !ok {
		// The one error of Info, said in the words of a toolset's error.
		return nil, fmt.Errorf("toolpkg: toolset %q: %w", t.name, unprefixed{ErrNotFound})
	}
	if serving == 0 || status == StatusRemoved {
		if err := t.notReady(); err != nil {
			return nil, err
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.built == nil || t.built.version != serving || t.built.configGen != gen {
		// The record and the configuration are read together: both may
		// have changed since servingKey, and the tools are built, and
		// remembered, for what they are now.
		info, stored, sealed, gen, err := t.store.servingState(t.name)
		if err != nil {
			return nil, fmt.Errorf("toolpkg: toolset %q: %w", t.name, unprefixed{ErrNotFound})
		}
		if info.Serving == 0 || info.Status == StatusRemoved {
			return nil, &NotReadyError{Toolset: t.name, Status: info.Status, Errors: info.Errors}
		}
		tools, unavailable, policies, instr, err := t.build(ctx, info, stored, sealed)
		if err != nil && ctx.Err() != nil {
			// Canceled: the next turn tries again.
			return nil, err
		}
		t.built = &built{version: info.Serving, configGen: gen, tools: tools, unavailable: unavailable, policies: policies, instructions: instr, err: err}
	}
	if t.built.err != nil {
		return nil, t.built.err
	}
	return append([]toolset.Tool(nil), t.built.tools...), nil
}

// notReady is the error of a toolset that serves nothing, or nil if it
// has begun to serve since the caller looked.
func (t *Toolset) notReady() error {
	info, err := t.store.Info(t.name)
	if err != nil {
		return fmt.Errorf("toolpkg: toolset %q: %w", t.name, unprefixed{ErrNotFound})
	}
	if info.Serving == 0 || info.Status == StatusRemoved {
		return &NotReadyError{Toolset: t.name, Status: info.Status, Errors: info.Errors}
	}
	return nil
}

// build makes the tools of the serving version, with the store's
// configuration of the toolset under the agent's.
func (t *Toolset) build(ctx context.Context, info Info, stored map[string]any, sealed map[string]bool) ([]toolset.Tool, map[string]string, map[string]ToolPolicy, string, error) {
	cfg, err := resolveConfig(t.name, info.Tools, t.config, stored, sealed)
	if err != nil {
		return nil, nil, nil, "", err
	}
	if info.Tools, err = t.configuredTools(ctx, info, cfg, len(stored) > 0); err != nil {
		return nil, nil, nil, "", err
	}
	for _, tool := range sortedKeys(cfg.unavailable) {
		t.store.log.Warn("toolpkg: tool left out: "+cfg.unavailable[tool], "toolset", t.name, "version", info.Serving)
	}
	exes := map[string]Executable{}
	for _, ex := range info.Executables {
		exes[ex.Key] = ex
	}
	policies := map[string]ToolPolicy{}
	for tool, keys := range cfg.missing {
		policies[tool] = ToolPolicy{Missing: append([]string(nil), keys...)}
	}
	tools := make([]toolset.Tool, 0, len(info.Tools))
	var instr []string
	for _, ti := range info.Tools {
		tc := cfg.tools[ti.Name]
		if tc == nil {
			continue // excluded, or not configured
		}
		params, err := toolset.ParseSchema(ti.Parameters)
		if err != nil {
			return nil, nil, nil, "", fmt.Errorf("toolpkg: toolset %q: tool %q: parameters: %w", t.name, ti.Name, unprefixed{err})
		}
		c := &call{
			store: t.store, toolset: t.name, version: info.Serving, tool: ti,
			exe: exes[ti.Executable], config: tc.values, auth: tc.auth, secrets: cfg.secrets,
		}
		policy := ToolPolicy{Approval: tc.hil, Scopes: append([]string(nil), tc.scopes...)}
		policies[ti.Name] = policy
		opts := []toolset.ToolOption{toolset.WithMetadata(map[string]string{
			"toolpkg.toolset": t.name,
			"toolpkg.tool":    ti.Name,
			"toolpkg.version": strconv.Itoa(info.Serving),
		}), toolset.WithOrigin("toolpkg:" + t.name)} // a new version's tool keeps its budget and rate window
		opts = append(opts, policy.Options()...)
		if ti.Effects != nil {
			opts = append(opts, toolset.WithEffectsFrom(*ti.Effects, fmt.Sprintf("the annotations of package %q, version %d", t.name, info.Serving)))
		}
		tools = append(tools, toolset.NewRawTool(t.name+"__"+ti.Name, ti.Description, params, c.run, opts...))
		if ti.Instructions != "" {
			instr = append(instr, ti.Instructions)
		}
	}
	return tools, cfg.unavailable, policies, strings.Join(instr, "\n\n"), nil
}

// ToolPolicy is what a toolset's configuration makes of one tool beyond
// its tool_config: the reserved keys hil and required_scopes, resolved
// over every layer (they only tighten), and the required keys left
// without a value.
type ToolPolicy struct {
	// Approval is set when calls wait for a human's approval (hil).
	Approval bool
	// Scopes are the scopes a run must carry (the run value [Scopes])
	// for the tool to be listed (required_scopes).
	Scopes []string
	// Missing lists the required configuration keys that have no
	// value: the tool is left out (see [Toolset.Unavailable]).
	Missing []string
}

// Options returns the tool options that apply p, those the tools of a
// [Toolset] carry: [toolset.WithApprovalRequired] when Approval is set,
// [toolset.WithEnabled] hiding the tool from a run without every scope
// of Scopes.
func (p ToolPolicy) Options() []toolset.ToolOption {
	var opts []toolset.ToolOption
	if p.Approval {
		opts = append(opts, toolset.WithApprovalRequired(toolset.Always))
	}
	if scopes := append([]string(nil), p.Scopes...); len(scopes) > 0 {
		opts = append(opts, toolset.WithEnabled(func(ctx context.Context, _ toolset.Tool) (bool, error) {
			return HasScopes(ctx, scopes), nil
		}))
	}
	return opts
}

// Policies returns, by tool name (without the toolset's prefix), the
// policy of each tool of the version last listed: the tools listed and
// those left out for a missing value; excluded tools have none. Nil
// before a listing, or when the last one failed.
func (t *Toolset) Policies() map[string]ToolPolicy {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.built == nil || t.built.err != nil {
		return nil
	}
	out := make(map[string]ToolPolicy, len(t.built.policies))
	for k, p := range t.built.policies {
		p.Scopes = append([]string(nil), p.Scopes...)
		p.Missing = append([]string(nil), p.Missing...)
		out[k] = p
	}
	return out
}

// Instructions implements [toolset.InstructionsProvider]: the
// instructions the tools' schemas give (discovered with the toolset's
// configuration), in tool order, separated by blank lines; "" while the
// toolset is not ready (GetTools says why).
func (t *Toolset) Instructions(ctx context.Context) (string, error) {
	if t == nil {
		return "", errNilToolset
	}
	if _, err := t.GetTools(ctx); err != nil {
		var nr *NotReadyError
		if errors.As(err, &nr) {
			return "", nil
		}
		return "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.built == nil {
		return "", nil
	}
	return t.built.instructions, nil
}

// call runs one tool of one version.
type call struct {
	store   *Store
	toolset string
	version int
	tool    ToolInfo
	exe     Executable
	config  map[string]any
	auth    authConfig
	secrets *secrets
}

// resultDoc is result.json.
type resultDoc struct {
	Result *struct {
		Schema        string          `json:"_schema"`
		SchemaVersion string          `json:"_schema_version"`
		Status        string          `json:"status"`
		Message       string          `json:"message"`
		Data          json.RawMessage `json:"data"`
		DataObjects   json.RawMessage `json:"data_objects"`
		ErrorCode     json.RawMessage `json:"error_code"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// maxResultFile caps the size of result.json.
const maxResultFile = 16 << 20

func (c *call) run(ctx context.Context, args json.RawMessage) (any, error) {
	creds, sec, err := c.auth.credentialsFor(ctx, c.secrets)
	if err != nil {
		return nil, err
	}
	// This call's secrets: the toolset's and the run's credentials.
	cc := *c
	cc.secrets = sec
	return cc.runWith(ctx, args, creds)
}

func (c *call) runWith(ctx context.Context, args json.RawMessage, creds Credentials) (any, error) {
	s := c.store
	pkgDir, ok := s.acquire(c.toolset, c.version)
	if !ok {
		return nil, &StaleToolError{Toolset: c.toolset, Tool: c.tool.Name}
	}
	defer s.release(c.toolset, c.version)

	callDir, work, err := s.newCallDir("call-")
	if err != nil {
		return nil, fmt.Errorf("toolpkg: tool %q: %w", c.tool.Name, unprefixed{err})
	}
	defer removeAll(callDir)
	l, err := s.launchFor(pkgDir, work, c.exe)
	if err != nil {
		return nil, fmt.Errorf("toolpkg: tool %q: %w", c.tool.Name, unprefixed{err})
	}
	l.stderrMargin = int64(12 * c.secrets.maxLen())
	_, workView := s.sb.paths(l)
	pipe := filepath.Join(work, statusPipeName)
	if err := s.makeStatusPipe(pipe); err != nil {
		return nil, fmt.Errorf("toolpkg: tool %q: %w", c.tool.Name, unprefixed{err})
	}
	if s.sb.mode == ModeBwrap {
		l.binds = append(l.binds, bind{host: pipe, inside: bwrapWorkDir + "/" + statusPipeName})
	}
	if s.wantsScratch(c.exe.Profile) {
		dir, err := s.scratch(c.toolset, c.version)
		if errors.Is(err, ErrNotFound) {
			return nil, &StaleToolError{Toolset: c.toolset, Tool: c.tool.Name}
		}
		if err != nil {
			return nil, fmt.Errorf("toolpkg: tool %q: %w", c.tool.Name, unprefixed{err})
		}
		if s.sb.mode == ModeBwrap {
			inside := "/tmp/sam-str/" + c.toolset
			l.binds = append(l.binds, bind{host: dir, inside: inside})
			dir = inside
		}
		l.env = append(l.env, ScratchEnv+"="+dir)
	}
	if parent, state := tracefields.Inject(ctx, s.opts.Trace); parent != "" {
		l.env = append(l.env, TraceparentEnv+"="+parent)
		if state != "" {
			l.env = append(l.env, TracestateEnv+"="+state)
		}
	}
	rc := toolset.FromContext(ctx)
	scope := artifactScope(rc, s.artifacts)
	inPaths, inMeta, err := c.loadInputs(ctx, args, work, workView, scope)
	if err != nil {
		return nil, err
	}
	ra := protocol.Invocation{
		ToolName: c.tool.Name, Args: args, ToolConfig: c.config,
		ResultFile: filepath.Join(workView, "result.json"), OutputDir: filepath.Join(workView, "output"),
		TaskID: rc.ID(), UserID: runString(rc, "user_id"), SessionID: runString(rc, "session_id"), AppName: runString(rc, "app_name"),
		ArtifactPaths: inPaths, ArtifactMetadata: inMeta,
		AuthHeaders: creds.Headers, OAuthToken: creds.OAuthToken, VolumeMounts: protocol.NoVolumeMounts,
		StatusPipe: filepath.Join(workView, statusPipeName),
	}
	if ra.ToolConfig == nil {
		ra.ToolConfig = map[string]any{}
	}
	if s.opts.LLM != nil {
		srv, sock, err := s.listenIPC(ctx, c.toolset, c.tool.Name, c.secrets)
		if err != nil {
			return nil, fmt.Errorf("toolpkg: tool %q: IPC socket: %w", c.tool.Name, unprefixed{err})
		}
		defer srv.close()
		ra.IPCSocket = sock
		if s.sb.mode == ModeBwrap {
			ra.IPCSocket = bwrapWorkDir + "/ipc.sock"
			l.binds = append(l.binds, bind{host: sock, inside: ra.IPCSocket})
		}
	}
	data, err := json.Marshal(ra)
	if err != nil {
		return nil, fmt.Errorf("toolpkg: tool %q: encoding runner_args.json: %w", c.tool.Name, unprefixed{err})
	}
	// It holds the tool's configuration, secrets included: readable by
	// the tool's user alone (its path is on the command line, which every
	// user of the host can read).
	if err := s.writeToolFile(filepath.Join(work, protocol.InvocationFile), data); err != nil {
		return nil, fmt.Errorf("toolpkg: tool %q: %w", c.tool.Name, unprefixed{err})
	}
	l.args = []string{filepath.Join(workView, protocol.InvocationFile)}
	l.collectOutput = true

	status, err := readStatus(ctx, pipe, c.secrets)
	if err != nil {
		return nil, fmt.Errorf("toolpkg: tool %q: status pipe: %w", c.tool.Name, unprefixed{err})
	}
	res, err := s.sb.runProcess(ctx, l, c.tool.Timeout(), callDir, 0)
	if reports, skipped, dropped := status.stop(); skipped+dropped > 0 {
		s.log.Debug("toolpkg: status pipe lines not reported", "toolset", c.toolset, "tool", c.tool.Name,
			"reported", reports, "not a status or too long", skipped, "beyond the cap", dropped)
	}
	s.log.Debug("toolpkg: call finished", "toolset", c.toolset, "tool", c.tool.Name, "version", c.version,
		"exit", res.describeExit(l.limits), "wall", res.wall.Round(time.Millisecond), "cpu", res.cpu.Round(time.Millisecond))
	stderr := res.stderrText(c.secrets)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("toolpkg: tool %q: call canceled, process killed: %w", c.tool.Name, unprefixed{err})
	case err != nil:
		return nil, fmt.Errorf("toolpkg: tool %q: %w", c.tool.Name, unprefixed{err})
	case res.timedOut:
		// A result written in the grace between SIGTERM and SIGKILL is
		// the tool's answer.
		if out, err := c.readResult(work, stderr); err == nil {
			return out, nil
		} else if _, ok := err.(*ExecError); !ok {
			return out, err
		}
		// Killed with its children: the model sees the core's timeout,
		// under the name it called.
		return nil, &toolset.TimeoutError{Tool: c.toolset + "__" + c.tool.Name, After: c.tool.Timeout()}
	case res.signal != 0 || res.exitCode != 0:
		return nil, &ExecError{Toolset: c.toolset, Tool: c.tool.Name, Reason: res.describeExit(l.limits), Stderr: stderr}
	}
	out, err := c.readResult(work, stderr)
	r, ok := out.(*Result)
	if !ok || err != nil {
		return out, err
	}
	var files []outputFile
	var notes []string
	if s.sb.mode == ModeBwrap {
		files, notes = readOutputTar(filepath.Join(callDir, "stdout"), s.artifacts)
	} else {
		files, notes = readOutputFiles(filepath.Join(work, "output"), s.artifacts)
	}
	return c.collect(ctx, r, files, notes, scope)
}

// readResult reads and decodes the result.json the tool left in dir.
func (c *call) readResult(dir, stderr string) (any, error) {
	fail := func(format string, args ...any) error {
		return &ExecError{Toolset: c.toolset, Tool: c.tool.Name, Reason: fmt.Sprintf(format, args...), Stderr: stderr}
	}
	data, err := readWorkFile(dir, "result.json", maxResultFile)
	var fe *FileError
	switch {
	case errors.Is(err, errNoFile):
		return nil, fail("exited 0 without writing result.json")
	case errors.As(err, &fe):
		return nil, fail("%s", fe.Error())
	case err != nil:
		return nil, fail("cannot read result.json: %v", err)
	}
	return c.decodeResult(data, stderr)
}

// decodeResult decodes the bytes of result.json into a *Result, a
// *ToolFailure or an *ExecError, secrets hidden and text capped.
func (c *call) decodeResult(data []byte, stderr string) (any, error) {
	fail := func(format string, args ...any) error {
		return &ExecError{Toolset: c.toolset, Tool: c.tool.Name, Reason: fmt.Sprintf(format, args...), Stderr: stderr}
	}
	if len(data) == 0 {
		return nil, fail("exited 0 without writing result.json")
	}
	var doc resultDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fail("result.json is not valid JSON (%v); it starts %s", err, c.preview(data, 80))
	}
	limit := c.store.opts.MaxOutputBytes
	var code string
	if doc.Result != nil {
		code = c.errorCode(doc.Result.ErrorCode)
	}
	if msg := errorText(c.secrets.json(doc.Error)); msg != "" {
		text, _ := capText(c.secrets.text(msg), limit)
		return nil, c.failure(text, code)
	}
	if doc.Result == nil {
		return nil, fail(`result.json has neither "result" nor "error"`)
	}
	r := doc.Result
	if r.Status == "error" || code == ErrorCodeAuthRequired {
		msg := r.Message
		if msg == "" {
			msg = "the tool reported status " + quoteShort(r.Status) + " without a message"
		}
		text, _ := capText(c.secrets.text(msg), limit)
		return nil, c.failure(text, code)
	}
	out := &Result{
		Status: c.secrets.text(r.Status), Message: c.secrets.text(r.Message),
		Data: c.secrets.json(r.Data), DataObjects: c.secrets.json(r.DataObjects),
		ErrorCode: code,
	}
	out.text, out.truncated = capText(c.secrets.text(out.render()), limit)
	return out, nil
}

// preview quotes the start of a file the tool wrote, secrets hidden, for
// an error: at most n bytes, as a Go string literal (printable).
func (c *call) preview(data []byte, n int) string {
	// Hide secrets before cutting, so that one across the cut is found.
	margin := 12 * c.secrets.maxLen()
	head := data[:min(len(data), n+margin)]
	// And after quoting: the escapes of a literal can spell a secret
	// that the bytes did not hold ("\x17" then "3912846" reads as one
	// holding "73912846").
	return c.secrets.text(quoteStart([]byte(c.secrets.text(string(head))), n))
}

// errorText returns result.json's error as text: a string as itself,
// anything else but null as JSON.
func errorText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	return string(raw)
}

// Result is what a packaged tool returned. The model is sent
// [Result.ModelText]; programs can read the fields.
//
// A pending result (Status "pending", see [Result.Pending]) is the
// format's way for a tool to ask a human: it did not finish, and its Data
// holds what to ask (approval data). It is returned as a result, not an
// error: the model reads "status: pending" and the message, and the
// application, which alone can reach a human, decides what follows (this
// runtime neither waits nor calls the tool again).
type Result struct {
	// Status is success, partial or pending.
	Status string
	// Message is the tool's message for the model.
	Message string
	// Data is the tool's structured result, as JSON; nil when it gave none.
	Data json.RawMessage
	// DataObjects is result.json's data_objects, as JSON.
	DataObjects json.RawMessage
	// Artifacts are the artifacts the call saved: its output files, its
	// data objects stored as artifacts, and its whole output when it was
	// too long for the model.
	Artifacts []ArtifactRef
	// ErrorCode is result.json's error_code, or "" when it had none.
	ErrorCode string
	// Omitted says what was left out of this result, and where it is,
	// when it is the Structured value of a [*toolset.Content] that would
	// be larger than the store's MaxOutputBytes as JSON: the data, the
	// data objects, the message (nil or "" then). It is empty otherwise,
	// and left out of the JSON.
	Omitted []string `json:",omitempty"`

	text      string
	truncated bool
}

// ModelText returns the text the model is sent: the message, then the
// data as JSON, with the status first when it is not success; capped at
// the store's MaxOutputBytes with a note saying so.
func (r *Result) ModelText() string {
	if r.text == "" {
		return r.render()
	}
	return r.text
}

// Truncated reports whether ModelText was cut to the output cap.
func (r *Result) Truncated() bool { return r.truncated }

// Pending reports whether the tool asked for a human before it goes on
// (status pending).
func (r *Result) Pending() bool { return r.Status == "pending" }

func (r *Result) render() string {
	var parts []string
	if r.Status != "" && r.Status != "success" {
		parts = append(parts, "status: "+r.Status)
	}
	if r.Message != "" {
		parts = append(parts, r.Message)
	}
	if d := strings.TrimSpace(string(r.Data)); d != "" && d != "null" {
		parts = append(parts, d)
	}
	if len(parts) == 0 {
		return "(the tool returned no output)"
	}
	return strings.Join(parts, "\n")
}

// capText cuts s to at most limit bytes (at a UTF-8 boundary), followed by
// a note saying so, and reports whether it cut.
func capText(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	return textcut.HeadTail(s, limit, limit, 0, func(kept, _ int) string {
		return fmt.Sprintf("\n[output cut: %d of %d bytes shown]", kept, len(s))
	})
}

// ToolFailure is a packaged tool's own error (result.json's "error", or
// status "error"). The model sees it.
type ToolFailure struct {
	Toolset, Tool string
	Message       string
	// Code is result.json's error_code, or "".
	Code string
}

// Error implements error.
func (e *ToolFailure) Error() string {
	return fmt.Sprintf("toolpkg: toolset %q: tool %q failed: %s", e.Toolset, e.Tool, e.Message)
}

// ModelText implements [toolset.ModelError].
func (e *ToolFailure) ModelText() string { return e.Message }

// ErrorCodeAuthRequired is the error_code of a tool that needs the
// caller's credentials (an OAuth sign-in) before it can run.
const ErrorCodeAuthRequired = "AUTH_REQUIRED"

// AuthRequiredError reports a tool that answered error_code
// AUTH_REQUIRED: it needs credentials the call did not carry (on the
// platform, this starts an OAuth flow). An application that can get them
// branches on it with errors.As; otherwise the model sees the tool's
// message.
type AuthRequiredError struct {
	Toolset, Tool string
	Message       string
}

// Error implements error.
func (e *AuthRequiredError) Error() string {
	return fmt.Sprintf("toolpkg: toolset %q: tool %q needs authorization: %s", e.Toolset, e.Tool, e.Message)
}

// ModelText implements [toolset.ModelError].
func (e *AuthRequiredError) ModelText() string {
	return "authorization required: " + e.Message
}

// failure is the error of a tool that failed with message text and
// error_code code.
func (c *call) failure(text, code string) error {
	if code == ErrorCodeAuthRequired {
		return &AuthRequiredError{Toolset: c.toolset, Tool: c.tool.Name, Message: text}
	}
	return &ToolFailure{Toolset: c.toolset, Tool: c.tool.Name, Message: text, Code: code}
}

// maxErrorCode bounds an error_code.
const maxErrorCode = 64

// errorCode returns result.json's error_code: a string, secrets hidden,
// cut to maxErrorCode bytes; "" for null or anything else.
func (c *call) errorCode(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	s = strings.TrimSpace(c.secrets.text(s))
	if len(s) > maxErrorCode {
		s = strings.ToValidUTF8(s[:maxErrorCode], "")
	}
	return s
}

// StaleToolError reports a call of a tool from a version of the toolset
// that was replaced and deleted since the turn's tools were listed. The
// model sees it; the next turn lists the new version's tools.
type StaleToolError struct {
	Toolset, Tool string
}

// Error implements error.
func (e *StaleToolError) Error() string { return "toolpkg: " + e.ModelText() }

// ModelText implements [toolset.ModelError].
func (e *StaleToolError) ModelText() string {
	return fmt.Sprintf("the toolset %s was updated or removed after the tool list was made; tool %s of the old version can no longer run", e.Toolset, e.Tool)
}

// ExecError reports a tool process that did not follow the protocol: it
// exited non-zero or was killed (a resource limit), or wrote no or a
// malformed result.json. It should stop the run: it is a bug or a broken
// package, not something the model can fix.
type ExecError struct {
	Toolset, Tool string
	// Reason says what happened.
	Reason string
	// Stderr is the end of the tool's standard error, secrets hidden.
	Stderr string
}

// Error implements error.
func (e *ExecError) Error() string {
	return fmt.Sprintf("toolpkg: toolset %q: tool %q: %s%s", e.Toolset, e.Tool, e.Reason, stderrSuffix(e.Stderr))
}

// runString returns the run's value named name if it is a string, or "".
func runString(rc *toolset.RunContext, name string) string {
	s, _ := rc.Value(name).(string)
	return s
}
