package toolset

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/gotoolset/toolset/internal/textcut"
)

// ResultBudget bounds what of a tool's result reaches the model. A result
// whose text ([ResultText]) is longer than MaxBytes reaches it cut: its
// head and its tail, with a marker between them that says how much was
// left out. With an Archive, the whole text is kept there first, under a
// name of the run's that the marker gives, so that the model can read the
// rest with the archive's read tool ([ResultArchive.ReadTool]).
//
// Results that are [*Content] (parts such as images) are left whole.
type ResultBudget struct {
	// MaxBytes bounds the text the model is sent; at least 256.
	MaxBytes int
	// Archive keeps the whole text of a cut result, for the run that made
	// the call; nil: the rest is dropped.
	Archive *ResultArchive
}

// WithResultBudget bounds what of the tool's results reaches the model;
// see [ResultBudget].
func WithResultBudget(b ResultBudget) ToolOption {
	return func(t *Tool) {
		b.MaxBytes = max(b.MaxBytes, minResultBudget)
		t.core.budget = &b
	}
}

// minResultBudget is the least a budget gives the model: enough for a
// head, a tail and the marker.
const minResultBudget = 256

// apply returns what of res the model is sent.
func (b *ResultBudget) apply(ctx context.Context, rc *RunContext, res any) (any, error) {
	if _, isContent := res.(*Content); isContent {
		return res, nil
	}
	text, err := ResultText(res)
	if err != nil || len(text) <= b.MaxBytes {
		return res, err
	}
	return b.cut(ctx, rc, text, b.MaxBytes), nil
}

// cut returns text cut to at most limit bytes, head and tail around a
// marker, kept whole in the archive first if there is one.
func (b *ResultBudget) cut(ctx context.Context, rc *RunContext, text string, limit int) string {
	var name string
	if b.Archive != nil && rc != nil {
		name = b.Archive.keep(ctx, rc.ID(), text)
	}
	// What the marker takes, at most; the rest is the head's and the tail's.
	room := limit - 80
	if name != "" {
		room -= len(name) + len(b.Archive.tool) + 40
	}
	room = max(room, 64)
	head := room * 2 / 3
	out, _ := textcut.HeadTail(text, limit, head, room/3, func(kept, left int) string {
		if name == "" {
			return fmt.Sprintf("\n[... %d of %d bytes left out ...]\n", left, len(text))
		}
		return fmt.Sprintf("\n[... %d of %d bytes left out; read them with %s, name %q, offset %d ...]\n",
			left, len(text), b.Archive.tool, name, len(textcut.Prefix(text, head)))
	})
	return out
}

// WithTurnResultBudget bounds, for each turn of the run, the text of all
// the results that reach the model from the turn's calls together, as a
// [ResultBudget] bounds one tool's: once the turn's results add up to
// b.MaxBytes, each further result is cut to what is left (at least 256
// bytes, enough for a head, a tail and the marker), kept whole in
// b.Archive if there is one. Results are counted as their calls finish,
// after each tool's own budget; results of content parts ([*Content])
// and errors are not counted, nor cut.
//
// A turn's calls are those of the turn's [ToolList], under any context
// of the run, and the direct calls of a tool ([Tool.Execute]) under the
// turn's context ([RunContext.Turn]); a direct call under a context that
// carries the run but no turn ([NewContext]) counts against the run's
// latest turn. A handler that calls another tool with [Tool.Execute]
// under its own context makes a call of the turn too: what it returns
// is counted, then again the handler's result that holds it.
func WithTurnResultBudget(b ResultBudget) RunOption {
	b.MaxBytes = max(b.MaxBytes, minResultBudget)
	return func(c *runConfig) { c.turnBudget = &b }
}

// turnSpend counts, for one turn of a run with a turn budget, the bytes
// of results its calls sent the model.
type turnSpend struct {
	step int // the turn's step; -1 for the calls before the first turn
	used atomic.Int64
}

// newTurnSpend returns the count of the turn step, and makes it the
// latest turn's unless a later turn has begun meanwhile.
func (s *runState) newTurnSpend(step int) *turnSpend {
	sp := &turnSpend{step: step}
	for {
		old := s.latestSpend.Load()
		if old != nil && old.step > step || s.latestSpend.CompareAndSwap(old, sp) {
			return sp
		}
	}
}

