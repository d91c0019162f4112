package toolset

import (
	"context"
	"fmt"
	"log/slog"
)

// PrepareToolFunc edits a tool's definition for this turn (its description,
// schemas or metadata), or drops it by returning keep false. It may not
// rename the tool.
type PrepareToolFunc func(ctx context.Context, t Tool) (edited Tool, keep bool, err error)

// WithEnabled shows the tool only in turns where enabled reports true. An
// error hides the tool and is logged with [slog.Default], and a panic
// fails the turn with a [*PanicError], as with [NewFiltered].
func WithEnabled(enabled Predicate) ToolOption {
	return func(t *Tool) { t.core.enabled = enabled }
}

// WithPrepare runs prepare on the tool every turn before the model sees it,
// to edit its definition or drop it for this turn. An error fails the turn,
// and so does a panic, as a [*PanicError].
func WithPrepare(prepare PrepareToolFunc) ToolOption {
	return func(t *Tool) { t.core.prepare = prepare }
}

// hasTurnPolicy reports whether the tool's definition depends on the turn.
func (c *toolCore) hasTurnPolicy() bool { return c != nil && (c.enabled != nil || c.prepare != nil) }

// leafView applies the tools' own enabled and prepare functions to a view
// of tools that come straight from their source: a Function, a standalone
// tool, or a toolset of the caller's. Tools already prepared this turn are
// not prepared again.
func leafView(ctx context.Context, v view, sc *scratch) (view, error) {
	positions := v.snap.turnPolicies()
	if len(positions) == 0 {
		return v, nil
	}
	x := sc.explaining()
	why := x.notes()
	out, err := applyTurnPolicies(ctx, v, positions, sc, why)
	if err == nil && out.keep != nil {
		x.hidden(v, out.keep, why, ReasonDisabled)
	}
	return out, err
}

// applyTurnPolicies runs the enabled and prepare functions of the tools at
// positions. One recover serves the whole loop; a panic is blamed on the
// tool and the function being run. why, if not nil, is told which
// function hid each tool it hid (see [Explain]).
func applyTurnPolicies(ctx context.Context, v view, positions []int32, sc *scratch, why *turnNotes) (out view, err error) {
	var t Tool
	callback := ""
	defer func() {
		if p := recover(); p != nil {
			out, err = view{}, newPanicError(callback, t.Name, "", p)
		}
	}()
	keep, owned := v.keep, false
	var edited []Tool
	for _, i := range positions {
		if keep != nil && !keep[i] {
			continue
		}
		t = v.snap.tools[i]
		show := true
		callback = "enabled predicate"
		if t.core.enabled != nil {
			ok, err := t.core.enabled(ctx, t)
			if err != nil {
				logError(ctx, "toolset: enabled predicate failed; tool hidden this turn",
					slog.String("tool", t.Name), slog.Any("error", err))
			}
			show = ok && err == nil
			if !show && why != nil {
				why.add(i, ReasonDisabled, err)
			}
		}
		callback = "prepare function"
		if show && t.core.prepare != nil && !t.prepared {
			out, ok, err := t.core.prepare(ctx, t)
			if err != nil {
				return view{}, fmt.Errorf("toolset: tool %q: prepare: %w", t.Name, unprefixed{err})
			}
			if ok && (out.Name != t.Name || out.core != t.core) {
				return view{}, fmt.Errorf("toolset: tool %q: prepare returned %q; a prepare function may edit a tool, not rename or replace it", t.Name, out.Name)
			}
			if ok {
				if edited == nil {
					edited = append([]Tool(nil), v.snap.tools...)
				}
				out.prepared = true
				edited[i] = out
			}
			show = ok
			if !show && why != nil {
				why.add(i, ReasonDroppedByPrepare, nil)
			}
		}
		if !show {
			if !owned {
				keep, owned = cloneKeepIn(sc, v.keep, len(v.snap.tools)), true
			}
			keep[i] = false
		}
	}
	if edited != nil {
		return view{snap: &snapshot{tools: edited, from: v.snap}, keep: keep}, nil
	}
	return view{snap: v.snap, keep: keep}, nil
}

// cloneKeep returns a copy of keep, or an all-visible mask of n when keep
// is nil.
func cloneKeep(keep []bool, n int) []bool { return cloneKeepIn(nil, keep, n) }

// cloneKeepIn is cloneKeep with the copy taken from sc.
func cloneKeepIn(sc *scratch, keep []bool, n int) []bool {
	out := sc.keep(n)
	if keep == nil {
		for i := range out {
			out[i] = true
		}
		return out
	}
	copy(out, keep)
	return out
}
