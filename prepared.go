package toolset

import (
	"context"
	"errors"
	"fmt"
)

// PrepareFunc edits the tool list of a turn: it may change descriptions,
// schemas and metadata, drop tools and reorder them, but not add tools or
// rename them.
type PrepareFunc func(ctx context.Context, tools []Tool) ([]Tool, error)

// Prepared runs a [PrepareFunc] over a toolset's tools every turn. Make one
// with [NewPrepared] or a .Prepared builder.
type Prepared struct {
	inner  Toolset
	fn     PrepareFunc
	inline bool
	memo   memoSlots[snapshot] // recent results, reused when unchanged
}

// NewPrepared returns ts with its visible tools passed through fn every turn.
// fn receives a fresh slice it may modify. A result equal, tool for tool,
// to one of the last few is recognised, so that the toolsets built on the
// Prepared keep what they memoised from turn to turn. A result that adds a tool,
// renames one (use [NewRenamed]) or lists one twice makes GetTools fail; so
// does a nil fn, and a panic of fn, as a [*PanicError].
func NewPrepared(ts Toolset, fn PrepareFunc) *Prepared {
	return &Prepared{inner: ts, fn: fn, inline: isInline(ts)}
}

// GetTools implements [Toolset].
func (p *Prepared) GetTools(ctx context.Context) ([]Tool, error) { return getTools(ctx, p) }

// Label implements [Labeler], forwarding the inner toolset's label.
func (p *Prepared) Label() string {
	if p == nil {
		return ""
	}
	return labelOrEmpty(p.inner)
}

// Instructions implements [InstructionsProvider], forwarding the inner
// toolset's instructions when at least one of its tools is shown this turn:
// instructions about tools the model cannot see would only mislead it.
func (p *Prepared) Instructions(ctx context.Context) (string, error) {
	if p == nil {
		return "", errNilPrepared
	}
	return instructionsIfShown(ctx, p, p.inner)
}

// Close closes the inner toolset if it holds resources.
func (p *Prepared) Close() error {
	if p == nil {
		return errNilPrepared
	}
	return forwardClose(p.inner)
}

func (p *Prepared) view(ctx context.Context, sc *scratch) (view, error) {
	if p == nil {
		return view{}, errNilPrepared
	}
	if p.fn == nil {
		return view{}, errors.New("toolset: Prepared: nil prepare function")
	}
	in, err := materialize(ctx, p.inner, sc)
	if err != nil {
		return view{}, err
	}
	out, err := p.over(ctx, in)
	if err != nil {
		return view{}, err
	}
	sc.explaining().prepared(in, out)
	return out, nil
}

// over runs the prepare function over the visible tools of in, the view of
// the inner toolset, and checks its result.
func (p *Prepared) over(ctx context.Context, in view) (view, error) {
	before := in.tools()
	byName := make(map[string]*toolCore, len(before))
	for _, t := range before {
		byName[t.Name] = t.core
	}
	after, err := p.prepare(ctx, in.tools())
	if err != nil {
		if _, ok := err.(*PanicError); ok {
			return view{}, err // made by prepare, which names the toolset
		}
		return view{}, fmt.Errorf("toolset: Prepared: %w", unprefixed{err})
	}
	seen := make(map[string]bool, len(after))
	for i, t := range after {
		core, ok := byName[t.Name]
		switch {
		case !ok:
			return view{}, fmt.Errorf("toolset: Prepared: result[%d] %q is not one of the tools it was given; a prepare function may not add or rename tools (use Rename)", i, t.Name)
		case core != t.core:
			return view{}, fmt.Errorf("toolset: Prepared: result[%d] %q is a different tool from the one it was given under that name; a prepare function may not add or rename tools (use Rename)", i, t.Name)
		case seen[t.Name]:
			return view{}, fmt.Errorf("toolset: Prepared: result lists %q twice", t.Name)
		}
		seen[t.Name] = true
	}
	return view{snap: p.snapshotOf(after)}, nil
}

// snapshotOf returns a snapshot of the prepared list: a recent one when
// the list is the same, so that the layers above keep their memo from
// turn to turn, or a new one. A new one holds a copy: the function may
// return a slice of its own and fill it anew next turn, and a snapshot
// aliasing it would then match every later result, whatever run it was
// prepared for.
func (p *Prepared) snapshotOf(tools []Tool) *snapshot {
	if s := p.memo.find(func(s *snapshot) bool { return sameTools(s.tools, tools) }); s != nil {
		return s
	}
	s := newSnapshot(append([]Tool(nil), tools...))
	p.memo.store(s)
	return s
}

// prepare runs the prepare function; a panic becomes a *PanicError.
func (p *Prepared) prepare(ctx context.Context, tools []Tool) (out []Tool, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, newPanicError("Prepared function", "", LabelOf(p), v)
		}
	}()
	return p.fn(ctx, tools)
}

// Prefixed returns p with every tool name prefixed; see [NewPrefixed].
func (p *Prepared) Prefixed(prefix string, opts ...PrefixOption) *Prefixed {
	return NewPrefixed(p, prefix, opts...)
}

// Renamed returns p with some tools renamed; see [NewRenamed].
func (p *Prepared) Renamed(names map[string]string) *Renamed { return NewRenamed(p, names) }

// Filtered returns p showing only the tools pred accepts each turn; see [NewFiltered].
func (p *Prepared) Filtered(pred Predicate) *Filtered { return NewFiltered(p, pred) }

// Prepared returns p prepared again by fn; see [NewPrepared].
func (p *Prepared) Prepared(fn PrepareFunc) *Prepared { return NewPrepared(p, fn) }

// CombinedWith returns a toolset of p followed by others; see [NewCombined].
func (p *Prepared) CombinedWith(others ...Toolset) *Combined { return combineWith(p, others) }

// Guarded returns p with each tool offered again with the options guard
// returns for it; see [NewGuarded].
func (p *Prepared) Guarded(guard func(Tool) []ToolOption) *Guarded { return NewGuarded(p, guard) }
