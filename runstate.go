package toolset

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gotoolset/toolset/internal/canonjson"
)

// The saved state of a run is JSON of this form (version 1):
//
//	{
//	  "version": 1,
//	  "id": "req-42",
//	  "step": 3,
//	  "holder": {"token": "9f0c...", "until": "2026-01-02T15:04:05Z"},
//	  "approvals": [{"call_id": "c1", "tool": "transfer", "args": {"id":500},
//	                 "schema": "sha256:...", "decision": "approved",
//	                 "edited_args": {"id":50}}],
//	  "pending": [{"call_id": "c2", "tool": "transfer", "args": {"id":900},
//	               "schema": "sha256:...", "asked_at": "2026-01-02T15:00:00Z"}],
//	  "reveals": [{"tool": "get_weather", "schema": "sha256:..."}],
//	  "failures": [{"tool": "lookup", "schema": "sha256:...", "steps": 2, "last_step": 3}],
//	  "caches": [{"tool": "get_weather", "schema": "sha256:...",
//	              "entries": [{"key": "{\"city\":\"Oslo\"}", "value": {"temp":7},
//	                           "expires": "2026-01-02T16:00:00Z"}]}],
//	  "marks": ["skill:pdf"]
//	}
//
// A tool is named by the name it was offered under when the entry was
// made and the hash of its parameter schema as offered (see schemaHash).
// Lists are sorted, so that a state saves to the same bytes.

// runStateVersion is the version of the saved state's format.
const runStateVersion = 1

// maxRunStateBytes bounds the saved state a run loads.
const maxRunStateBytes = 16 << 20

// defaultRunLease is how long a process holds a resumed run without
// saving it; see WithRunLease.
const defaultRunLease = 5 * time.Minute

type savedState struct {
	Version   int             `json:"version"`
	ID        string          `json:"id"`
	Step      int             `json:"step"`
	Holder    *savedHolder    `json:"holder,omitempty"`
	Approvals []savedDecision `json:"approvals,omitempty"`
	Pending   []savedPending  `json:"pending,omitempty"`
	Reveals   []savedTool     `json:"reveals,omitempty"`
	Failures  []savedFailure  `json:"failures,omitempty"`
	Caches    []savedCache    `json:"caches,omitempty"`
	Marks     []string        `json:"marks,omitempty"`
}

type savedHolder struct {
	Token string    `json:"token"`
	Until time.Time `json:"until"`
}

type savedTool struct {
	Tool   string `json:"tool"`
	Schema string `json:"schema"`
}

type savedDecision struct {
	CallID     string          `json:"call_id"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Schema     string          `json:"schema,omitempty"`
	Decision   string          `json:"decision"`
	Reason     string          `json:"reason,omitempty"`
	EditedArgs json.RawMessage `json:"edited_args,omitempty"`
}

type savedPending struct {
	CallID  string          `json:"call_id"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Schema  string          `json:"schema"`
	AskedAt time.Time       `json:"asked_at"`
}

type savedFailure struct {
	Tool     string `json:"tool"`
	Schema   string `json:"schema"`
	Steps    int    `json:"steps"`
	LastStep int    `json:"last_step"`
}

type savedCache struct {
	Tool    string       `json:"tool"`
	Schema  string       `json:"schema"`
	Entries []savedEntry `json:"entries"`
}

type savedEntry struct {
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	Expires *time.Time      `json:"expires,omitempty"`
}

const (
	decisionApproved = "approved"
	decisionDenied   = "denied"
)

// toolID names a tool in saved state: the name it was offered under and
// the hash of its parameter schema.
type toolID struct{ name, schema string }