// turnSpend returns the count of the turn a call under rc belongs to, or
// nil when the run has no turn budget (or rc is no run).
func (rc *RunContext) turnSpend() *turnSpend {
	if rc == nil || rc.st == nil || rc.st.turnBudget == nil {
		return nil
	}
	if rc.spend != nil {
		return rc.spend
	}
	return rc.st.latestSpend.Load()
}

// budgeted returns what of res the model is sent under the turn budget
// b, counting it against the turn.
func (sp *turnSpend) budgeted(ctx context.Context, rc *RunContext, b *ResultBudget, res any, err error) (any, error) {
	if err != nil || res == nil {
		return res, err
	}
	if _, isContent := res.(*Content); isContent {
		return res, nil
	}
	text, terr := ResultText(res)
	if terr != nil {
		return res, nil // the adapters report it as they would have
	}
	n := int64(len(text))
	before := sp.used.Add(n) - n
	if before+n <= int64(b.MaxBytes) {
		return res, nil
	}
	limit := max(int64(b.MaxBytes)-before, minResultBudget)
	if n <= limit {
		return res, nil
	}
	out := b.cut(ctx, rc, text, int(limit))
	sp.used.Add(int64(len(out)) - n)
	return out, nil
}

// ResultArchive keeps the whole text of the results a [ResultBudget]
// cut, for the runs that made the calls, and gives the model a tool to
// read them back a range at a time. A run reads only its own results,
// under random names.
//
// One made by [NewResultArchive] keeps them in memory, at most its bound
// of bytes in all, dropping the oldest results first: size it for the
// runs that live at once. A result larger than the whole bound is not
// kept, and its marker does not name it. One made by
// [NewStoredResultArchive] keeps them in a [ResultStore], where a run
// resumed in another process ([ResumeRun]) still reads them.
type ResultArchive struct {
	maxBytes int
	tool     string
	store    ResultStore // nil: in memory

	mu    sync.Mutex
	items map[archiveKey]string
	order []archiveKey
	size  int
}

type archiveKey struct{ run, name string }

// DefaultArchiveBytes is what a [ResultArchive] keeps unless told
// otherwise: 64 MB.
const DefaultArchiveBytes = 64 << 20

// NewResultArchive returns an archive that keeps at most maxBytes of
// results in memory (≤ 0: [DefaultArchiveBytes]), read back with a tool
// named "read_result".
func NewResultArchive(maxBytes int) *ResultArchive {
	if maxBytes <= 0 {
		maxBytes = DefaultArchiveBytes
	}
	return &ResultArchive{maxBytes: maxBytes, tool: "read_result", items: map[archiveKey]string{}}
}

// NewStoredResultArchive returns an archive that keeps results in store,
// each of at most [DefaultArchiveBytes], read back with a tool named
// "read_result". A result the store fails to keep reaches the model cut,
// its marker naming nothing, and the failure is logged.
func NewStoredResultArchive(store ResultStore) *ResultArchive {
	return &ResultArchive{maxBytes: DefaultArchiveBytes, tool: "read_result", store: store}
}

// ResultStore keeps the whole texts of a [ResultArchive] outside the
// process. It must be safe for concurrent use. [DirResultStore] keeps
// them in files; toolpkg's ArtifactResults keeps them as artifacts.
type ResultStore interface {
	// Save keeps text as the result name of run. The store must not keep
	// text after Save returns.
	Save(ctx context.Context, run, name string, text []byte) error
	// Read returns at most n bytes (n > 0) of the result name of run,
	// from byte offset off (0 ≤ off), and the result's whole size; an
	// offset at or past the end gives no bytes. A result the store does
	// not have, for this run, is an error wrapping [ErrResultNotFound].
	Read(ctx context.Context, run, name string, off, n int64) (data []byte, size int64, err error)
}

// ErrResultNotFound reports a result a [ResultStore] does not have.
var ErrResultNotFound = errors.New("toolset: result not found")

