// Package canonjson writes JSON values in a canonical form, so that equal
// values give equal bytes, for use as cache keys.
//
// The canonical form of a value has no insignificant whitespace; object
// members are sorted by the bytes of their decoded UTF-8 keys, and of
// members with equal keys only the last is kept (the one encoding/json
// keeps). Strings are decoded as encoding/json decodes them (invalid UTF-8
// and unpaired surrogate escapes become U+FFFD) and written with only '"',
// '\\' and control characters escaped: \b \f \n \r \t where they exist,
// \u00xx (lowercase hexadecimal) otherwise; everything else is literal
// UTF-8. Numbers are rewritten exactly, without conversion to floating
// point, so that two numbers give the same text if and only if they have
// the same value; the format is that of JavaScript's Number.prototype.toString
// applied to the exact decimal value:
//
//	1, 1.0, 1e0, 10e-1 -> 1
//	-0, 0.0e5          -> 0
//	1.50               -> 1.5
//	0.000001           -> 0.000001
//	1e-7               -> 1e-7
//	123e18             -> 123000000000000000000
//	1.5e21             -> 1.5e+21
//
// Modules of this repository other than the core import this package
// (mcptoolset, platform). Each is built against a released version of the
// core module, so the exported API of this package is frozen within a major
// version: it changes only by additions. See README "Modules".
package canonjson

import (
	"bytes"
	"errors"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gotoolset/toolset/internal/jsontext"
)

// maxDepth is the deepest nesting of arrays and objects accepted, as in
// encoding/json.
const maxDepth = 10000

var limits = jsontext.Limits{MaxDepth: maxDepth}

// sortOnStack is the number of object members sorted without allocating.
const sortOnStack = 16

// SyntaxError reports malformed JSON input, or input nested deeper than
// encoding/json accepts.
type SyntaxError struct {
	Offset int // the byte offset in the input where the problem was found
	err    error
}

// Error implements the error interface.
func (e *SyntaxError) Error() string { return "canonjson: " + e.err.Error() }

// Unwrap returns the lexer's error.
func (e *SyntaxError) Unwrap() error { return e.err }

func syntaxError(err error) error {
	var se *jsontext.SyntaxError
	if errors.As(err, &se) {
		return &SyntaxError{Offset: se.Offset, err: err}
	}
	var le *jsontext.LimitError
	errors.As(err, &le)
	return &SyntaxError{Offset: le.Offset, err: err}
}

// Append appends the canonical form of the JSON value in src to dst. The
// value may be surrounded by whitespace. If src is not a single valid JSON
// value, Append returns dst unchanged and a *SyntaxError.
func Append(dst, src []byte) ([]byte, error) {
	n := len(dst)
	l := jsontext.NewLexer(src, limits)
	t, err := l.Next()
	if err == nil {
		dst, err = appendValue(dst, &l, src, t)
	}
	if err == nil {
		_, err = l.Next() // End, or data after the value
	}
	if err != nil {
		return dst[:n], syntaxError(err)
	}
	return dst, nil
}

// appendValue appends the canonical form of the value whose first token,
// t, the lexer has just read, reading the rest of it.
func appendValue(dst []byte, l *jsontext.Lexer, src []byte, t jsontext.Token) ([]byte, error) {
	switch t.Kind {
	case jsontext.ObjectStart:
		return appendObject(dst, l, src)
	case jsontext.ArrayStart:
		return appendArray(dst, l, src)
	case jsontext.String:
		return appendString(dst, src[t.Start+1:t.End-1], t.Flags), nil
	case jsontext.Number:
		return appendNumber(dst, src[t.Start:t.End]), nil
	}
	return append(dst, src[t.Start:t.End]...), nil // true, false, null
}

func appendArray(dst []byte, l *jsontext.Lexer, src []byte) ([]byte, error) {
	dst = append(dst, '[')
	for first := true; ; first = false {
		t, err := l.Next()
		if err != nil {
			return dst, err
		}
		if t.Kind == jsontext.ArrayEnd {
			return append(dst, ']'), nil
		}
		if !first {
			dst = append(dst, ',')
		}
		if dst, err = appendValue(dst, l, src, t); err != nil {
			return dst, err
		}
	}
}

// member is an object member: its raw key in the input and its canonical
// text `,"key":value` in the output.
type member struct {
	keyStart, keyEnd int // the key's raw content in src
	plain            bool
	start, end       int // the member's text in dst
}

// before reports whether a's key sorts strictly before b's.
func before(src []byte, a, b *member) bool {
	if a.plain && b.plain {
		return string(src[a.keyStart:a.keyEnd]) < string(src[b.keyStart:b.keyEnd])
	}
	return compareKeys(src, a, b) < 0
}