// schemaHash returns the hash that names t's parameter schema in saved
// state and in approvals: "sha256:" and the hex SHA-256 of the schema's
// canonical JSON.
func schemaHash(t Tool) (string, error) {
	js, err := t.ParametersJSON()
	if err != nil {
		return "", err
	}
	canon, err := canonjson.Append(nil, js)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// durability is what a run resumed from a store keeps to save itself.
type durability struct {
	store      RunStore
	ttl, lease time.Duration

	saveMu  sync.Mutex // one save at a time; guards version and token
	version int64
	token   string

	dirty atomic.Bool // the bookkeeping changed since the last save
	lost  atomic.Pointer[RunStateConflictError]

	// Guarded by runState.mu:
	ids      map[*toolCore]toolID // the name of each tool with entries
	restored restoredEntries      // loaded entries not yet bound to a tool
}

// restoredEntries are the loaded entries of tools this process has not
// offered yet. BuildTools binds them to the tools it offers under the
// same name with the same schema hash.
type restoredEntries struct {
	names    map[string]struct{}
	reveals  map[toolID]struct{}
	failures map[toolID]failureCount
	caches   map[toolID][]savedEntry
}

func (r *restoredEntries) empty() bool {
	return len(r.reveals) == 0 && len(r.failures) == 0 && len(r.caches) == 0
}

// WithStateTTL makes the saved state of a run resumed with [ResumeRun]
// expire d after its latest save; without it the state is kept until the
// run ends.
func WithStateTTL(d time.Duration) RunOption {
	return func(c *runConfig) { c.stateTTL = d }
}

// WithRunLease sets how long a process holds a run resumed with
// [ResumeRun] after its latest save (the default is five minutes). While
// it holds it, ResumeRun elsewhere fails with a
// [*RunStateConflictError]; once the lease has run out, a process that
// crashed no longer keeps the run from being resumed.
func WithRunLease(d time.Duration) RunOption {
	return func(c *runConfig) { c.lease = d }
}

// ResumeRun begins, in this process, the run id whose state store keeps:
// it loads the state saved by an earlier process (the step, approval
// decisions and pending approvals, reveals, marks ([RunContext.Mark]),
// failure counts and the run-scoped cache entries of tools that opt in,
// see [CachePolicy.Persist]), or starts afresh when there is none, and claims
// the run with a compare-and-swap save. opts are as for [NewRun], plus
// [WithStateTTL] and [WithRunLease]; values, dependencies and the
// stable-list setting are not saved, so give them again. Child runs
// ([RunContext.NewChild]) are not saved: a sub-agent's run lives in the
// process that runs it.
//
// Only one process carries on a run at a time: if another resumed it and
// holds it (see [WithRunLease]), or resumes it at the same moment and
// wins, ResumeRun fails with a [*RunStateConflictError]; if another live
// run of this process has the ID, with a [*RunConflictError].
//
// The run saves itself: at the end of each BuildTools, after each call
// that changed its bookkeeping, and before the handler of an approved
// call runs, so that an approval is used up in the store before its call
// runs and a crash cannot run it twice. [RunContext.Save] saves at other
// times (after RecordApproval, say). [RunContext.Suspend] saves and lets
// the run go, to be resumed in this or another process; [RunContext.End]
// deletes the saved state, waiting for the store for 30 seconds at most. A failed save fails the BuildTools or the call
// with the store's error; what was saved before stays saved. A save that
// finds the state changed by another process makes the run unusable here:
// its Err, BuildTools and calls report the *RunStateConflictError.
//
// Saved state names tools by the name they were offered under when an
// entry was made and by the hash of their parameter schema then (see
// [PendingApproval].SchemaHash). An entry is bound to the tool BuildTools
// offers under that name with that schema; a tool renamed, or whose schema
// changed, between save and resume simply does not get its entries (they
// stay in the state unused), and no other tool does. Approvals are bound
// to the call ID, name, canonical arguments and schema hash, so a call of
// a tool whose schema changed is asked again.
func ResumeRun(ctx context.Context, store RunStore, id string, opts ...RunOption) (*RunContext, error) {
	if store == nil {
		return nil, errors.New("toolset: ResumeRun: nil RunStore")
	}
	cfg := runConfig{store: store}
	rc := newRun(id, "", &cfg, opts)
	if rc.err != nil {
		return nil, rc.err
	}
	s := rc.st
	data, version, err := store.Load(ctx, s.id)
	if err != nil {
		rc.let()
		return nil, fmt.Errorf("toolset: run %q: loading its state: %w", boundName(s.id), err)
	}
	if data != nil {
		if err := s.restore(data, version); err != nil {
			rc.let()
			return nil, err
		}
	}
	var b [16]byte
	rand.Read(b[:])
	d := s.durable
	d.saveMu.Lock()
	d.version, d.token = version, hex.EncodeToString(b[:])
	d.saveMu.Unlock()
	if err := s.save(ctx, true); err != nil {
		rc.let()
		return nil, err
	}
	return rc, nil
}

func newDurability(cfg *runConfig) *durability {
	d := &durability{store: cfg.store, ttl: cfg.stateTTL, lease: cfg.lease}
	if d.lease <= 0 {
		d.lease = defaultRunLease
	}
	return d
}

// Save saves the run's state to its store now, for a run made with
// [ResumeRun]: after [RunContext.RecordApproval] in a process that only
// records decisions, say. It fails for a run without a store, and with
// the run's error for one that cannot be used.
func (rc *RunContext) Save(ctx context.Context) error {
	if err := rc.Err(); err != nil {
		return err
	}
	s := rc.state()
	if s == nil || s.durable == nil {
		return fmt.Errorf("toolset: run %q has no store to save to: resume it with ResumeRun", boundName(rc.ID()))
	}
	return s.save(ctx, true)
}

// Suspend saves the run's state and lets the run go in this process: it
// ends here as with [RunContext.End], but its saved state is kept, and
// no longer held, so that [ResumeRun] continues it here or in another
// process. Use it when a run pauses, as for a call waiting for approval.
// If the save fails the run stays live, and the error says why.
func (rc *RunContext) Suspend(ctx context.Context) error {
	if err := rc.Err(); err != nil {
		return err
	}
	s := rc.state()
	if s == nil || s.durable == nil {
		return fmt.Errorf("toolset: run %q has no store to save to: resume it with ResumeRun", boundName(rc.ID()))
	}
	if err := s.save(ctx, false); err != nil {
		return err
	}
	rc.let()
	return nil
}

// let ends the run in this process without touching its saved state.
func (rc *RunContext) let() {
	rc.end(false)
}

// forget deletes the saved state of a run that ends, if it still holds
// it: the delete compares the version with the one this process saved
// last, so that a process whose lease ran out does not delete the state
// of one that resumed the run since. A failure is logged: the state then
// stays until its TTL, if any.
func (s *runState) forget() {
	d := s.durable
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	if d.lost.Load() != nil {
		return // another process has the run now
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.store.Delete(ctx, s.id, d.version); err != nil {
		slog.Default().Warn(fmt.Sprintf("toolset: run %q ended, and its saved state could not be deleted", boundName(s.id)), slog.Any("error", err))
	}
}

// saveIfDirty saves the run's state if its bookkeeping changed. It is a
// no-op for a run without a store.
func (rc *RunContext) saveIfDirty(ctx context.Context) error {
	s := rc.state()
	if s == nil || s.durable == nil || !s.durable.dirty.Load() || s.ended.Load() {
		return nil
	}
	return s.save(ctx, true)
}

// markDirty notes a change of the bookkeeping of a run with a store.
func (s *runState) markDirty() {
	if s.durable != nil {
		s.durable.dirty.Store(true)
	}
}

// save saves the run's state, held by this process if hold.
func (s *runState) save(ctx context.Context, hold bool) error {
	d := s.durable
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	if e := d.lost.Load(); e != nil {
		return e
	}
	if s.ended.Load() {
		return fmt.Errorf("toolset: run %q not saved: %w", boundName(s.id), ErrRunEnded)
	}
	d.dirty.Store(false)
	now := time.Now()
	s.mu.Lock()
	st, caches := s.encode()
	s.mu.Unlock()
	// Results are encoded outside the run's lock: their encoding is the
	// application's code.
	for _, c := range caches {
		if es := c.store.saved(now); len(es) > 0 {
			st.Caches = append(st.Caches, savedCache{Tool: c.id.name, Schema: c.id.schema, Entries: es})
		}
	}
	slices.SortFunc(st.Caches, func(a, b savedCache) int {
		return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Schema, b.Schema))
	})
	if hold {
		st.Holder = &savedHolder{Token: d.token, Until: now.Add(d.lease).UTC()}
	}
	data, err := json.Marshal(st)
	if err != nil {
		d.dirty.Store(true)
		return fmt.Errorf("toolset: run %q: encoding its state: %w", boundName(s.id), err)
	}
	version, err := d.store.Save(ctx, s.id, data, d.version, d.ttl)
	if err != nil {
		d.dirty.Store(true)
		var ce *RunStateConflictError
		if errors.As(err, &ce) {
			lost := *ce
			lost.ID = s.id
			d.lost.Store(&lost)
			return &lost
		}
		return fmt.Errorf("toolset: run %q: saving its state: %w", boundName(s.id), err)
	}
	d.version = version
	return nil
}

