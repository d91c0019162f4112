package toolset

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

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
func (b *ResultBudget) apply(rc *RunContext, res any) (any, error) {
	if _, isContent := res.(*Content); isContent {
		return res, nil
	}
	text, err := ResultText(res)
	if err != nil || len(text) <= b.MaxBytes {
		return res, err
	}
	var name string
	if b.Archive != nil && rc != nil {
		name = b.Archive.keep(rc.ID(), text)
	}
	// What the marker takes, at most; the rest is the head's and the tail's.
	room := b.MaxBytes - 80
	if name != "" {
		room -= len(name) + len(b.Archive.tool) + 40
	}
	room = max(room, 64)
	head := textcut.Prefix(text, room*2/3)
	tail := textcut.Suffix(text, room/3)
	left := len(text) - len(head) - len(tail)
	marker := fmt.Sprintf("\n[... %d of %d bytes left out ...]\n", left, len(text))
	if name != "" {
		marker = fmt.Sprintf("\n[... %d of %d bytes left out; read them with %s, name %q, offset %d ...]\n", left, len(text), b.Archive.tool, name, len(head))
	}
	return head + marker + tail, nil
}

// ResultArchive keeps, in memory, the whole text of the results a
// [ResultBudget] cut, for the runs that made the calls, and gives the
// model a tool to read them back a range at a time. A run reads only its
// own results, under random names. It keeps at most its bound of bytes in
// all, dropping the oldest results first: size it for the runs that live
// at once. A result larger than the whole bound is not kept, and its
// marker does not name it.
type ResultArchive struct {
	maxBytes int
	tool     string

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
// results (≤ 0: [DefaultArchiveBytes]), read back with a tool named
// "read_result".
func NewResultArchive(maxBytes int) *ResultArchive {
	if maxBytes <= 0 {
		maxBytes = DefaultArchiveBytes
	}
	return &ResultArchive{maxBytes: maxBytes, tool: "read_result", items: map[archiveKey]string{}}
}

// keep keeps text for run and returns its name, or "" when it is larger
// than the whole archive.
func (a *ResultArchive) keep(run, text string) string {
	if len(text) > a.maxBytes {
		return "" // kept nowhere: the model gets the cut text only
	}
	var b [12]byte
	rand.Read(b[:])
	k := archiveKey{run: run, name: "result-" + hex.EncodeToString(b[:])}
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
			if rc == nil {
				return "", errors.New("toolset: read_result needs a run")
			}
			a.mu.Lock()
			text, ok := a.items[archiveKey{run: rc.ID(), name: in.Name}]
			a.mu.Unlock()
			if !ok {
				return "", NewModelError(fmt.Sprintf("no result named %q in this run: use the name a cut result gave", boundName(in.Name)))
			}
			if in.Offset > len(text) {
				return "", NewModelError(fmt.Sprintf("offset %d is past the result's end (%d bytes)", in.Offset, len(text)))
			}
			n := in.Length
			if n <= 0 || n > MaxReadBytes {
				n = MaxReadBytes
			}
			rest := text[in.Offset:]
			part := textcut.Prefix(rest, n)
			if len(part) < len(rest) {
				part += fmt.Sprintf("\n[... %d more bytes from offset %d ...]", len(rest)-len(part), in.Offset+len(part))
			}
			return part, nil
		}, WithEffects(Effects{ReadOnly: true, Idempotent: true}))
}
