package mesh

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// remoteTool is one tool of one version, for one configuration: what its
// calls need, computed once when the tools are listed.
type remoteTool struct {
	client   *Client
	toolset  string
	tool     string // the name in the package
	wireName string // <toolset>__<tool>
	version  int
	subject  string // the version-pinned invoke subject
	timeout  time.Duration
	artifact map[string]toolpkg.ArtifactParam
	config   json.RawMessage // toolset_config
	toolCfg  json.RawMessage // tool_config
	approval bool            // calls wait for a human's approval
	scopes   []string        // required_scopes
}

func (t *Toolset) makeTool(ip InitParams, version int) (toolset.Tool, error) {
	params, err := toolset.ParseSchema(ip.Parameters)
	if len(ip.Parameters) == 0 {
		params, err = nil, nil
	}
	if err != nil {
		return toolset.Tool{}, fmt.Errorf("mesh: toolset %q: tool %q: parameters: %w", t.name, ip.Tool, err)
	}
	rt, err := t.remoteTool(ip, version)
	if err != nil {
		return toolset.Tool{}, err
	}
	opts := []toolset.ToolOption{toolset.WithMetadata(map[string]string{
		"toolpkg.toolset": t.name,
		"toolpkg.tool":    ip.Tool,
		"toolpkg.version": strconv.Itoa(version),
	})}
	// The runtime's answer says what hil and required_scopes make of the
	// tool: the same options as an in-process tool's.
	opts = append(opts, ip.policy().Options()...)
	return toolset.NewRawTool(ip.ToolName, ip.Description, params, rt.run, opts...), nil
}

// remoteTool returns what the calls of tool ip of version need.
func (t *Toolset) remoteTool(ip InitParams, version int) (*remoteTool, error) {
	c := t.client
	subject, err := c.subj.InvokeVersion(ip.ToolName, version)
	if err != nil {
		return nil, err
	}
	rt := &remoteTool{
		client: c, toolset: t.name, tool: ip.Tool, wireName: ip.ToolName, version: version,
		subject: subject, artifact: ip.ArtifactParams, config: t.configJSON,
		approval: ip.RequiresApproval, scopes: append([]string(nil), ip.RequiredScopes...),
	}
	if ip.TimeoutSeconds > 0 {
		rt.timeout = time.Duration(min(ip.TimeoutSeconds, MaxTimeoutSeconds)) * time.Second
	} else {
		rt.timeout = time.Duration(toolpkg.DefaultTimeoutSeconds) * time.Second
	}
	if tc := toolConfig(t.config, ip.Tool); tc != nil {
		rt.toolCfg, _ = json.Marshal(tc)
	}
	return rt, nil
}

// invokeWire is an invoke request as this client sends it: InvokeParams'
// fields, with the configuration encoded once per tool.
type invokeWire struct {
	JSONRPC string       `json:"jsonrpc"`
	ID      string       `json:"id"`
	Method  string       `json:"method"`
	Params  invokeParams `json:"params"`
}

type invokeParams struct {
	TaskID             string                       `json:"task_id"`
	ToolName           string                       `json:"tool_name"`
	Args               json.RawMessage              `json:"args"`
	ToolConfig         json.RawMessage              `json:"tool_config,omitempty"`
	AppName            string                       `json:"app_name,omitempty"`
	UserID             string                       `json:"user_id,omitempty"`
	SessionID          string                       `json:"session_id,omitempty"`
	PreloadedArtifacts map[string]PreloadedArtifact `json:"preloaded_artifacts,omitempty"`
	ArtifactReferences map[string]ArtifactReference `json:"artifact_references,omitempty"`
	TimeoutSeconds     float64                      `json:"timeout_seconds,omitempty"`
	Version            int                          `json:"version,omitempty"`
	ToolsetConfig      json.RawMessage              `json:"toolset_config,omitempty"`
	Scopes             []string                     `json:"scopes,omitempty"`
	Approved           bool                         `json:"approved,omitempty"`
	ArtifactsResolved  bool                         `json:"artifacts_resolved,omitempty"`
}

// invokeResponse is a response to an invoke, decoded in one pass.
type invokeResponse struct {
	JSONRPC rawToken      `json:"jsonrpc"`
	ID      rawToken      `json:"id"`
	Result  *InvokeResult `json:"result"`
	Error   *RPCError     `json:"error"`
}