// namedCache is a run-scoped cache to save, and the name of its tool.
type namedCache struct {
	id    toolID
	store *resultCache
}

// encode returns the run's state, but for the entries of its live caches,
// which it returns to be encoded. The caller holds s.mu.
func (s *runState) encode() (*savedState, []namedCache) {
	d := s.durable
	st := &savedState{Version: runStateVersion, ID: s.id, Step: int(s.step.Load())}
	for subj, dec := range s.decisions {
		if !json.Valid([]byte(subj.args)) {
			continue // arguments that are not JSON never pass validation
		}
		sd := savedDecision{CallID: subj.id, Tool: subj.name, Args: json.RawMessage(subj.args), Schema: dec.schema, Decision: decisionDenied, Reason: dec.reason}
		if dec.approved {
			sd.Decision = decisionApproved
			if dec.edited != nil {
				// The approver's arguments, as the call would take them.
				// Arguments that are not JSON fail the call here; saved
				// without them, the approval would run the model's, so it
				// is not saved at all: the resumed call asks again.
				edited := normalizeArgs(dec.edited)
				if !json.Valid(edited) {
					continue
				}
				sd.EditedArgs = edited
			}
		}
		st.Approvals = append(st.Approvals, sd)
	}
	slices.SortFunc(st.Approvals, func(a, b savedDecision) int {
		return cmp.Or(cmp.Compare(a.CallID, b.CallID), cmp.Compare(a.Tool, b.Tool), cmp.Compare(string(a.Args), string(b.Args)))
	})
	for subj, p := range s.pending {
		if !json.Valid([]byte(subj.args)) {
			continue
		}
		st.Pending = append(st.Pending, savedPending{CallID: subj.id, Tool: subj.name, Args: json.RawMessage(subj.args), Schema: p.schema, AskedAt: p.asked.UTC()})
	}
	slices.SortFunc(st.Pending, func(a, b savedPending) int {
		return cmp.Or(a.AskedAt.Compare(b.AskedAt), cmp.Compare(a.CallID, b.CallID), cmp.Compare(a.Tool, b.Tool), cmp.Compare(string(a.Args), string(b.Args)))
	})
	for c := range s.revealed {
		if id, ok := d.ids[c]; ok {
			st.Reveals = append(st.Reveals, savedTool{Tool: id.name, Schema: id.schema})
		}
	}
	for id := range d.restored.reveals {
		st.Reveals = append(st.Reveals, savedTool{Tool: id.name, Schema: id.schema})
	}
	slices.SortFunc(st.Reveals, func(a, b savedTool) int {
		return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Schema, b.Schema))
	})
	st.Reveals = slices.Compact(st.Reveals)
	for c, f := range s.failures {
		if id, ok := d.ids[c]; ok {
			st.Failures = append(st.Failures, savedFailure{Tool: id.name, Schema: id.schema, Steps: f.steps, LastStep: f.lastStep})
		}
	}
	for id, f := range d.restored.failures {
		st.Failures = append(st.Failures, savedFailure{Tool: id.name, Schema: id.schema, Steps: f.steps, LastStep: f.lastStep})
	}
	slices.SortFunc(st.Failures, func(a, b savedFailure) int {
		return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Schema, b.Schema))
	})
	st.Marks = s.encodeMarks()
	var caches []namedCache
	for c, store := range s.caches {
		if id, ok := d.ids[c]; ok && c.cache.policy.Persist {
			caches = append(caches, namedCache{id, store})
		}
	}
	for id, es := range d.restored.caches {
		st.Caches = append(st.Caches, savedCache{Tool: id.name, Schema: id.schema, Entries: es})
	}
	return st, caches
}

