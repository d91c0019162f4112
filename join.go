package toolset

// This file holds joins: the concatenation of the views of a Combined's
// children or a turn's entries, memoised on the first part's snapshot.
// The invariant:
//
//	A join's snapshot depends only on its kind and its parts (snapshot,
//	label, path element, standalone flag), so the same parts give the
//	same snapshot turn after turn; each segment records the part its
//	tools came from, for the paths that name them.

// joinKind says how the parts of a join are joined.
type joinKind uint8

const (
	joinCombined joinKind = iota // the children of a Combined, end to end
	joinEntries                  // a turn's entries: a standalone tool replaces an earlier one of its name
)

// part is one input of a join.
type part struct {
	snap       *snapshot
	label      string   // for the errors that name it
	elem       pathElem // for the paths that name it
	standalone bool
}

// segment is a range of a join's tools that came from one part.
type segment struct {
	start, end int32     // the range in the join
	pos        int       // the part it came from
	sub        *snapshot // that part's snapshot
	elem       pathElem  // how a path names that part
	standalone bool
}

// joined memoises the join of a list of parts.
type joined struct {
	kind  joinKind
	parts []part
	out   *snapshot
}

func (j *joined) matches(k joinKind, parts []part) bool {
	if j.kind != k || len(j.parts) != len(parts) {
		return false
	}
	for i := range parts {
		if j.parts[i] != parts[i] {
			return false
		}
	}
	return true
}

// join concatenates the parts' snapshots in order. Among the entries of
// BuildTools, a standalone tool that has the name of an earlier standalone
// tool replaces it, at the earlier one's position. The result is memoised
// on the first part's snapshot, unless a part is of this turn only
// (perTurn).
func join(k joinKind, parts []part) *snapshot {
	host := emptySnapshot
	if len(parts) > 0 {
		host = parts[0].snap
	}
	for _, p := range parts {
		if p.snap.perTurn {
			// No later turn joins the same parts: keep no memo of it.
			out := buildJoin(k, parts)
			out.perTurn = true
			return out
		}
	}
	if j := host.joins.find(func(j *joined) bool { return j.matches(k, parts) }); j != nil {
		return j.out
	}
	out := buildJoin(k, parts)
	host.joins.store(&joined{kind: k, parts: append([]part(nil), parts...), out: out})
	return out
}

func buildJoin(k joinKind, parts []part) *snapshot {
	out := &snapshot{kind: k, segs: make([]segment, 0, len(parts))}
	if len(parts) == 1 && !parts[0].standalone {
		p := parts[0]
		out.tools = p.snap.tools // immutable: share it
		out.segs = append(out.segs, segment{end: int32(len(p.snap.tools)), sub: p.snap, elem: p.elem})
		return out
	}
	if tools, b, off, ok := contiguous(parts); ok {
		// The parts' copies lie end to end: share them.
		out.tools, out.block, out.off = tools, b, off
		at := int32(0)
		for i, p := range parts {
			n := int32(len(p.snap.tools))
			out.segs = append(out.segs, segment{start: at, end: at + n, pos: i, sub: p.snap, elem: p.elem})
			at += n
		}
		return out
	}
	total := 0
	for _, p := range parts {
		total += len(p.snap.tools)
	}
	out.tools = make([]Tool, 0, total)
	var standalone map[string]int // name -> segment of the standalone tool
	for i, p := range parts {
		seg := segment{start: int32(len(out.tools)), pos: i, sub: p.snap, elem: p.elem, standalone: p.standalone}
		if p.standalone && k == joinEntries && len(p.snap.tools) == 1 {
			name := p.snap.tools[0].Name
			if si, ok := standalone[name]; ok {
				// Replace the earlier standalone tool in place.
				prev := &out.segs[si]
				out.tools[prev.start] = p.snap.tools[0]
				prev.pos, prev.sub, prev.elem = i, p.snap, p.elem
				seg.end = seg.start
				out.segs = append(out.segs, seg)
				continue
			}
			if standalone == nil {
				standalone = make(map[string]int)
			}
			standalone[name] = len(out.segs)
		}
		out.tools = append(out.tools, p.snap.tools...)
		seg.end = int32(len(out.tools))
		out.segs = append(out.segs, seg)
	}
	return out
}

// joinKeep builds the visibility mask of a join for this turn from the
// masks of its parts' views, or returns nil when everything is visible.
// The mask is taken from sc, or made when sc is nil.
func joinKeep(out *snapshot, views []view, sc *scratch) []bool {
	masked := false
	for _, v := range views {
		if v.keep != nil {
			masked = true
			break
		}
	}
	if !masked {
		return nil
	}
	keep := sc.keep(len(out.tools))
	for _, s := range out.segs {
		dst := keep[s.start:s.end]
		if src := views[s.pos].keep; src != nil {
			copy(dst, src)
		} else {
			for i := range dst {
				dst[i] = true
			}
		}
	}
	return keep
}

// contiguous reports whether the tools of parts lie end to end in one
// block, in order, and returns that range when they do.
func contiguous(parts []part) (tools []Tool, b *toolBlock, off int, ok bool) {
	end := -1
	for _, p := range parts {
		s := p.snap
		if len(s.tools) == 0 {
			continue
		}
		switch {
		case s.block == nil || p.standalone:
			return nil, nil, 0, false
		case b == nil:
			b, off, end = s.block, s.off, s.off
		case s.block != b || s.off != end:
			return nil, nil, 0, false
		}
		end += len(s.tools)
	}
	if b == nil {
		return nil, nil, 0, false
	}
	return b.all[off:end:end], b, off, true
}
