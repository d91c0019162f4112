package toolset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/gotoolset/toolset/internal/canonjson"
	"github.com/gotoolset/toolset/internal/textcut"
)

// JournalOptions bound a run's call journal; see [WithCallJournal]. A zero
// field takes its default.
type JournalOptions struct {
	// MaxEntries bounds the calls the journal keeps, the oldest finished
	// ones forgotten first (default 1024).
	MaxEntries int
	// MaxResultBytes bounds the JSON of a result the journal keeps; a
	// larger one is kept as its text, cut with a marker (default 64 KiB).
	MaxResultBytes int
}

// Defaults and bounds of the call journal.
const (
	DefaultJournalEntries     = 1024
	DefaultJournalResultBytes = 64 << 10
	maxJournalEntries         = 1 << 16
	maxJournalResultBytes     = 1 << 20
	maxJournalID              = 256
)

// WithCallJournal keeps a journal of the run's calls: a call with an ID
// that was made before in the run, with the same tool and arguments (in
// any JSON form of the same value), returns what it returned then (its
// result, or the error the model saw) instead of running the tool again,
// so that a call retried by the framework, re-sent in a duplicated
// message or made again after a crash runs once. A call ID reused with
// another tool or other arguments is a [*CallIDReusedError], which stops
// the run. Calls without an ID, and calls that failed with an error that
// stops the run, are not kept.
//
// In a run made with [ResumeRun] the journal is saved with the run's
// state (in "journal"): a call's entry is saved before its tool runs, and
// again with its outcome before the outcome is returned. A resumed run
// that finds an entry saved before its tool ran and never finished (the
// process stopped during the call, which may or may not have had its
// effect) does not run it again unasked: the call returns an
// [*ApprovalRequiredError] whose Interrupted is set, and runs once a human
// approves it ([RunContext.RecordApproval]); a tool made [WithResumeRerun]
// runs it again unasked.
func WithCallJournal(o JournalOptions) RunOption {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultJournalEntries
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultJournalResultBytes
	}
	o.MaxEntries = min(o.MaxEntries, maxJournalEntries)
	o.MaxResultBytes = min(o.MaxResultBytes, maxJournalResultBytes)
	return func(c *runConfig) { c.journal = &o }
}

// CallIDReusedError reports a call whose ID the run's journal holds for a
// call of another tool or with other arguments. It stops the run: the
// call IDs of a run are the model's or the framework's, and one reused
// for another call is a bug that a replay must not hide.
type CallIDReusedError struct {
	// CallID is the reused ID, Tool the name called now and Earlier the
	// name called with that ID before.
	CallID, Tool, Earlier string
}

// Error implements error.
func (e *CallIDReusedError) Error() string {
	if e.Tool != e.Earlier {
		return fmt.Sprintf("toolset: call ID %q was used for tool %q and now for tool %q: call IDs must not be reused in a run",
			boundName(e.CallID), boundName(e.Earlier), boundName(e.Tool))
	}
	return fmt.Sprintf("toolset: call ID %q of tool %q was used before with other arguments: call IDs must not be reused in a run",
		boundName(e.CallID), boundName(e.Tool))
}

// journalEntry is one call of the journal.
type journalEntry struct {
	tool, args  string // the name called, and the hash of its canonical arguments
	done        bool
	interrupted bool // started in a saved state that never finished
	running     bool // running in this process
	value       any  // the result, in this process
	hasValue    bool
	saved       json.RawMessage // the result as JSON, for the saved state and a restored run
	text        string          // the error the model saw, when failed
	failed      bool
}

// journalPart is the run's call journal, by call ID. Its section of the
// saved state lists the entries oldest first:
//
//	"journal": [{"call_id": "c1", "tool": "pay", "args": "sha256:...", "done": true, "result": {...}},
//	            {"call_id": "c2", "tool": "pay", "args": "sha256:...", "error": "card declined", "done": true},
//	            {"call_id": "c3", "tool": "ship", "args": "sha256:..."}]
//
// where an entry without done was saved before its tool ran.
type journalPart struct {
	entries map[string]*journalEntry
	order   []string // call IDs, oldest first
}