// restore applies saved state to a run that has just been made.
func (s *runState) restore(data []byte, version int64) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("toolset: run %q: saved state (version %d in the store): %s", boundName(s.id), version, fmt.Sprintf(format, args...))
	}
	if len(data) > maxRunStateBytes {
		return fail("%d bytes, more than the %d a run loads", len(data), maxRunStateBytes)
	}
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fail("not JSON: %v", err)
	}
	if head.Version != runStateVersion {
		return fail("format version %d; this library reads version %d", head.Version, runStateVersion)
	}
	var st savedState
	if err := json.Unmarshal(data, &st); err != nil {
		return fail("%v", err)
	}
	if st.ID != s.id {
		return fail("it is the state of run %q", boundName(st.ID))
	}
	now := time.Now()
	if h := st.Holder; h != nil && now.Before(h.Until) {
		return &RunStateConflictError{ID: s.id, Expected: version, Actual: version,
			Reason: fmt.Sprintf("another process holds it until %s; resume it once that process suspends or ends it, or its lease runs out", h.Until.UTC().Format(time.RFC3339))}
	}
	if st.Step < -1 || st.Step > 1<<30 {
		return fail("step %d out of range", st.Step)
	}
	canon := func(what string, raw json.RawMessage) (string, error) {
		b, err := canonjson.Append(nil, raw)
		if err != nil {
			return "", fmt.Errorf("%s: %v", what, err)
		}
		return string(b), nil
	}
	decisions := make(map[approvalSubject]decision, len(st.Approvals))
	for i, a := range st.Approvals {
		args, err := canon("arguments", a.Args)
		if err != nil || a.Tool == "" {
			return fail("approvals[%d]: no tool, or %v", i, err)
		}
		d := decision{schema: a.Schema, reason: a.Reason}
		switch a.Decision {
		case decisionApproved:
			d.approved = true
			if a.EditedArgs != nil {
				d.edited = slices.Clone(a.EditedArgs)
			}
		case decisionDenied:
		default:
			return fail("approvals[%d]: decision %q is neither %q nor %q", i, boundName(a.Decision), decisionApproved, decisionDenied)
		}
		subj := approvalSubject{id: a.CallID, name: a.Tool, args: args}
		if _, dup := decisions[subj]; dup {
			return fail("approvals[%d]: a second decision for call %q of tool %q", i, boundName(a.CallID), boundName(a.Tool))
		}
		decisions[subj] = d
	}
	pending := make(map[approvalSubject]pendingApproval, len(st.Pending))
	for i, p := range st.Pending {
		args, err := canon("arguments", p.Args)
		if err != nil || p.Tool == "" {
			return fail("pending[%d]: no tool, or %v", i, err)
		}
		subj := approvalSubject{id: p.CallID, name: p.Tool, args: args}
		if _, dup := pending[subj]; dup {
			return fail("pending[%d]: call %q of tool %q is listed twice", i, boundName(p.CallID), boundName(p.Tool))
		}
		pending[subj] = pendingApproval{schema: p.Schema, asked: p.AskedAt}
	}
	r := restoredEntries{names: make(map[string]struct{})}
	for _, t := range st.Reveals {
		if r.reveals == nil {
			r.reveals = make(map[toolID]struct{})
		}
		r.reveals[toolID{t.Tool, t.Schema}] = struct{}{}
		r.names[t.Tool] = struct{}{}
	}
	for i, f := range st.Failures {
		if f.Steps < 1 || f.LastStep < -1 || f.LastStep > st.Step {
			return fail("failures[%d]: %d steps, the last %d, in a run at step %d", i, f.Steps, f.LastStep, st.Step)
		}
		if r.failures == nil {
			r.failures = make(map[toolID]failureCount)
		}
		if _, dup := r.failures[toolID{f.Tool, f.Schema}]; dup {
			return fail("failures[%d]: tool %q is counted twice", i, boundName(f.Tool))
		}
		r.failures[toolID{f.Tool, f.Schema}] = failureCount{steps: f.Steps, lastStep: f.LastStep}
		r.names[f.Tool] = struct{}{}
	}
	seen := make(map[toolID]struct{}, len(st.Caches))
	for i, c := range st.Caches {
		if _, dup := seen[toolID{c.Tool, c.Schema}]; dup {
			return fail("caches[%d]: tool %q has a second cache", i, boundName(c.Tool))
		}
		seen[toolID{c.Tool, c.Schema}] = struct{}{}
		var live []savedEntry
		for _, e := range c.Entries {
			if e.Expires == nil || now.Before(*e.Expires) {
				live = append(live, e)
			}
		}
		if len(live) == 0 {
			continue
		}
		if r.caches == nil {
			r.caches = make(map[toolID][]savedEntry)
		}
		r.caches[toolID{c.Tool, c.Schema}] = live
		r.names[c.Tool] = struct{}{}
	}
	marks, err := restoreMarks(st.Marks)
	if err != nil {
		return fail("%v", err)
	}
	s.step.Store(int64(st.Step))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decisions, s.pending, s.marks = decisions, pending, marks
	s.durable.restored = r
	return nil
}