// run is the tool's handler: one call on the runtimes.
func (rt *remoteTool) run(ctx context.Context, args json.RawMessage) (any, error) {
	rc := toolset.FromContext(ctx)
	w := invokeWire{JSONRPC: JSONRPCVersion, Method: MethodInvoke, Params: invokeParams{
		TaskID: rc.ID(), ToolName: rt.wireName, Args: args, ToolConfig: rt.toolCfg,
		Version: rt.version, ToolsetConfig: rt.config,
	}}
	if len(w.Params.Args) == 0 {
		w.Params.Args = json.RawMessage("{}")
	}
	p := &w.Params
	p.AppName, _ = rc.Value("app_name").(string)
	p.UserID, _ = rc.Value("user_id").(string)
	p.SessionID, _ = rc.Value("session_id").(string)
	// The handler runs once the run's approval was given, if the tool
	// requires one; the runtime checks that the call says so, and that
	// the run's scopes cover the tool's (it is told only those).
	p.Approved = rt.approval
	if len(rt.scopes) > 0 {
		have := toolpkg.RunScopes(ctx)
		for _, sc := range rt.scopes {
			if slices.Contains(have, sc) {
				p.Scopes = append(p.Scopes, sc)
			}
		}
	}
	if len(rt.artifact) > 0 {
		if err := rt.artifacts(ctx, args, p); err != nil {
			return nil, err
		}
	}
	// The call's deadline: the caller's, or the tool's timeout and a
	// grace for the runtime to say so.
	deadline := time.Now().Add(rt.timeout + callDeadlineGrace)
	own := true
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, own = d, false
	}
	busyUntil := time.Now().Add(rt.client.opts.BusyWait)
	for try := 1; ; try++ {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("mesh: tool %q: %w", rt.wireName, context.DeadlineExceeded)
		}
		if !own {
			p.TimeoutSeconds = left.Seconds()
		}
		out, retry, err := rt.once(ctx, &w, deadline, own)
		if !retry {
			return out, err
		}
		// No runtime received the call: it may be sent again, while a
		// runtime still announces the version and within BusyWait.
		wait := min(time.Duration(try)*25*time.Millisecond, maxBusyBackoff)
		if !rt.client.serves(rt.toolset, rt.version) || time.Now().Add(wait).After(busyUntil) || !sleepCtx(ctx, wait) {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("mesh: tool %q: %w", rt.wireName, ctx.Err())
			}
			return nil, &UnavailableError{Toolset: rt.toolset, Tool: rt.tool, Version: rt.version,
				Reason: fmt.Sprintf("no runtime serves version %d of toolset %s", rt.version, rt.toolset)}
		}
	}
}

