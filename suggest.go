package toolset

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// This file answers a call of a name that is not in a turn's set: it
// finds the names the model likely meant, which [UnknownToolError]
// suggests. Its cost is bounded, however many tools the set has and
// however long or strange the name called is:
//
//   - The names tools had before a prefix or a rename are indexed once per
//     snapshot, on the first unknown call over it (snapshot.history), and
//     looked up in one probe.
//   - The names the model may call this turn are sorted and bucketed by
//     length once per set, on its first unknown call (unknownFacts); each
//     later call reads them.
//   - A call compares the first maxNameLen bytes of the name called (no
//     tool name is longer) with at most maxScoredNames names, nearest in
//     length first, one step per byte of each: edit distance is at least
//     the difference in length, so the scan stops as soon as no name left
//     can beat the ones it holds. Suggestions are thus found among the
//     names nearest in length, which, in a set of thousands of names of
//     one length, are not all of them.

// maxSuggestions caps the names an UnknownToolError suggests.
const maxSuggestions = 5

// maxScoredNames caps the names one unknown call compares with the name
// called: at most 256 × 64 steps, some tens of microseconds.
const maxScoredNames = 256

// nameHistory maps the names that tools of a snapshot had before a prefix
// or a rename (and the names they were made with) to their positions.
type nameHistory struct {
	byName  map[string][]int32
	longest int
}

// history returns the snapshot's name history, building it on first use:
// the walk follows joins to their parts and copies to what they copy,
// position for position, recording every name a position had that is not
// the one it has now, and the name its tool was made with.
func (s *snapshot) history() *nameHistory {
	s.histOnce.Do(func() {
		h := &nameHistory{byName: make(map[string][]int32)}
		// A position may be listed under a name more than once, when
		// several layers gave it that name: formerly skips repeats.
		add := func(name string, i int32) {
			if name == s.tools[i].Name {
				return
			}
			h.byName[name] = append(h.byName[name], i)
			h.longest = max(h.longest, len(name))
		}
		for i := range s.tools {
			if c := s.tools[i].core; c != nil {
				add(c.name, int32(i))
			}
		}
		// walkAt follows position i of sub, position at of s, down
		// through joins and copies, one position at a time: below a copy
		// of some tools only (see snapshot.pick).
		walkAt := func(sub *snapshot, i, at int32) {
			for sub != nil {
				switch {
				case sub.segs != nil:
					k := sort.Search(len(sub.segs), func(k int) bool { return sub.segs[k].end > i })
					for k < len(sub.segs) && sub.segs[k].start == sub.segs[k].end {
						k++
					}
					if k == len(sub.segs) {
						return
					}
					i -= sub.segs[k].start
					sub = sub.segs[k].sub
				case sub.pick != nil:
					i, sub = sub.pick[i], sub.from
					add(sub.tools[i].Name, at)
				case sub.from != nil && len(sub.from.tools) == len(sub.tools):
					sub = sub.from
					add(sub.tools[i].Name, at)
				default:
					return
				}
			}
		}
		var walk func(sub *snapshot, off int32)
		walk = func(sub *snapshot, off int32) {
			for sub != nil {
				switch {
				case sub.segs != nil:
					for _, seg := range sub.segs {
						if seg.start < seg.end {
							walk(seg.sub, off+seg.start)
						}
					}
					return
				case sub.pick != nil:
					for j := range sub.pick {
						walkAt(sub, int32(j), off+int32(j))
					}
					return
				case sub.from != nil && len(sub.from.tools) == len(sub.tools):
					for i, t := range sub.from.tools {
						add(t.Name, off+int32(i))
					}
					sub = sub.from
				default:
					return
				}
			}
		}
		walk(s, 0)
		s.hist = h
	})
	return s.hist
}

// unknownFacts is what a set keeps to answer unknown calls: the names the
// model may call this turn, sorted, and the same names ordered by length.
type unknownFacts struct {
	sorted []string
	byLen  []int32 // indices of sorted, by length, then in sorted order
	lenAt  [maxNameLen + 2]int32
}

// callable reports whether the model may call the tool at position i of
// the set: it is shown, and not marked unavailable.
func (ts *ToolList) callable(i int32) bool {
	if ts.keep != nil && !ts.keep[i] {
		return false
	}
	_, spent := ts.over[i]
	return !spent
}

// unknownFacts returns the set's facts for unknown calls, making them on
// first use.
func (ts *ToolList) unknownFacts() *unknownFacts {
	if f := ts.unknown.Load(); f != nil {
		return f
	}
	f := &unknownFacts{sorted: make([]string, 0, ts.n)}
	for i := range ts.snap.tools {
		if ts.callable(int32(i)) {
			f.sorted = append(f.sorted, ts.snap.tools[i].Name)
		}
	}
	slices.Sort(f.sorted)
	// A counting sort by length keeps the sorted order within a length.
	// Every name of a set is valid, so at most maxNameLen bytes long.
	for _, n := range f.sorted {
		f.lenAt[min(len(n), maxNameLen)+1]++
	}
	for l := 1; l < len(f.lenAt); l++ {
		f.lenAt[l] += f.lenAt[l-1]
	}
	f.byLen = make([]int32, len(f.sorted))
	next := f.lenAt
	for k, n := range f.sorted {
		l := min(len(n), maxNameLen)
		f.byLen[next[l]] = int32(k)
		next[l]++
	}
	ts.unknown.CompareAndSwap(nil, f)
	return ts.unknown.Load()
}