// bindRestored gives the restored entries of each tool offered this turn
// (tools, those of keep) to that tool.
func (rc *RunContext) bindRestored(tools []Tool, keep []bool) {
	s := rc.state()
	if s == nil || s.durable == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range tools {
		if s.durable.restored.empty() {
			return
		}
		if keep == nil || keep[i] {
			s.bindTool(t)
		}
	}
}

// bindTool gives t the restored entries saved under its name and schema,
// for a call of t outside a turn's list.
func (rc *RunContext) bindTool(t Tool) {
	if rc != nil && rc.st != nil && rc.st.durable != nil {
		rc.st.bindCalled(t)
	}
}

func (s *runState) bindCalled(t Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.durable.restored.empty() {
		s.bindTool(t)
	}
}

// bindTool binds the restored entries of t. The caller holds s.mu.
func (s *runState) bindTool(t Tool) {
	if t.core == nil {
		return
	}
	if _, ok := s.durable.restored.names[t.Name]; !ok {
		return
	}
	if h, err := schemaHash(t); err == nil {
		s.bind(t.core, toolID{t.Name, h})
	}
}

// hasStore reports whether rc is a run with a store.
func (rc *RunContext) hasStore() bool {
	return rc != nil && rc.st != nil && rc.st.durable != nil
}

