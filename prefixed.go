package toolset

import (
	"context"
	"errors"
	"unsafe"
)

// Prefixed namespaces a toolset: every tool name becomes prefix, separator,
// name ("db_query"). The prefixed tools are copies that share their state
// with the originals. Make one with [NewPrefixed] or a .Prefixed builder.
type Prefixed struct {
	inner  Toolset
	prefix string
	sep    string
	inline bool
	memo   memoSlots[derived]
}

// PrefixOption configures a [Prefixed] toolset.
type PrefixOption func(*Prefixed)

// WithSeparator sets the text between the prefix and the name; the default
// is "_".
func WithSeparator(sep string) PrefixOption {
	return func(p *Prefixed) { p.sep = sep }
}

// NewPrefixed returns ts with every tool name prefixed with prefix and a
// separator ("_" unless [WithSeparator] says otherwise). An empty prefix
// makes GetTools fail.
func NewPrefixed(ts Toolset, prefix string, opts ...PrefixOption) *Prefixed {
	p := &Prefixed{inner: ts, prefix: prefix, sep: "_", inline: isInline(ts)}
	for _, o := range opts {
		if o != nil {
			o(p)
		}
	}
	return p
}

// GetTools implements [Toolset].
func (p *Prefixed) GetTools(ctx context.Context) ([]Tool, error) { return getTools(ctx, p) }

// Label implements [Labeler], forwarding the inner toolset's label.
func (p *Prefixed) Label() string {
	if p == nil {
		return ""
	}
	return labelOrEmpty(p.inner)
}

// Instructions implements [InstructionsProvider], forwarding the inner
// toolset's instructions.
func (p *Prefixed) Instructions(ctx context.Context) (string, error) {
	if p == nil {
		return "", errNilPrefixed
	}
	return forwardInstructions(ctx, p.inner)
}

// Close closes the inner toolset if it holds resources.
func (p *Prefixed) Close() error {
	if p == nil {
		return errNilPrefixed
	}
	return forwardClose(p.inner)
}

func (p *Prefixed) view(ctx context.Context, sc *scratch) (view, error) {
	in, err := p.input(ctx, sc)
	if err != nil {
		return view{}, err
	}
	out := p.copies(in.snap, sc)
	sc.explaining().renamed(in.snap, out, nil)
	return view{snap: out, keep: in.keep}, nil
}

// input materialises the inner toolset, after the checks of p itself.
func (p *Prefixed) input(ctx context.Context, sc *scratch) (view, error) {
	if p == nil {
		return view{}, errNilPrefixed
	}
	if p.prefix == "" {
		return view{}, errors.New("toolset: Prefixed: empty prefix")
	}
	return materialize(ctx, p.inner, sc)
}

// copies returns the prefixed copies of the tools of in, memoised, making
// them on a miss (with the names written on a turn that saw in before,
// if any: see pickFiltered).
func (p *Prefixed) copies(in *snapshot, sc *scratch) *snapshot {
	if d := p.memo.find(func(d *derived) bool { return d.in == in && d.out != nil }); d != nil {
		return d.out
	}
	seen := p.memo.find(func(d *derived) bool { return d.in == in })
	var names []byte
	if seen != nil {
		names = seen.names
	}
	d := p.build(in, names, sc)
	d.in = in
	switch {
	case seen != nil:
		p.memo.replace(seen, d)
	case !in.perTurn: // a snapshot of one turn is never seen again
		p.memo.store(d)
	}
	return d.out
}