type savedJournalEntry struct {
	CallID string          `json:"call_id"`
	Tool   string          `json:"tool"`
	Args   string          `json:"args"`
	Done   bool            `json:"done,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *string         `json:"error,omitempty"`
}

func (*journalPart) key() string { return "journal" }

func (p *journalPart) save(saving) any {
	if len(p.order) == 0 {
		return nil
	}
	out := make([]savedJournalEntry, 0, len(p.order))
	for _, id := range p.order {
		e := p.entries[id]
		s := savedJournalEntry{CallID: id, Tool: e.tool, Args: e.args, Done: e.done}
		if e.done {
			if e.failed {
				text := e.text
				s.Error = &text
			} else {
				s.Result = e.saved
			}
		}
		out = append(out, s)
	}
	return out
}

func (*journalPart) section() any { return new([]savedJournalEntry) }

// restore checks the journal of a saved state and keeps it.
func (p *journalPart) restore(v any, _ *restoring) error {
	saved := *v.(*[]savedJournalEntry)
	if len(saved) > maxJournalEntries {
		return fmt.Errorf("journal: %d entries, more than the %d a run keeps", len(saved), maxJournalEntries)
	}
	for i, s := range saved {
		switch {
		case s.CallID == "" || len(s.CallID) > maxJournalID || !utf8.ValidString(s.CallID):
			return fmt.Errorf("journal[%d]: the call ID is empty, longer than %d bytes or not UTF-8", i, maxJournalID)
		case s.Tool == "" || len(s.Tool) > maxJournalID || !utf8.ValidString(s.Tool):
			return fmt.Errorf("journal[%d]: the tool name is empty, longer than %d bytes or not UTF-8", i, maxJournalID)
		case !validArgsHash(s.Args):
			return fmt.Errorf("journal[%d]: %q is not an argument hash", i, boundName(s.Args))
		case len(s.Result) > maxJournalResultBytes || s.Error != nil && len(*s.Error) > maxJournalResultBytes:
			return fmt.Errorf("journal[%d]: a result over %d bytes", i, maxJournalResultBytes)
		case !s.Done && (s.Result != nil || s.Error != nil):
			return fmt.Errorf("journal[%d]: an outcome of a call that did not finish", i)
		case s.Result != nil && s.Error != nil:
			return fmt.Errorf("journal[%d]: both a result and an error", i)
		}
		if _, dup := p.entries[s.CallID]; dup {
			return fmt.Errorf("journal[%d]: call %q is listed twice", i, boundName(s.CallID))
		}
		e := &journalEntry{tool: s.Tool, args: s.Args, done: s.Done, interrupted: !s.Done, saved: s.Result}
		if s.Error != nil {
			e.failed, e.text = true, *s.Error
		}
		if p.entries == nil {
			p.entries = make(map[string]*journalEntry, len(saved))
		}
		p.entries[s.CallID] = e
		p.order = append(p.order, s.CallID)
	}
	return nil
}

func validArgsHash(s string) bool {
	const prefix = "sha256:"
	if len(s) != len(prefix)+64 || s[:len(prefix)] != prefix {
		return false
	}
	_, err := hex.DecodeString(s[len(prefix):])
	return err == nil
}

// argsHash names the canonical form of a call's arguments.
func argsHash(args json.RawMessage) string {
	canon, err := canonjson.Append(nil, normalizeArgs(args))
	if err != nil {
		canon = args
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// journaling reports whether calls under rc are journaled.
func (rc *RunContext) journaling() bool {
	return rc != nil && rc.st != nil && rc.st.journal != nil
}

// journalTicket is a call the journal let run, to be finished.
type journalTicket struct {
	id string
	e  *journalEntry
}

// journalBegin looks call up in the run's journal. It returns the
// recorded outcome of an earlier call (replay true), or the error that
// stops this one, or a ticket for a call to run (nil for a call the
// journal does not keep).
func (rc *RunContext) journalBegin(ctx context.Context, t Tool, call ToolCall) (res any, replay bool, ticket *journalTicket, err error) {
	if call.ID == "" {
		return nil, false, nil, nil
	}
	s := rc.st
	hash := argsHash(call.Args)
	s.mu.Lock()
	p := &s.parts.journal
	e := p.entries[call.ID]
	switch {
	case e == nil:
		e = &journalEntry{tool: call.Name, args: hash, running: true}
		if p.entries == nil {
			p.entries = make(map[string]*journalEntry)
		}
		p.entries[call.ID] = e
		p.order = append(p.order, call.ID)
		p.trim(s.journal.MaxEntries)
		s.markDirty()
		s.mu.Unlock()
		if s.durable != nil {
			// Saved before the tool runs, so that a process that stops
			// during the call leaves word of it.
			if err := s.save(ctx, true); err != nil {
				rc.journalForget(call.ID, e)
				return nil, true, nil, err
			}
		}
		return nil, false, &journalTicket{id: call.ID, e: e}, nil
	case e.tool != call.Name || e.args != hash:
		s.mu.Unlock()
		return nil, true, nil, &CallIDReusedError{CallID: call.ID, Tool: call.Name, Earlier: e.tool}
	case e.done:
		defer s.mu.Unlock()
		return e.replay(), true, nil, e.replayErr()
	case e.running:
		s.mu.Unlock()
		return nil, true, nil, fmt.Errorf("toolset: call %q of tool %q is running already in this run: a call is made once", boundName(call.ID), boundName(call.Name))
	}
	// Interrupted: ask a human before it runs again, unless a second
	// call is harmless.
	if t.core != nil && t.core.resumeRerun {
		e.interrupted, e.running = false, true
		s.markDirty()
		s.mu.Unlock()
		return nil, false, &journalTicket{id: call.ID, e: e}, nil
	}
	s.mu.Unlock()
	schema, herr := schemaHash(t)
	if herr != nil {
		return nil, true, nil, fmt.Errorf("toolset: tool %q: hashing the parameter schema: %w", call.Name, herr)
	}
	subj := subjectOf(call)
	d, ok := rc.takeDecision(subj, schema)
	switch {
	case !ok:
		rc.ask(subj, schema)
		return nil, true, nil, &ApprovalRequiredError{Call: call, RunID: rc.ID(), SchemaHash: schema, Interrupted: true}
	case !d.approved:
		return nil, true, nil, &ApprovalDeniedError{Call: call, Reason: d.reason}
	}
	s.mu.Lock()
	e.interrupted, e.running = false, true
	s.markDirty()
	s.mu.Unlock()
	return nil, false, &journalTicket{id: call.ID, e: e}, nil
}

// journalForget drops the entry e of id, for a call that will not run or
// whose outcome the journal does not keep.
func (rc *RunContext) journalForget(id string, e *journalEntry) {
	s := rc.st
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &s.parts.journal
	if p.entries[id] != e {
		return
	}
	delete(p.entries, id)
	if i := slices.Index(p.order, id); i >= 0 {
		p.order = slices.Delete(p.order, i, i+1)
	}
	s.markDirty()
}

// journalAbandon forgets the call of tk if it did not finish.
func (rc *RunContext) journalAbandon(tk *journalTicket) {
	s := rc.st
	s.mu.Lock()
	done := tk.e.done
	s.mu.Unlock()
	if !done {
		rc.journalForget(tk.id, tk.e)
	}
}

// journalEnd records the outcome of the call of ticket: a result, or an
// error the model sees; any other error forgets the call, which may then
// be made again.
func (rc *RunContext) journalEnd(tk *journalTicket, res any, err error) {
	if tk == nil {
		return
	}
	var text string
	if err != nil {
		msg, forModel := ErrorText(err)
		if !forModel {
			rc.journalForget(tk.id, tk.e)
			return
		}
		text = msg
	}
	s := rc.st
	limit := s.journal.MaxResultBytes
	var saved json.RawMessage
	keep := true
	if err == nil {
		b, merr := encodeCached(res) // a MarshalJSON that panics is an error
		if merr != nil || len(b) > limit {
			// Kept as its text, cut to the bound.
			txt, terr := ResultText(res)
			if terr != nil {
				txt = fmt.Sprint(res)
			}
			b, _ = json.Marshal(textcut.Clip(txt, limit-64))
			keep = false
		}
		saved = b
	} else if len(text) > limit {
		text = textcut.Clip(text, limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := tk.e
	if s.parts.journal.entries[tk.id] != e {
		return // forgotten, or the run ended
	}
	e.running, e.done = false, true
	if err != nil {
		e.failed, e.text = true, text
	} else {
		e.saved = saved
		e.value, e.hasValue = res, keep
	}
	s.markDirty()
}

// replay returns the recorded result of a finished call.
func (e *journalEntry) replay() any {
	switch {
	case e.failed:
		return nil
	case e.hasValue:
		return e.value
	}
	// As a cached result comes back from a saved state: a JSON string as
	// a string, any other value as its JSON, so its model text is the same.
	var str string
	if len(e.saved) > 0 && e.saved[0] == '"' && json.Unmarshal(e.saved, &str) == nil {
		return str
	}
	return e.saved
}

// replayErr returns the recorded error of a finished call.
func (e *journalEntry) replayErr() error {
	if !e.failed {
		return nil
	}
	return NewModelError(e.text)
}

// trim forgets the oldest finished entries past max.
func (p *journalPart) trim(max int) {
	for len(p.order) > max {
		i := slices.IndexFunc(p.order, func(id string) bool { return p.entries[id].done })
		if i < 0 {
			return // every entry is running: none can go
		}
		delete(p.entries, p.order[i])
		p.order = slices.Delete(p.order, i, i+1)
	}
}