// saveAfterCall saves the state of a run with a store after a call, if
// the call changed it, and returns the call's outcome, or the error of
// the save.
func (rc *RunContext) saveAfterCall(ctx context.Context, name string, res any, err error) (any, error) {
	if serr := rc.saveIfDirty(ctx); serr != nil {
		var ce *RunStateConflictError
		if errors.As(serr, &ce) {
			return nil, serr
		}
		return nil, fmt.Errorf("toolset: tool %q: after the call: %w", boundName(name), serr)
	}
	return res, err
}

// bind gives the restored entries of id to the tool c. The caller holds
// s.mu.
func (s *runState) bind(c *toolCore, id toolID) {
	d := s.durable
	r := &d.restored
	if _, ok := r.reveals[id]; ok {
		delete(r.reveals, id)
		if s.revealed == nil {
			s.revealed = make(map[*toolCore]struct{})
		}
		s.revealed[c] = struct{}{}
		s.nameTool(c, id)
	}
	if f, ok := r.failures[id]; ok {
		delete(r.failures, id)
		if s.failures == nil {
			s.failures = make(map[*toolCore]*failureCount)
		}
		if old, ok := s.failures[c]; !ok || old.steps < f.steps {
			s.failures[c] = &f
		}
		s.nameTool(c, id)
	}
	if es, ok := r.caches[id]; ok {
		delete(r.caches, id)
		if c.cache != nil && c.cache.policy.Scope == CacheRun && c.cache.policy.Persist {
			if s.caches == nil {
				s.caches = make(map[*toolCore]*resultCache)
			}
			store, ok := s.caches[c]
			if !ok {
				store = newResultCache(&c.cache.policy)
				s.caches[c] = store
			}
			store.restore(es)
			s.nameTool(c, id)
		}
	}
}