func appendObject(dst []byte, l *jsontext.Lexer, src []byte) ([]byte, error) {
	var stack [sortOnStack]member
	members := stack[:0]
	start := len(dst)
	ordered := true // as written by encoders that sort keys
	for {
		t, err := l.Next()
		if err != nil {
			return dst, err
		}
		if t.Kind == jsontext.ObjectEnd {
			break
		}
		key := src[t.Start+1 : t.End-1]
		m := member{keyStart: t.Start + 1, keyEnd: t.End - 1, plain: jsontext.Plain(key, t.Flags), start: len(dst)}
		// Each member is written with a leading comma; the first one
		// becomes the opening brace once the members are in order.
		dst = append(dst, ',')
		dst = appendString(dst, key, t.Flags)
		dst = append(dst, ':')
		if t, err = l.Next(); err != nil {
			return dst, err
		}
		if dst, err = appendValue(dst, l, src, t); err != nil {
			return dst, err
		}
		m.end = len(dst)
		if ordered && len(members) > 0 {
			ordered = before(src, &members[len(members)-1], &m)
		}
		members = append(members, m)
	}
	if len(members) == 0 {
		return append(dst, "{}"...), nil
	}
	if !ordered {
		dst = arrange(dst, src, start, members)
	}
	dst[start] = '{'
	return append(dst, '}'), nil
}

// arrange puts the members written to dst[start:], which are not in
// strict key order, in key order, keeping only the last of members with
// equal keys.
func arrange(dst, src []byte, start int, members []member) []byte {
	cmp := func(a, b int) int { return compareKeys(src, &members[a], &members[b]) }
	var stack [sortOnStack]int
	order := stack[:0]
	for j := range members {
		order = append(order, j)
	}
	if len(order) <= sortOnStack {
		// Insertion sort: stable, and allocation-free.
		for j := 1; j < len(order); j++ {
			for k := j; k > 0 && cmp(order[k-1], order[k]) > 0; k-- {
				order[k-1], order[k] = order[k], order[k-1]
			}
		}
	} else {
		slices.SortStableFunc(order, cmp)
	}
	kept := order[:0]
	for j, m := range order {
		if j+1 < len(order) && cmp(m, order[j+1]) == 0 {
			continue // a later member has the same key
		}
		kept = append(kept, m)
	}
	size := len(dst) - start
	if len(members) > sortOnStack || cap(dst)-len(dst) >= size {
		// Copy the members out (into spare capacity when there is
		// enough) and back in order.
		var text []byte
		if cap(dst)-len(dst) >= size {
			text = dst[len(dst) : len(dst)+size]
			copy(text, dst[start:])
		} else {
			text = bytes.Clone(dst[start:])
		}
		dst = dst[:start]
		for _, j := range kept {
			dst = append(dst, text[members[j].start-start:members[j].end-start]...)
		}
		return dst
	}
	// Move each member into place by rotating the bytes between its
	// place and its current position.
	cursor := start
	for i, j := range kept {
		m := members[j]
		size := m.end - m.start
		if m.start != cursor {
			rotateRight(dst[cursor:m.end], size)
			for _, k := range kept[i+1:] {
				if members[k].start >= cursor && members[k].start < m.start {
					members[k].start += size
					members[k].end += size
				}
			}
		}
		cursor += size
	}
	return dst[:cursor]
}

// rotateRight rotates b right by k bytes.
func rotateRight(b []byte, k int) {
	slices.Reverse(b)
	slices.Reverse(b[:k])
	slices.Reverse(b[k:])
}

// compareKeys compares the decoded keys of two members.
func compareKeys(src []byte, a, b *member) int {
	ka, kb := src[a.keyStart:a.keyEnd], src[b.keyStart:b.keyEnd]
	if a.plain && b.plain {
		return bytes.Compare(ka, kb)
	}
	// Decoded strings are valid UTF-8, whose byte order is code point
	// order.
	i, j := 0, 0
	for i < len(ka) && j < len(kb) {
		var x, y rune
		x, i = jsontext.NextRune(ka, i)
		y, j = jsontext.NextRune(kb, j)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case i < len(ka):
		return 1
	case j < len(kb):
		return -1
	}
	return 0
}

// appendString appends the canonical form of a string given its raw
// content and the flags of its token.
func appendString(dst, s []byte, flags jsontext.Flags) []byte {
	dst = append(dst, '"')
	if jsontext.Plain(s, flags) {
		// No escapes, so no quote, backslash or control character.
		dst = append(dst, s...)
		return append(dst, '"')
	}
	for i := 0; i < len(s); {
		var x rune
		x, i = jsontext.NextRune(s, i)
		switch {
		case x == '"' || x == '\\':
			dst = append(dst, '\\', byte(x))
		case x >= 0x20:
			dst = utf8.AppendRune(dst, x)
		case x == '\b':
			dst = append(dst, `\b`...)
		case x == '\f':
			dst = append(dst, `\f`...)
		case x == '\n':
			dst = append(dst, `\n`...)
		case x == '\r':
			dst = append(dst, `\r`...)
		case x == '\t':
			dst = append(dst, `\t`...)
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[x>>4], hex[x&0xf])
		}
	}
	return append(dst, '"')
}

