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
	if p == nil {
		return view{}, errNilPrefixed
	}
	if p.prefix == "" {
		return view{}, errors.New("toolset: Prefixed: empty prefix")
	}
	in, err := materialize(ctx, p.inner, sc)
	if err != nil {
		return view{}, err
	}
	d := derive(&p.memo, in.snap, func(in *snapshot) *derived { return p.build(in, sc) })
	sc.explaining().renamed(in.snap, d.out, nil)
	return view{snap: d.out, keep: in.keep}, nil
}

// build makes the prefixed copies of the tools of in, taking them from
// sc. Their names are laid end to end in one buffer, so that a toolset's
// names cost one allocation, not one each (and the children of a fresh
// Combined share one, see newNames), and each name is cut from the
// buffer as it is written: the bytes of a name are never written again.
func (p *Prefixed) build(in *snapshot, sc *scratch) *derived {
	head := len(p.prefix) + len(p.sep)
	size := head*len(in.tools) + in.nameBytes()
	tools, block, off := sc.newTools(len(in.tools))
	buf := sc.newNames(size, len(in.tools))
	copy(tools, in.tools) // in bulk: far cheaper than tool by tool while the GC runs
	at := 0
	for i := range tools {
		n := copy(buf[at:], p.prefix)
		n += copy(buf[at+n:], p.sep)
		n += copy(buf[at+n:], tools[i].Name)
		tools[i].Name = unsafe.String(&buf[at], n)
		at += n
	}
	return &derived{out: &snapshot{tools: tools, from: in, block: block, off: off, names: size}}
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