// nameTool records the name of c in saved state, if it has none yet. The
// caller holds s.mu.
func (s *runState) nameTool(c *toolCore, id toolID) {
	d := s.durable
	if _, ok := d.ids[c]; ok {
		return
	}
	if d.ids == nil {
		d.ids = make(map[*toolCore]toolID)
	}
	d.ids[c] = id
}

// identify records the name of t, offered as name, in the saved state of
// a run with a store. The caller holds s.mu.
func (s *runState) identify(t Tool, name string) {
	d := s.durable
	if d == nil || t.core == nil {
		return
	}
	if _, ok := d.ids[t.core]; ok {
		return
	}
	h, err := schemaHash(t)
	if err != nil {
		return // not saved: the tool's schema has no JSON form
	}
	s.nameTool(t.core, toolID{name, h})
}

// saved returns the live entries of the cache, least recently used first.
func (rc *resultCache) saved(now time.Time) []savedEntry {
	type entry struct {
		key     string
		val     any
		expires time.Time
	}
	var live []entry
	rc.mu.Lock()
	for e := rc.tail; e != nil; e = e.prev {
		if !e.expires.IsZero() && !now.Before(e.expires) || !utf8.Valid(e.key) {
			continue
		}
		live = append(live, entry{string(e.key), e.val, e.expires})
	}
	rc.mu.Unlock()
	var out []savedEntry
	for _, e := range live {
		v, err := encodeCached(e.val)
		if err != nil {
			continue // not JSON: the entry stays in this process only
		}
		se := savedEntry{Key: e.key, Value: v}
		if !e.expires.IsZero() {
			t := e.expires.UTC()
			se.Expires = &t
		}
		out = append(out, se)
	}
	return out
}

// encodeCached returns the JSON of a cached result. A panic of its
// encoding is an error.
func encodeCached(v any) (b json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("encoding panicked: %v", p)
		}
	}()
	return json.Marshal(v)
}

// restore adds saved entries, least recently used first, to the cache. A
// result saved as a JSON string comes back as a string, any other as its
// JSON (a json.RawMessage), so that its model text is unchanged.
func (rc *resultCache) restore(es []savedEntry) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, se := range es {
		var val any = json.RawMessage(slices.Clone(se.Value))
		var str string
		if len(se.Value) > 0 && se.Value[0] == '"' && json.Unmarshal(se.Value, &str) == nil {
			val = str
		}
		size := 0
		if rc.policy.MaxBytes > 0 {
			text, err := ResultText(val)
			if err != nil || len(text) > rc.policy.MaxBytes {
				continue
			}
			size = len(text)
		}
		h := maphash.String(rc.seed, se.Key)
		if old, ok := rc.items[h]; ok {
			if old.pending {
				continue
			}
			rc.remove(old)
		}
		e := &cacheEntry{hash: h, key: []byte(se.Key), val: val, size: size}
		if se.Expires != nil {
			e.expires = *se.Expires
		}
		rc.items[h] = e
		rc.pushFront(e)
		rc.count++
		rc.bytes += size
		for rc.tail != nil && (rc.count > rc.policy.MaxEntries || rc.policy.MaxBytes > 0 && rc.bytes > rc.policy.MaxBytes) {
			rc.remove(rc.tail)
		}
	}
}