// filteredView is the view of f, a Filtered over p: on the first sight of
// an input snapshot, the predicate runs over prefixed copies made one at
// a time, and only the tools it keeps are copied, into a snapshot of this
// turn (pickFiltered); the copies of all the tools, which later turns
// reuse, are made on the next sight, with the names written on the first.
// Otherwise it returns p's view for f to filter (done false).
func (p *Prefixed) filteredView(ctx context.Context, f *Filtered, sc *scratch) (_ view, done bool, _ error) {
	in, err := p.input(ctx, sc)
	if err != nil {
		return view{}, true, err
	}
	d := p.memo.find(func(d *derived) bool { return d.in == in.snap })
	switch {
	case d != nil && d.out != nil:
		return view{snap: d.out, keep: in.keep}, false, nil
	case d != nil || len(in.snap.tools) == 0:
		return view{snap: p.copies(in.snap, sc), keep: in.keep}, false, nil
	}
	v, err := p.pickFiltered(ctx, f, in, sc)
	return v, true, err
}

// pickFiltered writes the prefixed names of all the tools of in, runs
// f's predicate over each visible tool as its prefixed copy, and returns
// a snapshot of the copies it kept (see Filtered.pickKept). The names are
// memoised for the copies of a later turn.
func (p *Prefixed) pickFiltered(ctx context.Context, f *Filtered, in view, sc *scratch) (view, error) {
	size := (len(p.prefix)+len(p.sep))*len(in.snap.tools) + in.snap.nameBytes()
	sc.passTools(len(in.snap.tools))
	buf := sc.newNames(size, len(in.snap.tools))
	out, err := f.pickKept(ctx, in, p.prefix, p.sep, buf, sc)
	if err != nil {
		return view{}, err
	}
	if !in.snap.perTurn {
		p.memo.store(&derived{in: in.snap, names: buf})
	}
	return view{snap: out}, nil
}

// build makes the prefixed copies of the tools of in, taking them from
// sc. Their names are laid end to end in one buffer, so that a toolset's
// names cost one allocation, not one each (and the children of a fresh
// Combined share one, see newNames), and each name is cut from the
// buffer as it is written: the bytes of a name are never written again.
// names, if not nil, holds the names already written, by pickFiltered.
func (p *Prefixed) build(in *snapshot, names []byte, sc *scratch) *derived {
	head := len(p.prefix) + len(p.sep)
	size := head*len(in.tools) + in.nameBytes()
	tools, block, off := sc.newTools(len(in.tools))
	buf := names
	if buf == nil {
		buf = sc.newNames(size, len(in.tools))
	}
	copy(tools, in.tools) // in bulk: far cheaper than tool by tool while the GC runs
	at := 0
	for i := range tools {
		n := head + len(tools[i].Name)
		if names == nil {
			copy(buf[at+copy(buf[at:], p.prefix):], p.sep)
			copy(buf[at+head:], tools[i].Name)
		}
		tools[i].Name = unsafe.String(&buf[at], n)
		at += n
	}
	return &derived{out: &snapshot{tools: tools, from: in, block: block, off: off, names: size, perTurn: in.perTurn}}
}

// Prefixed returns p with every tool name prefixed again; see [NewPrefixed].
func (p *Prefixed) Prefixed(prefix string, opts ...PrefixOption) *Prefixed {
	return NewPrefixed(p, prefix, opts...)
}

// Renamed returns p with some tools renamed; see [NewRenamed].
func (p *Prefixed) Renamed(names map[string]string) *Renamed { return NewRenamed(p, names) }

// Filtered returns p showing only the tools pred accepts each turn; see [NewFiltered].
func (p *Prefixed) Filtered(pred Predicate) *Filtered { return NewFiltered(p, pred) }

// Prepared returns p with its tool list edited each turn by fn; see [NewPrepared].
func (p *Prefixed) Prepared(fn PrepareFunc) *Prepared { return NewPrepared(p, fn) }

// CombinedWith returns a toolset of p followed by others; see [NewCombined].
func (p *Prefixed) CombinedWith(others ...Toolset) *Combined { return combineWith(p, others) }

// Guarded returns p with each tool offered again with the options guard
// returns for it; see [NewGuarded].
func (p *Prefixed) Guarded(guard func(Tool) []ToolOption) *Guarded { return NewGuarded(p, guard) }
