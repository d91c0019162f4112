package toolset

import (
	"context"
	"errors"
	"fmt"
)

// Dynamic picks the toolset for each turn, for example per user or per
// tenant. Make one with [NewDynamic].
type Dynamic struct {
	fn func(ctx context.Context) (Toolset, error)
}

// NewDynamic returns a toolset that calls fn every turn and yields the
// tools of the toolset it returns; a nil toolset yields no tools, and a
// panic of fn fails the turn with a [*PanicError]. When the
// toolsets fn returns are long-lived values, their work is memoised as
// usual; build them once, not inside fn. Their instructions are forwarded
// for the turn; Dynamic has no Close, since those toolsets belong to whoever
// built them.
func NewDynamic(fn func(ctx context.Context) (Toolset, error)) *Dynamic {
	return &Dynamic{fn: fn}
}

// Instructions implements [InstructionsProvider], forwarding the
// instructions of the toolset fn picks for this turn.
func (d *Dynamic) Instructions(ctx context.Context) (string, error) {
	if d == nil {
		return "", errNilDynamic
	}
	if d.fn == nil {
		return "", errors.New("toolset: Dynamic: nil function")
	}
	ts, err := d.pick(ctx)
	if err != nil || ts == nil {
		return "", err
	}
	return forwardInstructions(ctx, ts)
}

// GetTools implements [Toolset].
func (d *Dynamic) GetTools(ctx context.Context) ([]Tool, error) { return getTools(ctx, d) }

func (d *Dynamic) view(ctx context.Context, sc *scratch) (view, error) {
	if d == nil {
		return view{}, errNilDynamic
	}
	if d.fn == nil {
		return view{}, errors.New("toolset: Dynamic: nil function")
	}
	ts, err := d.pick(ctx)
	if err != nil {
		return view{}, err
	}
	if ts == nil {
		return view{snap: emptySnapshot}, nil
	}
	return materialize(ctx, ts, sc)
}

// pick runs fn; a panic becomes a *PanicError.
func (d *Dynamic) pick(ctx context.Context) (ts Toolset, err error) {
	defer func() {
		if v := recover(); v != nil {
			ts, err = nil, newPanicError("Dynamic function", "", "Dynamic", v)
		}
	}()
	ts, err = d.fn(ctx)
	if err != nil {
		return nil, fmt.Errorf("toolset: Dynamic: %w", unprefixed{err})
	}
	return ts, nil
}

// Prefixed returns d with every tool name prefixed; see [NewPrefixed].
func (d *Dynamic) Prefixed(prefix string, opts ...PrefixOption) *Prefixed {
	return NewPrefixed(d, prefix, opts...)
}

// Renamed returns d with some tools renamed; see [NewRenamed].
func (d *Dynamic) Renamed(names map[string]string) *Renamed { return NewRenamed(d, names) }

// Filtered returns d showing only the tools pred accepts each turn; see [NewFiltered].
func (d *Dynamic) Filtered(pred Predicate) *Filtered { return NewFiltered(d, pred) }

// Prepared returns d with its tool list edited each turn by fn; see [NewPrepared].
func (d *Dynamic) Prepared(fn PrepareFunc) *Prepared { return NewPrepared(d, fn) }

// CombinedWith returns a toolset of d followed by others; see [NewCombined].
func (d *Dynamic) CombinedWith(others ...Toolset) *Combined { return combineWith(d, others) }

// Guarded returns d with each tool offered again with the options guard
// returns for it; see [NewGuarded].
func (d *Dynamic) Guarded(guard func(Tool) []ToolOption) *Guarded { return NewGuarded(d, guard) }
