package toolset

// This file holds the view: what a toolset yields for one turn. The
// invariant:
//
//	A view's mask is nil (all visible) or as long as its snapshot's
//	tools; a view never changes its snapshot, it only hides.

// view is what a toolset yields for one turn: a snapshot, and which of its
// tools are visible.
type view struct {
	snap *snapshot
	keep []bool // nil: every tool is visible; otherwise len(keep) == len(snap.tools)
}

func (v view) visible(i int) bool { return v.keep == nil || v.keep[i] }

// tools returns a new slice of the visible tools.
func (v view) tools() []Tool {
	if v.snap == nil {
		return nil
	}
	if v.keep == nil {
		return append([]Tool(nil), v.snap.tools...)
	}
	out := make([]Tool, 0, len(v.snap.tools))
	for i, t := range v.snap.tools {
		if v.keep[i] {
			out = append(out, t)
		}
	}
	return out
}
