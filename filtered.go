package toolset

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"unsafe"
)

// Predicate decides, each turn, whether the model may see a tool. It reads
// what it needs from ctx, typically the [RunContext]. An error hides the
// tool (fail closed); a panic fails the turn with a [*PanicError].
type Predicate func(ctx context.Context, t Tool) (bool, error)

// Filtered shows only the tools of a toolset that a predicate accepts this
// turn. The same Filtered value serves every run: an admin's turn and a
// guest's turn see different tools. Make one with [NewFiltered] or a .Filtered
// builder.
type Filtered struct {
	inner  Toolset
	pred   Predicate
	inline bool
	// picked says that a turn of a fresh Combined copied only the tools
	// of the inner Function the predicate kept (see view): the turns
	// after it show the Function's own tools, which a join memoises.
	picked atomic.Bool
}

// NewFiltered returns ts showing only the tools pred accepts, evaluated every
// turn. When pred returns an error, the tool is hidden and the error is
// logged with [slog.Default], never swallowed. When pred panics, the turn
// fails with a [*PanicError] naming the tool: a panic is a bug, not a
// verdict. A nil pred makes GetTools fail.
func NewFiltered(ts Toolset, pred Predicate) *Filtered {
	return &Filtered{inner: ts, pred: pred, inline: isInline(ts)}
}

// GetTools implements [Toolset].
func (f *Filtered) GetTools(ctx context.Context) ([]Tool, error) { return getTools(ctx, f) }

// Label implements [Labeler], forwarding the inner toolset's label.
func (f *Filtered) Label() string {
	if f == nil {
		return ""
	}
	return labelOrEmpty(f.inner)
}

// Instructions implements [InstructionsProvider], forwarding the inner
// toolset's instructions when at least one of its tools is shown this turn:
// instructions about tools the model cannot see would only mislead it.
func (f *Filtered) Instructions(ctx context.Context) (string, error) {
	if f == nil {
		return "", errNilFiltered
	}
	return instructionsIfShown(ctx, f, f.inner)
}

// Close closes the inner toolset if it holds resources.
func (f *Filtered) Close() error {
	if f == nil {
		return errNilFiltered
	}
	return forwardClose(f.inner)
}

func (f *Filtered) view(ctx context.Context, sc *scratch) (view, error) {
	if f == nil {
		return view{}, errNilFiltered
	}
	if f.pred == nil {
		return view{}, errors.New("toolset: Filtered: nil predicate")
	}
	var in view
	var err error
	switch inner := f.inner.(type) {
	case *Prefixed:
		if sc.explaining() != nil {
			break
		}
		// Over a Prefixed, the first sight of its input copies only
		// the tools the predicate keeps (see Prefixed.filteredView).
		v, done, err := inner.filteredView(ctx, f, sc)
		if done || err != nil {
			return v, err
		}
		in = v
	case *Function:
		if sc.explaining() != nil || !sc.reserving() || f.picked.Load() {
			break
		}
		// The first turn of a fresh Combined copies the tools of its
		// children into a block: over a Function, only those the
		// predicate keeps.
		if in, err = materialize(ctx, inner, sc); err != nil {
			return view{}, err
		}
		f.picked.Store(true)
		sc.passTools(len(in.snap.tools))
		out, err := f.pickKept(ctx, in, "", "", nil, sc)
		if err != nil {
			return view{}, err
		}
		return view{snap: out}, nil
	}
	if in.snap == nil {
		if in, err = materialize(ctx, f.inner, sc); err != nil {
			return view{}, err
		}
	}
	keep := sc.keep(len(in.snap.tools))
	x := sc.explaining()
	why := x.notes()
	if err := f.evaluate(ctx, in, keep, why); err != nil {
		return view{}, err
	}
	x.hidden(in, keep, why, ReasonFiltered)
	return view{snap: in.snap, keep: keep}, nil
}

// evaluate runs the predicate over the visible tools of in, setting keep.
// One recover serves the whole loop; a panic is blamed on the tool being
// evaluated. why, if not nil, is told the predicate's errors (see
// [Explain]).
func (f *Filtered) evaluate(ctx context.Context, in view, keep []bool, why *turnNotes) (err error) {
	tools := in.snap.tools
	i := 0
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError("filter predicate", tools[i].Name, LabelOf(f), p)
		}
	}()
	for ; i < len(tools); i++ {
		if !in.visible(i) {
			continue
		}
		ok, err := f.pred(ctx, tools[i])
		if err != nil {
			logError(ctx, "toolset: filter predicate failed; tool hidden this turn",
				slog.String("tool", tools[i].Name), slog.String("toolset", LabelOf(f)), slog.Any("error", err))
			if why != nil {
				why.add(int32(i), ReasonFiltered, err)
			}
			continue
		}
		keep[i] = ok
	}
	return nil
}