// once sends the invoke and waits for its answer. retry is set when no
// runtime received it (no responders): only then may it be sent again.
func (rt *remoteTool) once(ctx context.Context, w *invokeWire, deadline time.Time, own bool) (out any, retry bool, err error) {
	c := rt.client
	// The correlation ID and the call's response subject, in one string.
	id := randomID()
	resp := c.respPrefix + id
	corr := resp[len(c.respPrefix):]
	w.ID = corr
	if w.Params.TaskID == "" || len(w.Params.TaskID) > MaxIDBytes {
		w.Params.TaskID = corr
	}
	data, err := json.Marshal(w)
	if err != nil {
		return nil, false, fmt.Errorf("mesh: tool %q: encode invoke: %w", rt.wireName, err)
	}
	if len(data) > MaxMessageBytes {
		return nil, false, fmt.Errorf("mesh: tool %q: the call is %d bytes, more than %d: %w", rt.wireName, len(data), MaxMessageBytes, ErrTooLarge)
	}
	pd := &pending{replies: make(chan reply, 1), isCall: true}
	if toolset.HasProgress(ctx) {
		pd.progress = make(chan toolset.Progress, 16)
	}
	if err := c.register(corr, pd); err != nil {
		return nil, false, err
	}
	defer c.unregister(corr)
	// SAM's replyTo is the NATS reply subject, and its statusTo follows
	// from it ("status" for "response"): no headers to write or parse.
	m := &nats.Msg{Subject: rt.subject, Reply: resp, Data: data}
	if err := c.nc.PublishMsg(m); err != nil {
		return nil, false, fmt.Errorf("mesh: tool %q: publish invoke: %w", rt.wireName, err)
	}
	sent := time.Now()
	// One timer watches the runtime: until it takes the call (its first
	// status, within AcceptTimeout), then its heartbeats.
	timer := getTimer(min(c.opts.HeartbeatTimeout, time.Until(deadline)))
	defer putTimer(timer)
	for {
		select {
		case r := <-pd.replies:
			if r.noResponders {
				return nil, true, nil
			}
			out, err := rt.decode(r.call)
			return out, false, err
		case pr := <-pd.progress:
			toolset.ReportProgress(ctx, pr)
		case <-timer.C:
			now := time.Now()
			if !now.Before(deadline) {
				rt.cancel(corr)
				if own {
					return nil, false, &toolset.TimeoutError{Tool: rt.wireName, After: rt.timeout}
				}
				return nil, false, fmt.Errorf("mesh: tool %q: %w", rt.wireName, context.DeadlineExceeded)
			}
			last := pd.lastSeen.Load()
			if last == 0 && now.Sub(sent) < c.opts.AcceptTimeout {
				timer.Reset(min(c.opts.HeartbeatTimeout, c.opts.AcceptTimeout-now.Sub(sent), time.Until(deadline)))
				continue
			}
			if last == 0 {
				rt.cancel(corr)
				return nil, false, &UnavailableError{Toolset: rt.toolset, Tool: rt.tool, Version: rt.version, MayHaveRun: true,
					Reason: fmt.Sprintf("no runtime took the call within %s; it was not sent again", now.Sub(sent).Round(time.Millisecond))}
			}
			quiet := now.Sub(time.Unix(0, last))
			if quiet >= c.opts.HeartbeatTimeout {
				rt.cancel(corr)
				who := "the runtime"
				if r := pd.runtime.Load(); r != nil {
					who = "runtime " + *r
				}
				return nil, false, &UnavailableError{Toolset: rt.toolset, Tool: rt.tool, Version: rt.version, MayHaveRun: true,
					Reason: fmt.Sprintf("%s running the call went silent for %s (no heartbeat); the call may have run and was not sent again", who, quiet.Round(time.Millisecond))}
			}
			timer.Reset(min(c.opts.HeartbeatTimeout-quiet, time.Until(deadline)))
		case <-ctx.Done():
			rt.cancel(corr)
			return nil, false, fmt.Errorf("mesh: tool %q: call canceled: %w", rt.wireName, ctx.Err())
		case <-c.done:
			rt.cancel(corr)
			return nil, false, ErrClosed
		}
	}
}

var timers sync.Pool

// getTimer returns a stopped-and-drained timer of the pool, set to d.
func getTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// putTimer stops t and puts it back in the pool. Since Go 1.23 a stopped
// timer's channel holds no stale value.
func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// serves reports whether a runtime still announces version of toolset.
func (c *Client) serves(toolset string, version int) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.catalog[toolset]
	return e != nil && e.versions[version] != nil
}

// cancel tells the runtimes the caller gave up the call.
func (rt *remoteTool) cancel(corr string) {
	c := rt.client
	data, err := encodeRequest("", MethodCancel, CancelParams{TaskID: corr})
	if err != nil {
		return
	}
	if err := c.nc.Publish(c.cancelPrefix+corr, data); err != nil {
		c.log.Debug("mesh: cancel not sent", "tool", rt.wireName, "error", err)
	}
}

