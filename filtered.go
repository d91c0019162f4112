package toolset

import (
	"context"
	"errors"
	"log/slog"
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
	if p, ok := f.inner.(*Prefixed); ok && sc.explaining() == nil {
		// Over a Prefixed, the first sight of its input copies only
		// the tools the predicate keeps (see Prefixed.filteredView).
		v, done, err := p.filteredView(ctx, f, sc)
		if done || err != nil {
			return v, err
		}
		in = v
	} else if in, err = materialize(ctx, f.inner, sc); err != nil {
		return view{}, err
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

// evaluatePrefixed is evaluate over the prefixed copies of the tools of
// in, made one at a time: it writes the name of each tool of in, prefix
// and sep before its own, end to end into buf, and runs the predicate
// over each visible one as a copy of that name, which it sees as it sees
// the copies of Prefixed.build. It returns how many it kept, and the
// length of their names put together. With dst nil, it sets keep;
// otherwise it writes each kept copy to the next of dst, and its position
// to the next of pick (both as long as in's tools).
func (f *Filtered) evaluatePrefixed(ctx context.Context, in view, prefix, sep string, buf []byte, keep []bool, dst []Tool, pick []int32) (kept, names int, err error) {
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
	at := 0
	for i := range tools {
		t := tools[i]
		n := copy(buf[at:], prefix)
		n += copy(buf[at+n:], sep)
		n += copy(buf[at+n:], t.Name)
		name = unsafe.String(&buf[at], n)
		at += n
		if !in.visible(i) {
			continue
		}
		t.Name = name
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
		names += n
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
