// Package textcut cuts text to a byte budget without splitting a
// character, for the many places that bound what a tool, a server or a
// package said before showing it. It is the one text cutter of the
// repository: every module bounds text through it.
//
// Three cuts cover every use: [Prefix] keeps the start, [Suffix] the end
// (the tail of a log, where the last lines say what went wrong), and
// [Clip] keeps the start and marks the cut with [Ellipsis], for a value
// quoted in a message. A place that also says how much it cut ("[120
// bytes cut]") writes its note after [Prefix] or before [Suffix].
//
// Modules of this repository other than the core import this package
// (mcptoolset, toolpkg, platform, mesh, redistoolset, oteltoolset/otelmcp).
// Each is built against a released version of the core module, so the
// exported API of this package is frozen within a major version: it changes
// only by additions. See README "Modules".
package textcut

import "unicode/utf8"

// Ellipsis is the mark [Clip] puts where it cut.
const Ellipsis = "…"

// Prefix returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence: s itself when it fits, "" when n <= 0.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Suffix returns the longest suffix of s of at most n bytes that does not
// begin inside a UTF-8 sequence: s itself when it fits, "" when n <= 0.
func Suffix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	i := len(s) - n
	for stop := min(len(s), i+utf8.UTFMax); i < stop && !utf8.RuneStart(s[i]); i++ {
	}
	return s[i:]
}

// Clip returns s when it is at most n bytes long, and otherwise its
// [Prefix] of n bytes followed by [Ellipsis]: at most n+3 bytes, marked
// so that a reader knows the text goes on.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + Ellipsis
}

// HeadTail returns s when it is at most limit bytes long. Otherwise it
// keeps the [Prefix] of head bytes and the [Suffix] of tail bytes of s
// (tail may be 0) with the text mark returns between them, given how
// many bytes of s are kept and how many left out, and reports the cut.
// It is the one cut of a result that is too long for the model: the
// core's result budgets and packaged tools' outputs both make theirs
// with it.
func HeadTail(s string, limit, head, tail int, mark func(kept, left int) string) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	h := Prefix(s, head)
	t := Suffix(s[len(h):], tail)
	kept := len(h) + len(t)
	return h + mark(kept, len(s)-kept) + t, true
}
