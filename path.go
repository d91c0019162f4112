package toolset

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// entryError names the toolset that failed: "toolsets[1] (Prefixed): ..."
// inside a Combined, "Prefixed#1: ..." among the entries of BuildTools.
// It says each thing once: the message it wraps loses this package's
// prefix (the outermost error says it) and a leading label already given.
// The error of a toolset labelled "pkg:name" that names itself as
// `pkg: toolset "name": ...` is named so, with the position added:
// `toolset "name" (pkg, entry 1): ...`.
type entryError struct {
	index    int
	label    string
	combined bool
	err      error
}

func (e *entryError) Error() string {
	inner := strings.TrimPrefix(errorText(e.err), "toolset: ")
	if pkg, name, ok := strings.Cut(e.label, ":"); ok && pkg != "" && name != "" {
		if rest, ok := strings.CutPrefix(inner, pkg+": toolset "+strconv.Quote(name)+": "); ok {
			where := fmt.Sprintf("entry %d", e.index)
			if e.combined {
				where = fmt.Sprintf("toolsets[%d]", e.index)
			}
			return fmt.Sprintf("toolset %q (%s, %s): %s", name, pkg, where, rest)
		}
	}
	inner = strings.TrimPrefix(inner, e.label+": ")
	if e.combined {
		return fmt.Sprintf("toolsets[%d] (%s): %s", e.index, e.label, inner)
	}
	return fmt.Sprintf("%s#%d: %s", e.label, e.index, inner)
}

// unprefixed is an error of this package, or one made by user code that
// may be, wrapped under a message of this package: its message loses the
// "toolset: " that the wrapping message already begins with. errors.Is
// and errors.As see the error unchanged.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(errorText(u.err), "toolset: ") }

func (u unprefixed) Unwrap() error { return u.err }

func (e *entryError) Unwrap() error { return e.err }

func (s segment) describe(k joinKind) string {
	switch {
	case k == joinCombined:
		return fmt.Sprintf("toolsets[%d] (%s)", s.pos, s.label)
	case s.standalone:
		return fmt.Sprintf("tools[%d] (standalone)", s.pos)
	default:
		return fmt.Sprintf("%s#%d", s.label, s.pos)
	}
}

// contributor names where the tool at position i of s came from, following
// joins and renamings down to the innermost toolset it can name:
// "Combined#0 > toolsets[1] (Prefixed)".
func (s *snapshot) contributor(i int32, root string) string {
	var parts []string
	if root != "" {
		parts = append(parts, root)
	}
	for s != nil {
		if s.segs == nil {
			s = s.from
			continue
		}
		k := sort.Search(len(s.segs), func(k int) bool { return s.segs[k].end > i })
		for k < len(s.segs) && s.segs[k].start == s.segs[k].end {
			k++ // skip empty segments of replaced standalone tools
		}
		if k == len(s.segs) {
			break
		}
		seg := s.segs[k]
		parts = append(parts, seg.describe(s.kind))
		i -= seg.start
		s = seg.sub
	}
	return strings.Join(parts, " > ")
}