// pickKept runs the predicate over the visible tools of in, as copies
// named with prefix and sep before their names (written into buf, see
// evaluateInto) when buf is not nil, and returns a snapshot of this turn
// (perTurn, see snapshot.pick) of the copies it kept, taken from sc: in
// one pass, straight into the reservation's block when it has room for
// all of them, else into tools taken once their number is known.
func (f *Filtered) pickKept(ctx context.Context, in view, prefix, sep string, buf []byte, sc *scratch) (*snapshot, error) {
	src := in.snap.tools
	dst, dstPick, direct := sc.room(len(src))
	var keep []bool
	if !direct {
		keep = sc.keep(len(src))
	}
	k, names, err := f.evaluateInto(ctx, in, prefix, sep, buf, keep, dst, dstPick)
	if err != nil {
		return nil, err
	}
	var tools []Tool
	var block *toolBlock
	var off int
	var pick []int32
	if direct {
		tools, block, off, pick = sc.keptIn(k)
	} else {
		tools, block, off = sc.newKept(k, len(src))
		pick = sc.newPicks(k, len(src))
		head := len(prefix) + len(sep)
		at, j := 0, 0
		for i := range src {
			n := head + len(src[i].Name)
			if keep[i] {
				t := src[i]
				if buf != nil {
					t.Name = unsafe.String(&buf[at], n)
				}
				tools[j] = t
				pick[j] = int32(i)
				j++
			}
			at += n
		}
	}
	return &snapshot{tools: tools, from: in.snap, pick: pick, block: block, off: off, names: names, perTurn: true}, nil
}

// evaluateInto is evaluate over copies of the tools of in, made one at a
// time. With buf not nil, it writes the name of each tool of in, prefix
// and sep before its own, end to end into buf, and the predicate sees
// each visible tool as a copy of that name, as it sees the copies of
// Prefixed.build; with buf nil, it sees the tools as they are. It returns
// how many it kept, and the length of their names put together. With dst
// nil, it sets keep; otherwise it writes each kept copy to the next of
// dst, and its position to the next of pick (both as long as in's tools).
func (f *Filtered) evaluateInto(ctx context.Context, in view, prefix, sep string, buf []byte, keep []bool, dst []Tool, pick []int32) (kept, names int, err error) {
	tools := in.snap.tools
	var name string
	defer func() {
		if p := recover(); p != nil {
			if dst != nil {
				clear(dst[:kept]) // free memory again, which is handed out zeroed
			}
			kept, names, err = 0, 0, newPanicError("filter predicate", name, LabelOf(f), p)
		}
	}()
	head := len(prefix) + len(sep)
	if len(buf) > 0 {
		copy(buf[copy(buf, prefix):], sep)
	}
	at := 0
	for i := range tools {
		t := tools[i]
		if buf != nil {
			copy(buf[at:], buf[:head]) // the first name's head: one copy, not two
			n := head + copy(buf[at+head:], t.Name)
			t.Name = unsafe.String(&buf[at], n)
			at += n
		}
		name = t.Name
		if !in.visible(i) {
			continue
		}
		ok, err := f.pred(ctx, t)
		if err != nil {
			logError(ctx, "toolset: filter predicate failed; tool hidden this turn",
				slog.String("tool", name), slog.String("toolset", LabelOf(f)), slog.Any("error", err))
			continue
		}
		if !ok {
			continue
		}
		if dst != nil {
			dst[kept], pick[kept] = t, int32(i)
		} else {
			keep[i] = true
		}
		kept++
		names += len(name)
	}
	return kept, names, nil
}

// Prefixed returns f with every tool name prefixed; see [NewPrefixed].
func (f *Filtered) Prefixed(prefix string, opts ...PrefixOption) *Prefixed {
	return NewPrefixed(f, prefix, opts...)
}

// Renamed returns f with some tools renamed; see [NewRenamed].
func (f *Filtered) Renamed(names map[string]string) *Renamed { return NewRenamed(f, names) }

// Filtered returns f filtered again by pred; see [NewFiltered].
func (f *Filtered) Filtered(pred Predicate) *Filtered { return NewFiltered(f, pred) }

// Prepared returns f with its tool list edited each turn by fn; see [NewPrepared].
func (f *Filtered) Prepared(fn PrepareFunc) *Prepared { return NewPrepared(f, fn) }

// CombinedWith returns a toolset of f followed by others; see [NewCombined].
func (f *Filtered) CombinedWith(others ...Toolset) *Combined { return combineWith(f, others) }

// Guarded returns f with each tool offered again with the options guard
// returns for it; see [NewGuarded].
func (f *Filtered) Guarded(guard func(Tool) []ToolOption) *Guarded { return NewGuarded(f, guard) }
