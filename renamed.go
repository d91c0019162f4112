package toolset

import (
	"context"
	"fmt"
	"maps"
)

// Renamed renames some tools of a toolset; the others pass through. The
// renamed tools are copies that share their state with the originals. Make
// one with [NewRenamed] or a .Renamed builder.
type Renamed struct {
	inner  Toolset
	names  map[string]string
	inline bool
	memo   memoSlots[derived]
}

// NewRenamed returns ts with tools renamed: names maps an old name to its new
// name, and names not in the map pass through. Two tools visible in one turn
// under the same resulting name make GetTools fail with a
// [*NameConflictError] naming both by their old names; swapping two names
// is fine. A name in the map that matches no tool
// is ignored, since the tools of a remote toolset may come and go.
func NewRenamed(ts Toolset, names map[string]string) *Renamed {
	return &Renamed{inner: ts, names: maps.Clone(names), inline: isInline(ts)}
}

// GetTools implements [Toolset].
func (r *Renamed) GetTools(ctx context.Context) ([]Tool, error) { return getTools(ctx, r) }

// Label implements [Labeler], forwarding the inner toolset's label.
func (r *Renamed) Label() string {
	if r == nil {
		return ""
	}
	return labelOrEmpty(r.inner)
}

// Instructions implements [InstructionsProvider], forwarding the inner
// toolset's instructions.
func (r *Renamed) Instructions(ctx context.Context) (string, error) {
	if r == nil {
		return "", errNilRenamed
	}
	return forwardInstructions(ctx, r.inner)
}

// Close closes the inner toolset if it holds resources.
func (r *Renamed) Close() error {
	if r == nil {
		return errNilRenamed
	}
	return forwardClose(r.inner)
}

// renameClashes lists the groups of positions that renaming brought onto one
// name; a group is a problem only in a turn where two of them are visible.
type renameClashes [][]int32

func (r *Renamed) view(ctx context.Context, sc *scratch) (view, error) {
	if r == nil {
		return view{}, errNilRenamed
	}
	in, err := materialize(ctx, r.inner, sc)
	if err != nil {
		return view{}, err
	}
	d := derive(&r.memo, in.snap, func(in *snapshot) *derived { return r.build(in, sc) })
	facts := d.aux.(renameFacts)
	for _, group := range facts.clashes {
		var visible []int32
		for _, i := range group {
			if in.visible(int(i)) {
				visible = append(visible, i)
			}
		}
		if len(visible) > 1 {
			x := sc.explaining()
			if x == nil {
				return view{}, r.clashError(in.snap, d.out, facts.renamed, visible)
			}
			x.clash(r, in.snap, d.out, facts.renamed, visible)
		}
	}
	sc.explaining().renamed(in.snap, d.out, facts.renamed)
	return view{snap: d.out, keep: in.keep}, nil
}

// renamedFrom marks the positions of a derived snapshot whose tools were
// renamed.
type renamedFrom []bool

func (r *Renamed) build(in *snapshot, sc *scratch) *derived {
	tools, block, off := sc.newTools(len(in.tools))
	copy(tools, in.tools)
	renamed := make(renamedFrom, len(in.tools))
	for i := range tools {
		if n, ok := r.names[tools[i].Name]; ok {
			tools[i].Name = n
			renamed[i] = true
		}
	}
	out := &snapshot{tools: tools, from: in, block: block, off: off, perTurn: in.perTurn}
	var clashes renameClashes
	for _, group := range out.index().dups {
		for _, i := range group {
			if renamed[i] {
				clashes = append(clashes, group)
				break
			}
		}
	}
	return &derived{out: out, aux: renameFacts{clashes, renamed}}
}

// renameFacts is what a Renamed memoises beside its snapshot.
type renameFacts struct {
	clashes renameClashes
	renamed renamedFrom
}

// clashError reports the tools of in at positions that renaming brought
// onto one name, as a *NameConflictError naming each by its old name.
func (r *Renamed) clashError(in, out *snapshot, renamed renamedFrom, positions []int32) error {
	who := make([]string, len(positions))
	for k, i := range positions {
		who[k] = fmt.Sprintf("%q", in.tools[i].Name)
		if renamed[i] {
			who[k] += " (renamed)"
		}
	}
	return &NameConflictError{
		Toolset:   LabelOf(r),
		Conflicts: []NameConflict{{Name: out.tools[positions[0]].Name, Contributors: who}},
		rename:    true,
	}
}

// Prefixed returns r with every tool name prefixed; see [NewPrefixed].
func (r *Renamed) Prefixed(prefix string, opts ...PrefixOption) *Prefixed {
	return NewPrefixed(r, prefix, opts...)
}

// Renamed returns r with some tools renamed again; see [NewRenamed].
func (r *Renamed) Renamed(names map[string]string) *Renamed { return NewRenamed(r, names) }

// Filtered returns r showing only the tools pred accepts each turn; see [NewFiltered].
func (r *Renamed) Filtered(pred Predicate) *Filtered { return NewFiltered(r, pred) }

// Prepared returns r with its tool list edited each turn by fn; see [NewPrepared].
func (r *Renamed) Prepared(fn PrepareFunc) *Prepared { return NewPrepared(r, fn) }

// CombinedWith returns a toolset of r followed by others; see [NewCombined].
func (r *Renamed) CombinedWith(others ...Toolset) *Combined { return combineWith(r, others) }

// Guarded returns r with each tool offered again with the options guard
// returns for it; see [NewGuarded].
func (r *Renamed) Guarded(guard func(Tool) []ToolOption) *Guarded { return NewGuarded(r, guard) }