// decode turns a runtime's answer into what an in-process call returns.
func (rt *remoteTool) decode(resp *invokeResponse) (any, error) {
	if resp.Error != nil {
		return nil, rt.mapError(resp.Error)
	}
	res := resp.Result
	if res == nil || res.ToolResult == nil {
		return nil, &RemoteError{Toolset: rt.toolset, Tool: rt.tool, Code: CodeInternalError, Message: "a result without tool_result"}
	}
	tr := res.ToolResult
	if res.TimedOut {
		return nil, &toolset.TimeoutError{Tool: rt.wireName, After: rt.timeout}
	}
	var refs []toolpkg.ArtifactRef
	for i, a := range res.CreatedArtifacts {
		if i == maxCreatedArtifacts || toolpkg.CheckArtifactName(a.Filename) != nil || a.Version <= 0 {
			continue
		}
		refs = append(refs, toolpkg.ArtifactRef{Name: a.Filename, Version: a.Version, Size: a.SizeBytes,
			MIMEType: cut(a.MIMEType, maxArtifactMIMEType), Description: cut(a.Description, 256)})
	}
	switch tr.Kind {
	case ResultKindResult, ResultKindContent:
		r := &toolpkg.Result{Status: tr.Status, Message: tr.Message, Data: tr.Data, DataObjects: tr.DataObjects,
			ErrorCode: tr.ErrorCode, Omitted: tr.Omitted, Artifacts: refs}
		if tr.Kind == ResultKindResult && !tr.Truncated && r.ModelText() == tr.Text {
			return r, nil
		}
		var structured any = r
		if tr.Kind == ResultKindContent && len(tr.Structured) > 0 {
			var sr toolpkg.Result
			if json.Unmarshal(tr.Structured, &sr) == nil {
				if len(sr.Artifacts) == 0 {
					sr.Artifacts = refs
				}
				structured = &sr
			} else {
				structured = tr.Structured
			}
		}
		return &toolset.Content{Parts: []toolset.Part{{Text: tr.Text}}, Structured: structured}, nil
	default:
		return tr.Text, nil
	}
}

// maxCreatedArtifacts bounds the created artifacts a result lists.
const maxCreatedArtifacts = toolpkg.DefaultMaxArtifacts

// mapError maps a runtime's error to the error an in-process call gives.
func (rt *remoteTool) mapError(e *RPCError) error {
	var d ErrorData
	if len(e.Data) > 0 {
		_ = Decode(e.Data, MaxMessageBytes, &d)
	}
	msg := cut(e.Message, MaxErrorMessageBytes)
	text := msg
	if d.ModelText != "" {
		text = cut(d.ModelText, MaxErrorMessageBytes)
	}
	switch e.Code {
	case CodeToolError, CodeExecutionError:
		return &toolpkg.ToolFailure{Toolset: rt.toolset, Tool: rt.tool, Message: text, Code: cut(d.ToolErrorCode, 64)}
	case CodeAuthenticationFailed:
		return &toolpkg.AuthRequiredError{Toolset: rt.toolset, Tool: rt.tool, Message: msg}
	case CodeToolNotFound, CodeToolNotAvailable, CodeResourceExhausted:
		return &UnavailableError{Toolset: rt.toolset, Tool: rt.tool, Version: rt.version, Code: e.Code, Reason: msg}
	case CodeInitError:
		if d.Unavailable {
			// The runtime's configuration left the tool out since it
			// was listed: the next turn does not offer it.
			return &UnavailableError{Toolset: rt.toolset, Tool: rt.tool, Version: rt.version, Code: e.Code,
				Reason: msg, MissingKeys: boundStrings(d.MissingKeys)}
		}
	case CodeSandboxTimeout:
		timeout := rt.timeout
		if d.TimeoutSeconds > 0 && d.TimeoutSeconds <= MaxTimeoutSeconds {
			timeout = time.Duration(d.TimeoutSeconds * float64(time.Second))
		}
		return &toolset.TimeoutError{Tool: rt.wireName, After: timeout}
	case CodeArtifactError:
		if d.ArtifactParam != "" && len(d.Problems) == 1 {
			return &toolpkg.ArtifactError{Toolset: rt.toolset, Tool: rt.tool, Param: cut(d.ArtifactParam, 256), Reason: cut(d.Problems[0], MaxErrorMessageBytes)}
		}
		return &toolpkg.ArtifactError{Toolset: rt.toolset, Tool: rt.tool, Reason: text}
	}
	rid := ""
	if CheckID("runtime", d.Runtime) == nil {
		rid = d.Runtime
	}
	return &RemoteError{Toolset: rt.toolset, Tool: rt.tool, Code: cut(e.Code, 64), Message: msg, Runtime: rid}
}

// artifactStores returns the store of the agent's artifacts and the
// shared one.
func (c *Client) artifactStores(ctx context.Context) (toolpkg.ArtifactStore, *ArtifactStore, error) {
	c.sharedOnce.Do(func() {
		c.shared, c.sharedErr = NewArtifactStore(ctx, c.nc, &ArtifactStoreOptions{Namespace: c.subj.Namespace()})
	})
	if c.sharedErr != nil {
		return nil, nil, fmt.Errorf("mesh: shared artifact store: %w", c.sharedErr)
	}
	if c.opts.Artifacts != nil {
		return c.opts.Artifacts, c.shared, nil
	}
	return c.shared, c.shared, nil
}

