package toolset

import "hash/maphash"

// This file holds what a snapshot knows of its own tools, built once on
// first use and never changed: the name index (first positions in a
// pointer-free nameTable, repeated and invalid names), the positions of
// tools with environment, deferral and budget policies, and of tools with
// enabled or prepare functions. The invariant:
//
//	The facts are a function of the snapshot's tools alone, so they are
//	built at most once per snapshot (sync.Once) and shared by every turn
//	and run that sees it; a copy or a join takes its policy facts from
//	the snapshots it was made from instead of reading the tools' cores.

// nameIndex maps names to positions, and records the positions that need
// attention in a turn: names that occur more than once, invalid names, and
// tools with per-turn or per-run policies. For most snapshots all but the
// table are empty, and a turn skips them at no cost.
type nameIndex struct {
	first    nameTable
	dups     [][]int32 // positions sharing a name, in order of first occurrence
	dupOf    map[string]int
	invalid  []int32
	env      []int32 // required environment variables
	deferred []int32 // deferred until a search reveals them
	budgets  []int32 // tools with a failure budget
}

// index returns the snapshot's name index, building it on first use.
func (s *snapshot) index() *nameIndex {
	s.idxOnce.Do(func() {
		ix := &s.idx
		p := s.policies()
		ix.env, ix.deferred, ix.budgets = p.env, p.deferred, p.budgets
		ix.first = newNameTable(len(s.tools))
		for i := range s.tools {
			name := s.tools[i].Name
			if !validName(name) {
				ix.invalid = append(ix.invalid, int32(i))
			}
			j, seen := ix.first.insert(s.tools, int32(i))
			if !seen {
				continue
			}
			if ix.dupOf == nil {
				ix.dupOf = make(map[string]int)
			}
			g, ok := ix.dupOf[name]
			if !ok {
				g = len(ix.dups)
				ix.dupOf[name] = g
				ix.dups = append(ix.dups, []int32{j})
			}
			ix.dups[g] = append(ix.dups[g], int32(i))
		}
	})
	return &s.idx
}

// policyFacts lists the positions of a snapshot's tools that have
// environment, deferral or failure-budget policies, for the name index.
type policyFacts struct {
	env      []int32 // required environment variables
	deferred []int32 // deferred until a search reveals them
	budgets  []int32 // tools with a failure budget
}

var noPolicies = &policyFacts{}

// policies returns the snapshot's policy facts. Policies belong to a
// tool's core, which copies share, so the facts of a copy are those of
// the snapshot it copies, and those of a join are its parts', shifted:
// only the snapshots of Functions and of toolsets of the caller's read
// the cores of their tools. NewFunction reads them at once, so that a
// turn over fresh copies of it does not.
func (s *snapshot) policies() *policyFacts {
	s.policyOnce.Do(func() { s.policy = s.findPolicies() })
	return s.policy
}

func (s *snapshot) findPolicies() *policyFacts {
	switch {
	case s.pick != nil:
		p := s.from.policies()
		if p == noPolicies {
			return noPolicies
		}
		return &policyFacts{env: picked(p.env, s.pick), deferred: picked(p.deferred, s.pick), budgets: picked(p.budgets, s.pick)}
	case s.from != nil && len(s.from.tools) == len(s.tools) && !s.ownPolicies:
		return s.from.policies()
	case s.segs != nil:
		var out policyFacts
		for _, seg := range s.segs {
			if seg.start == seg.end {
				continue
			}
			p := seg.sub.policies()
			out.env = appendShifted(out.env, p.env, seg.start)
			out.deferred = appendShifted(out.deferred, p.deferred, seg.start)
			out.budgets = appendShifted(out.budgets, p.budgets, seg.start)
		}
		if out.env == nil && out.deferred == nil && out.budgets == nil {
			return noPolicies
		}
		return &out
	}
	var out policyFacts
	for i := range s.tools {
		c := s.tools[i].core
		if c == nil {
			continue
		}
		if len(c.env) > 0 {
			out.env = append(out.env, int32(i))
		}
		if c.deferred {
			out.deferred = append(out.deferred, int32(i))
		}
		if c.maxFailures > 0 {
			out.budgets = append(out.budgets, int32(i))
		}
	}
	if out.env == nil && out.deferred == nil && out.budgets == nil {
		return noPolicies
	}
	return &out
}

// picked returns the positions of src, positions of a snapshot's from,
// that pick lists, as positions of the snapshot (see snapshot.pick).
// Both increase.
func picked(src, pick []int32) []int32 {
	var out []int32
	j := 0
	for _, i := range src {
		for j < len(pick) && pick[j] < i {
			j++
		}
		if j == len(pick) {
			break
		}
		if pick[j] == i {
			out = append(out, int32(j))
		}
	}
	return out
}

func appendShifted(dst, src []int32, by int32) []int32 {
	for _, i := range src {
		dst = append(dst, i+by)
	}
	return dst
}

// nameTable maps each name of a snapshot's tools to its first position.
// It is an open-addressing table of positions that holds no pointers:
// the GC never scans it, no key is copied into it, and a name is compared
// with the tool's own. Building one costs a hash and a probe a tool, a
// third of what a map[string]int32 costs. The hash is keyed with a seed
// made at start-up, so names chosen by a remote toolset cannot be made to
// collide.
type nameTable struct {
	slots []nameSlot // a power of two in length, at most two thirds full
}

type nameSlot struct {
	tag uint32 // the high bits of the name's hash, made odd; 0 when empty
	pos int32
}

var nameSeed = maphash.MakeSeed()

func newNameTable(n int) nameTable {
	size := 8
	for size < n+n/2 {
		size <<= 1
	}
	return nameTable{slots: make([]nameSlot, size)}
}

// insert records position i of tools under its name, unless an earlier
// position has that name: then it returns that one, and true.
func (t *nameTable) insert(tools []Tool, i int32) (int32, bool) {
	s, tag, found := t.probe(tools, tools[i].Name)
	if found {
		return s.pos, true
	}
	*s = nameSlot{tag: tag, pos: i}
	return 0, false
}

// find returns the first position of tools that has name.
func (t *nameTable) find(tools []Tool, name string) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	s, _, found := t.probe(tools, name)
	return s.pos, found
}

// probe returns the slot that holds name (found), or else the empty slot
// where it would go, and name's tag. The table is at most two thirds
// full, so an empty slot always ends the search.
func (t *nameTable) probe(tools []Tool, name string) (s *nameSlot, tag uint32, found bool) {
	h := maphash.String(nameSeed, name)
	tag, mask := uint32(h>>32)|1, uint64(len(t.slots)-1)
	for j := h & mask; ; j = (j + 1) & mask {
		s = &t.slots[j]
		switch {
		case s.tag == 0:
			return s, tag, false
		case s.tag == tag && tools[s.pos].Name == name:
			return s, tag, true
		}
	}
}

// turnPolicies returns the positions of tools whose enabled or prepare
// function has not run this turn. It scans the tools once, without the name
// index, which a fresh snapshot may never need.
func (s *snapshot) turnPolicies() []int32 {
	s.turnOnce.Do(func() {
		for i, t := range s.tools {
			if t.core.hasTurnPolicy() && !t.prepared {
				s.turn = append(s.turn, int32(i))
			}
		}
	})
	return s.turn
}