// keep keeps text for run and returns its name, or "" when it is not
// kept: larger than the whole archive, or refused by its store.
func (a *ResultArchive) keep(ctx context.Context, run, text string) string {
	if len(text) > a.maxBytes {
		return "" // kept nowhere: the model gets the cut text only
	}
	var b [12]byte
	rand.Read(b[:])
	k := archiveKey{run: run, name: "result-" + hex.EncodeToString(b[:])}
	if a.store != nil {
		if err := a.save(ctx, k, text); err != nil {
			logWarn(ctx, "toolset: result archive: a cut result was not kept", slog.String("run", boundName(run)), slog.Any("error", err))
			return ""
		}
		return k.name
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.size+len(text) > a.maxBytes && len(a.order) > 0 {
		old := a.order[0]
		a.order = a.order[1:]
		a.size -= len(a.items[old])
		delete(a.items, old)
	}
	a.items[k] = text
	a.order = append(a.order, k)
	a.size += len(text)
	return k.name
}

// save keeps text in the store, under recover: the store is the
// program's code.
func (a *ResultArchive) save(ctx context.Context, k archiveKey, text string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError("result store Save", a.tool, "", p)
		}
	}()
	return a.store.Save(ctx, k.run, k.name, []byte(text))
}

// read returns at most n bytes of the result k from off, and its size.
func (a *ResultArchive) read(ctx context.Context, k archiveKey, off, n int) (_ string, size int, err error) {
	if a.store == nil {
		a.mu.Lock()
		text, ok := a.items[k]
		a.mu.Unlock()
		if !ok {
			return "", 0, ErrResultNotFound
		}
		if off >= len(text) {
			return "", len(text), nil
		}
		return text[off:min(len(text), off+n)], len(text), nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError("result store Read", a.tool, "", p)
		}
	}()
	data, sz, err := a.store.Read(ctx, k.run, k.name, int64(off), int64(n))
	switch {
	case err != nil:
		return "", 0, err
	case sz < 0 || int64(len(data)) > int64(n) || sz > int64(a.maxBytes):
		return "", 0, fmt.Errorf("toolset: result store: %d bytes of a result of %d, asked for %d at most", len(data), sz, n)
	}
	return string(data), int(sz), nil
}

// MaxReadBytes bounds what one call of the archive's read tool returns.
const MaxReadBytes = 16 << 10

type readResultArgs struct {
	Name   string `json:"name" jsonschema:"the name the cut result gave"`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=0,the byte offset to read from"`
	Length int    `json:"length,omitempty" jsonschema:"minimum=0,maximum=16384,how many bytes to read (default and at most 16384)"`
}

// ReadTool returns the tool the model reads a cut result's rest with: by
// the name the result gave, from a byte offset, at most [MaxReadBytes] a
// call, and only the results of the run the call is made in.
func (a *ResultArchive) ReadTool() Tool {
	return NewTool(a.tool, "Read a range of a tool result that was cut short, by the name and offset its marker gave.",
		func(ctx context.Context, in readResultArgs) (string, error) {
			rc := FromContext(ctx)
			if rc == nil || rc.ID() == "" {
				return "", errors.New("toolset: read_result needs a run")
			}
			if in.Offset < 0 || in.Length < 0 {
				return "", NewModelError(fmt.Sprintf("offset %d and length %d: neither may be negative", in.Offset, in.Length))
			}
			n := in.Length
			if n <= 0 || n > MaxReadBytes {
				n = MaxReadBytes
			}
			// A few bytes more, so that a character the range ends in is
			// left whole for the next read.
			raw, size, err := a.read(ctx, archiveKey{run: rc.ID(), name: in.Name}, in.Offset, n+utf8.UTFMax)
			switch {
			case errors.Is(err, ErrResultNotFound):
				return "", NewModelError(fmt.Sprintf("no result named %q in this run: use the name a cut result gave", boundName(in.Name)))
			case err != nil:
				return "", fmt.Errorf("toolset: %s: %w", a.tool, err)
			case in.Offset > size:
				return "", NewModelError(fmt.Sprintf("offset %d is past the result's end (%d bytes)", in.Offset, size))
			}
			part := textcut.Prefix(raw, n)
			if end := in.Offset + len(part); end < size {
				part += fmt.Sprintf("\n[... %d more bytes from offset %d ...]", size-end, end)
			}
			return part, nil
		}, WithEffects(Effects{ReadOnly: true, Idempotent: true}))
}
