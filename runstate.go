package toolset

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The saved state of a run is JSON of this form (version 1):
//
//	{
//	  "version": 1,
//	  "id": "req-42",
//	  "step": 3,
//	  "holder": {"token": "9f0c...", "until": "2026-01-02T15:04:05Z"},
//	  "approvals": [...],
//	  ...
//	}
//
// The run's own fields come first: version, id, step and, while a
// process holds the run, holder. Then comes the section of each part of
// the run's state that has one, under the part's key, in the order of
// runParts (runparts.go); each part's type describes its section. A
// tool is named by the name it was offered under when the entry was made
// and the hash of its parameter schema as offered (see schemaHash).
// Lists are sorted, so that a state saves to the same bytes;
// testdata/runstate_v1*.json pin them.

// runStateVersion is the version of the saved state's format.
const runStateVersion = 1

// maxRunStateBytes bounds the saved state a run loads.
const maxRunStateBytes = 16 << 20

// defaultRunLease is how long a process holds a resumed run without
// saving it; see WithRunLease.
const defaultRunLease = 5 * time.Minute

// savedHead is what a saved state says of the run itself, before the
// sections of its parts.
type savedHead struct {
	Version int          `json:"version"`
	ID      string       `json:"id"`
	Step    int          `json:"step"`
	Holder  *savedHolder `json:"holder,omitempty"`
}

type savedHolder struct {
	Token string    `json:"token"`
	Until time.Time `json:"until"`
}

// durability is what a run resumed from a store keeps to save itself.
type durability struct {
	store      RunStore
	ttl, lease time.Duration

	saveMu  sync.Mutex // one save at a time; guards version, token and size
	version int64
	token   string
	size    int // of the latest save

	dirty atomic.Bool // the bookkeeping changed since the last save
	lost  atomic.Pointer[RunStateConflictError]

	// Guarded by runState.mu:
	ids      map[*toolCore]toolID       // the name of each tool with entries
	restored map[toolID][]restoredEntry // loaded entries waiting for their tools
	names    map[string]struct{}        // the names of restored's tools
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
	parts := s.parts.list()
	sections := make([]any, len(parts))
	s.mu.Lock()
	head := savedHead{Version: runStateVersion, ID: s.id, Step: int(s.step.Load())}
	sv := saving{now: now, d: d}
	for i, p := range parts {
		sections[i] = p.save(sv)
	}
	s.mu.Unlock()
	if hold {
		head.Holder = &savedHolder{Token: d.token, Until: now.Add(d.lease).UTC()}
	}
	// The sections are encoded outside the run's lock: a cached result's
	// encoding is the application's code.
	data, err := encodeState(head, parts, sections, d.size+d.size/8)
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
	d.version, d.size = version, len(data)
	return nil
}

// restore applies saved state to a run that has just been made: the
// run's own fields here, and each part's section by its part.
func (s *runState) restore(data []byte, version int64) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("toolset: run %q: saved state (version %d in the store): %s", boundName(s.id), version, fmt.Sprintf(format, args...))
	}
	if len(data) > maxRunStateBytes {
		return fail("%d bytes, more than the %d a run loads", len(data), maxRunStateBytes)
	}
	parts := s.parts.list()
	head, sections, err := decodeState(data, parts)
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		return fail("not JSON: %v", err)
	case errors.As(err, &te) && te.Field == "":
		return fail("JSON %s, not an object", te.Value)
	case err != nil && te == nil:
		return fail("%v", err) // a time that is not one, say
	}
	if head.Version != runStateVersion {
		return fail("format version %d; this library reads version %d", head.Version, runStateVersion)
	}
	if te != nil {
		kind, _, _ := strings.Cut(te.Value, " ") // "number 12", with the number
		return fail("%s: JSON %s where %s belongs", te.Field, kind, jsonKind(te.Type))
	}
	if head.ID != s.id {
		return fail("it is the state of run %q", boundName(head.ID))
	}
	now := time.Now()
	if h := head.Holder; h != nil && now.Before(h.Until) {
		return &RunStateConflictError{ID: s.id, Expected: version, Actual: version,
			Reason: fmt.Sprintf("another process holds it until %s; resume it once that process suspends or ends it, or its lease runs out", h.Until.UTC().Format(time.RFC3339))}
	}
	if head.Step < -1 || head.Step > 1<<30 {
		return fail("step %d out of range", head.Step)
	}
	r := &restoring{step: head.Step, now: now, d: s.durable}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range parts {
		if err := p.restore(sections[i], r); err != nil {
			return fail("%v", err)
		}
	}
	s.step.Store(int64(head.Step))
	return nil
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

// jsonKind says what JSON a value of type t decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		if t == reflect.TypeFor[time.Time]() {
			return "a time (a string)"
		}
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	}
	return "a number"
}