// unknownTool returns the error of a call of name, which is not in the set.
func (ts *ToolList) unknownTool(name string) *UnknownToolError {
	e := &UnknownToolError{Name: name}
	if ts == nil || ts.n == 0 {
		return e
	}
	f := ts.unknownFacts()
	if len(f.sorted) == 0 {
		return e
	}
	e.Suggestions = ts.formerly(name)
	want := name[:min(len(name), maxNameLen)]
	k := len(f.sorted)
	if k > maxListedNames {
		k = maxListedNames
	}
	near, _ := f.nearest(want, k)
	// Of the names a few edits away, only the nearest are suggested.
	limit := suggestDistance(len(want))
	if len(near) > 0 {
		limit = min(limit, near[0].score)
	}
	for _, c := range near {
		if len(e.Suggestions) == maxSuggestions || c.score > limit {
			break
		}
		if n := f.sorted[c.rank]; !slices.Contains(e.Suggestions, n) {
			e.Suggestions = append(e.Suggestions, n)
		}
	}
	if len(f.sorted) <= maxListedNames {
		e.Available = slices.Clone(f.sorted)
		return e
	}
	e.Available = make([]string, 0, maxListedNames)
	for _, c := range near {
		e.Available = append(e.Available, f.sorted[c.rank])
	}
	// Fewer near names than listed: fill in from the sorted names.
	for r := 0; len(e.Available) < maxListedNames && r < len(f.sorted); r++ {
		if !slices.Contains(e.Available, f.sorted[r]) {
			e.Available = append(e.Available, f.sorted[r])
		}
	}
	e.More = len(f.sorted) - len(e.Available)
	return e
}

// suggestDistance is the largest edit distance from a name of n bytes at
// which another name is suggested: about a third of it, at most 4, so
// that "read_file" still finds "fs_read_file".
func suggestDistance(n int) int { return min((n+1)/3, 4) }

// formerly returns the names of the tools the model may call that had
// name before a prefix or a rename, in the order of the set. It reads at
// most maxScoredNames of the positions that had the name.
func (ts *ToolList) formerly(name string) []string {
	h := ts.snap.history()
	if len(name) > h.longest {
		return nil
	}
	var found [maxSuggestions]int32
	n := 0
	ps := h.byName[name]
	for _, i := range ps[:min(len(ps), maxScoredNames)] {
		if n == maxSuggestions {
			break
		}
		if ts.callable(i) && !slices.Contains(found[:n], i) {
			found[n] = i
			n++
		}
	}
	if n == 0 {
		return nil
	}
	slices.Sort(found[:n])
	out := make([]string, n)
	for k, i := range found[:n] {
		out[k] = ts.snap.tools[i].Name
	}
	return out
}

// scoredName is a name of unknownFacts.sorted, by rank, and its distance
// from the name called.
type scoredName struct {
	rank  int32
	score int
}

// nearest returns the k names nearest want, nearest first and then in
// sorted order, among at most maxScoredNames of them scanned by length:
// want's length first, then one byte shorter and longer, and so on. The
// scan ends when no name left can be nearer than the k it holds. It also
// returns how many names it scored.
func (f *unknownFacts) nearest(want string, k int) (top []scoredName, scored int) {
	d := distancePool.Get().(*distance)
	defer distancePool.Put(d)
	d.reset(want)
	top = make([]scoredName, 0, k+1)
	worse := func(a, b scoredName) bool {
		return a.score > b.score || a.score == b.score && a.rank > b.rank
	}
	scan := func(l int) {
		for _, r := range f.byLen[f.lenAt[l]:f.lenAt[l+1]] {
			if scored == maxScoredNames {
				return
			}
			scored++
			c := scoredName{rank: r, score: d.to(f.sorted[r])}
			if len(top) == k && !worse(top[k-1], c) {
				continue
			}
			at, _ := slices.BinarySearchFunc(top, c, func(a, b scoredName) int {
				if worse(b, a) {
					return -1
				}
				return 1
			})
			top = slices.Insert(top, at, c)
			if len(top) > k {
				top = top[:k]
			}
		}
	}
	for gap := 0; gap <= maxNameLen && scored < maxScoredNames; gap++ {
		if len(top) == k && top[k-1].score < gap {
			break // every name left is at least gap edits away
		}
		if l := len(want) - gap; l >= 0 {
			scan(l)
		}
		if l := len(want) + gap; gap > 0 && l <= maxNameLen {
			scan(l)
		}
	}
	return top, scored
}

var distancePool = sync.Pool{New: func() any { return new(distance) }}

// listNames writes names separated by commas, the last joined by "or".
func listNames(b *strings.Builder, names []string) {
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(boundName(n))
	}
}