// plainInteger reports whether tok is an integer already in canonical form:
// digits only, at most 21 of them, and not negative zero.
func plainInteger(tok []byte) bool {
	digits := tok
	if tok[0] == '-' {
		digits = tok[1:]
		if len(digits) == 1 && digits[0] == '0' {
			return false
		}
	}
	if len(digits) > 21 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// mantissa is the digits of a number token before its exponent, the
// decimal point left out.
type mantissa struct {
	intPart, fracPart []byte
}

func (m mantissa) len() int { return len(m.intPart) + len(m.fracPart) }

func (m mantissa) digit(k int) byte {
	if k < len(m.intPart) {
		return m.intPart[k]
	}
	return m.fracPart[k-len(m.intPart)]
}

// appendDigits appends the digits [from, to).
func (m mantissa) appendDigits(dst []byte, from, to int) []byte {
	li := len(m.intPart)
	if from < li {
		dst = append(dst, m.intPart[from:min(to, li)]...)
	}
	if to > li {
		dst = append(dst, m.fracPart[max(from-li, 0):to-li]...)
	}
	return dst
}

// appendNumber appends the canonical form of a checked number token.
func appendNumber(dst, tok []byte) []byte {
	if plainInteger(tok) {
		return append(dst, tok...)
	}
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	var m mantissa
	end := 0
	for end < len(tok) && tok[end] != 'e' && tok[end] != 'E' {
		end++
	}
	m.intPart, m.fracPart, _ = bytes.Cut(tok[:end], []byte{'.'})
	first, last := -1, -1 // the first and last nonzero digits
	for k := range m.len() {
		if m.digit(k) != '0' {
			if first < 0 {
				first = k
			}
			last = k
		}
	}
	if first < 0 {
		return append(dst, '0')
	}
	if neg {
		dst = append(dst, '-')
	}
	// The value is 0.D × 10^p, where D is the digits first..last.
	n := last + 1 - first
	shift := len(m.intPart) - first
	var exp []byte
	expNeg := false
	if end < len(tok) {
		exp = tok[end+1:]
		if exp[0] == '+' || exp[0] == '-' {
			expNeg = exp[0] == '-'
			exp = exp[1:]
		}
		exp = bytes.TrimLeft(exp, "0")
	}
	if len(exp) > 18 {
		return appendHugeExponent(dst, m, first, last, exp, expNeg, shift)
	}
	p := shift
	if len(exp) > 0 {
		e := 0
		for _, c := range exp {
			e = e*10 + int(c-'0')
		}
		if expNeg {
			e = -e
		}
		p += e
	}
	switch {
	case n <= p && p <= 21:
		dst = m.appendDigits(dst, first, last+1)
		for range p - n {
			dst = append(dst, '0')
		}
	case 0 < p && p <= 21:
		dst = m.appendDigits(dst, first, first+p)
		dst = append(dst, '.')
		dst = m.appendDigits(dst, first+p, last+1)
	case -6 < p && p <= 0:
		dst = append(dst, '0', '.')
		for range -p {
			dst = append(dst, '0')
		}
		dst = m.appendDigits(dst, first, last+1)
	default:
		dst = appendScientific(dst, m, first, last)
		e := p - 1
		if e < 0 {
			dst = append(dst, '-')
			e = -e
		} else {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(e), 10)
	}
	return dst
}

// appendScientific appends D[0].D[1:]e (the mantissa of the exponential
// form).
func appendScientific(dst []byte, m mantissa, first, last int) []byte {
	dst = append(dst, m.digit(first))
	if last > first {
		dst = append(dst, '.')
		dst = m.appendDigits(dst, first+1, last+1)
	}
	return append(dst, 'e')
}

// appendHugeExponent finishes a number whose written exponent has more
// than 18 digits, with exact arithmetic.
func appendHugeExponent(dst []byte, m mantissa, first, last int, exp []byte, expNeg bool, shift int) []byte {
	e, _ := new(big.Int).SetString(string(exp), 10)
	if expNeg {
		e.Neg(e)
	}
	e.Add(e, big.NewInt(int64(shift-1)))
	dst = appendScientific(dst, m, first, last)
	if e.Sign() >= 0 {
		dst = append(dst, '+')
	}
	return e.Append(dst, 10)
}
