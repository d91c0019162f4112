package toolset

import (
	"errors"
	"sort"
	"strconv"
	"strings"
)

// This file holds how the engine names places in a composition. A path
// is a list of elements joined with "/", outermost first; an element is a
// toolset's type, "#" and its position among its parent's children (or a
// turn's entries) when it has one, and what tells it apart, quoted: a
// prefix, a label, a tool's name:
//
//	Combined#0/Filtered#1/Prefixed "db"/Function "users"
//
// Explain, name conflicts, observers and the logs and spans built on them
// all spell paths with pathElem.format. The invariant:
//
//	A contributor's path (from a snapshot's provenance) is the path
//	Explain gives the same tool with the layers under a join left out:
//	its elements appear, in order, in Explain's.
//
// It also holds entryError, which names the child or entry of a turn that
// failed in the error chain.

// contributor names where the tool at position i of s came from, as a
// path, following joins and renamings down to the innermost join it came
// through: `Combined#0/Prefixed#1 "db"/Combined/Function#2 "web"`. root,
// if not "", is the first element: the toolset s is the view of, when s
// is not its join. A join that the element before it does not name
// itself (a Combined under a Prefixed, a Filtered, a Wrapper) is named
// "Combined", so that each position is one among the children of the
// Combined named just before it; the layers between a join and the child
// it was reached from are left out (Explain names every layer).
func (s *snapshot) contributor(i int32, root string) string {
	var parts []string
	named := true // the join s is, if it is one, is named already
	if root != "" {
		parts = append(parts, root)
		named = false
	}
	for s != nil {
		if s.segs == nil {
			if s.pick != nil {
				i = s.pick[i]
			}
			s, named = s.from, false
			continue
		}
		k := sort.Search(len(s.segs), func(k int) bool { return s.segs[k].end > i })
		for k < len(s.segs) && s.segs[k].start == s.segs[k].end {
			k++ // skip empty segments of replaced standalone tools
		}
		if k == len(s.segs) {
			break
		}
		if !named {
			parts = append(parts, kinds[kCombined].name)
		}
		seg := s.segs[k]
		parts = append(parts, seg.elem.format(seg.pos))
		i -= seg.start
		s, named = seg.sub, seg.elem.join
	}
	return strings.Join(parts, pathSep)
}

// pathSep separates the elements of a path.
const pathSep = "/"

// pathElem is what a path says of one toolset, but for its position: its
// type's name and what tells it apart (a label, a prefix, a tool's name),
// from the row of its type (see toolsetKind.what).
type pathElem struct {
	typ, what string
	join      bool // a Combined, whose join's elements follow it
}

// elemOf returns what a path says of ts, whose label is label.
func elemOf(ts Toolset, label string) pathElem {
	k := kindOf(ts)
	if k.what == nil {
		// A toolset of the caller's is told apart by a label of its own.
		typ := typeName(ts)
		if label == typ {
			label = ""
		}
		return pathElem{typ: typ, what: label}
	}
	if k.ptr && k.isNil(ts) {
		return pathElem{typ: k.name} // a nil pointer has nothing to tell it apart
	}
	return pathElem{typ: k.name, what: k.what(ts), join: k == &kinds[kCombined]}
}

// element names ts in a path, at position idx among its parent's children
// (none when idx < 0). A Label that panics is an error.
func element(ts Toolset, idx int) (string, error) {
	label := ""
	if kindOf(ts).what == nil {
		var err error
		if label, err = labelOf(ts); err != nil {
			return "", err
		}
	}
	return elemOf(ts, label).format(idx), nil
}

// format is the one spelling of a path's element: its type, "#" and its
// position idx when it has one (idx >= 0), and what tells it apart in
// quotes: `Prefixed#1 "db"`.
func (e pathElem) format(idx int) string {
	var b strings.Builder
	b.WriteString(e.typ)
	if idx >= 0 {
		b.WriteByte('#')
		b.WriteString(strconv.Itoa(idx))
	}
	if e.what != "" {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(bound(e.what, maxShownName)))
	}
	return b.String()
}