// artifacts fills the call's input artifacts: those the arguments name
// for the tool's artifact parameters, inline when small, else by
// reference to the shared store (copied there from the agent's store when
// it is another, with the version the arguments name as source_version).
// One that is missing is left out, and artifacts_resolved tells the
// runtime not to look for it elsewhere: the tool says so if it requires
// it, as in process.
func (rt *remoteTool) artifacts(ctx context.Context, args json.RawMessage, p *invokeParams) error {
	var argv map[string]json.RawMessage
	if json.Unmarshal(args, &argv) != nil {
		return nil
	}
	names := map[string]string{}
	for param := range rt.artifact {
		raw, ok := argv[param]
		if !ok {
			continue
		}
		var one string
		var list []string
		if json.Unmarshal(raw, &one) == nil {
			names[param] = one
		} else if json.Unmarshal(raw, &list) == nil {
			for i, n := range list {
				if i == maxCreatedArtifacts {
					break
				}
				names[param+"["+strconv.Itoa(i)+"]"] = n
			}
		}
	}
	p.ArtifactsResolved = true
	if len(names) == 0 {
		return nil
	}
	store, shared, err := rt.client.artifactStores(ctx)
	if err != nil {
		return err
	}
	rc := toolset.FromContext(ctx)
	var scope toolpkg.ArtifactScope
	scope.AppName, _ = rc.Value("app_name").(string)
	scope.UserID, _ = rc.Value("user_id").(string)
	scope.SessionID, _ = rc.Value("session_id").(string)
	budget := MaxMessageBytes / 2
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		name, version := splitArtifactName(names[key])
		if toolpkg.CheckArtifactName(name) != nil {
			continue // the runtime reports a bad name
		}
		ref, r, err := store.Load(ctx, scope, name, version)
		if errors.Is(err, toolpkg.ErrArtifactNotFound) {
			continue
		}
		if err != nil {
			return &toolpkg.ArtifactError{Toolset: rt.toolset, Tool: rt.tool, Param: key, Reason: cut(err.Error(), 512)}
		}
		inline := ref.Size <= int64(rt.client.opts.MaxInlineArtifactBytes) && ref.Size*4/3+64 <= int64(budget)
		if inline {
			data, err := io.ReadAll(io.LimitReader(r, ref.Size+1))
			r.Close()
			if err != nil || int64(len(data)) != ref.Size {
				return &toolpkg.ArtifactError{Toolset: rt.toolset, Tool: rt.tool, Param: key, Reason: "the artifact could not be read whole"}
			}
			if p.PreloadedArtifacts == nil {
				p.PreloadedArtifacts = map[string]PreloadedArtifact{}
			}
			enc := base64.StdEncoding.EncodeToString(data)
			budget -= len(enc)
			p.PreloadedArtifacts[key] = PreloadedArtifact{Filename: ref.Name, Content: enc, MIMEType: ref.MIMEType, Version: ref.Version}
			continue
		}
		aref := ArtifactReference{Filename: ref.Name, Version: ref.Version}
		if store != toolpkg.ArtifactStore(shared) {
			// The copy gets the shared store's next version; the tool
			// is told the agent's, the one the arguments name.
			var copied toolpkg.ArtifactRef
			copied, err = shared.Save(ctx, scope, ref, r)
			aref = ArtifactReference{Filename: ref.Name, Version: copied.Version, SourceVersion: ref.Version}
		}
		r.Close()
		if err != nil {
			return &toolpkg.ArtifactError{Toolset: rt.toolset, Tool: rt.tool, Param: key, Reason: cut(err.Error(), 512)}
		}
		if p.ArtifactReferences == nil {
			p.ArtifactReferences = map[string]ArtifactReference{}
		}
		p.ArtifactReferences[key] = aref
	}
	return nil
}

// splitArtifactName splits "name:3" into the name and version 3; a name
// without a version is the latest (0).
func splitArtifactName(s string) (string, int) {
	if i := strings.LastIndexByte(s, ':'); i > 0 {
		if v, err := strconv.Atoi(s[i+1:]); err == nil && v > 0 {
			return s[:i], v
		}
	}
	return s, 0
}