// joinPath appends the element el to path.
func joinPath(path, el string) string {
	if path == "" {
		return el
	}
	return path + pathSep + el
}

// entryError names the toolset that failed, as a path's element:
// `Function#1 "web": ...` among the children of a Combined or the entries
// of BuildTools, so that the failure of a nested toolset reads as its
// path, `Combined#0/Function#1 "web": down`. It says each thing once: the
// message it wraps loses this package's prefix (the outermost error says
// it) and a leading label already given. The error of a toolset labelled
// "pkg:name" that names itself as `pkg: toolset "name": ...` loses that
// lead too: `Toolset#1 "pkg:name": ...`.
type entryError struct {
	index int
	label string
	elem  pathElem
	err   error
}

func (e *entryError) Error() string {
	head := e.elem.format(e.index)
	inner := e.err
	if c, ok := inner.(combinedErrors); ok {
		inner = c.err
	}
	if j, ok := inner.(*joinedErrors); ok {
		lines := make([]string, len(j.errs))
		for i, err := range j.errs {
			lines[i] = e.under(head, err)
		}
		return strings.Join(lines, "\n")
	}
	if childFailure(inner) {
		return e.under(head, inner)
	}
	text := strings.TrimPrefix(errorText(e.err), "toolset: ")
	if pkg, name, ok := strings.Cut(e.label, ":"); ok && pkg != "" && name != "" {
		if rest, ok := strings.CutPrefix(text, pkg+": toolset "+strconv.Quote(name)+": "); ok {
			return head + ": " + indented(rest)
		}
	}
	return head + ": " + indented(strings.TrimPrefix(text, e.label+": "))
}

// under names err, one of the failures of the toolset e names (head),
// on its path when it is a child's: each of the child's failures, one a
// line, goes under head.
func (e *entryError) under(head string, err error) string {
	text := strings.TrimPrefix(errorText(err), "toolset: ")
	if !childFailure(err) {
		return head + ": " + indented(text)
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, continuation) {
			lines[i] = head + pathSep + l
		}
	}
	return strings.Join(lines, "\n")
}

// continuation begins every line of a failure's message but its first
// (unless it begins with white space already), so that a line that begins
// with a path is always a failure of its own:
// a toolset's error (a remote server's text, say) cannot add one that
// reads as the failure of another toolset.
const continuation = "  "

// indented returns a failure's message with its later lines indented by
// continuation, those that are not indented already (a message's own
// list of problems keeps its layout: no path begins with a space).
func indented(msg string) string {
	if !strings.ContainsAny(msg, "\r\n") {
		return msg
	}
	msg = strings.ReplaceAll(msg, "\r\n", "\n")
	msg = strings.ReplaceAll(msg, "\r", "\n")
	lines := strings.Split(msg, "\n")
	for i := 1; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], " ") && !strings.HasPrefix(lines[i], "\t") {
			lines[i] = continuation + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// badEntry is the error of a toolset at position i that cannot take its
// place: it is nil (what says how), or its Label failed (err). It is named
// by its type and position alone, since it cannot describe itself.
func badEntry(ts Toolset, i int, what string, err error) *entryError {
	typ := "Toolset"
	if ts != nil {
		typ = typeName(ts)
	}
	if err == nil {
		err = errors.New(what)
	} else {
		err = unprefixed{err}
	}
	return &entryError{index: i, label: typ, elem: pathElem{typ: typ}, err: err}
}

// childFailure reports whether err is the failure of a child toolset, an
// *entryError as it is or only stripped of its prefix, whose text goes on
// the path. It looks at this package's own wrappers only: a user's error's
// Unwrap is not called here, where it could panic.
func childFailure(err error) bool {
	if u, ok := err.(unprefixed); ok {
		err = u.err
	}
	_, ok := err.(*entryError)
	return ok
}

// unprefixed is an error of this package, or one made by user code that
// may be, wrapped under a message of this package: its message loses the
// "toolset: " that the wrapping message already begins with. errors.Is
// and errors.As see the error unchanged.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(errorText(u.err), "toolset: ") }

func (u unprefixed) Unwrap() error { return u.err }

func (e *entryError) Unwrap() error { return e.err }
