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
package canonjson

import (
	"bytes"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is the deepest nesting of arrays and objects accepted, as in
// encoding/json.
const maxDepth = 10000

// sortOnStack is the number of object members sorted without allocating.
const sortOnStack = 16

// SyntaxError reports malformed JSON input.
type SyntaxError struct {
	Offset int // the byte offset in the input where the problem was found
	msg    string
}

// Error implements the error interface.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("canonjson: %s at byte offset %d", e.msg, e.Offset)
}

func syntaxError(offset int, format string, args ...any) error {
	return &SyntaxError{Offset: offset, msg: fmt.Sprintf(format, args...)}
}

// Append appends the canonical form of the JSON value in src to dst. The
// value may be surrounded by whitespace. If src is not a single valid JSON
// value, Append returns dst unchanged and a *SyntaxError.
func Append(dst, src []byte) ([]byte, error) {
	n := len(dst)
	i := skipSpace(src, 0)
	dst, i, err := appendValue(dst, src, i, 0)
	if err == nil {
		if i = skipSpace(src, i); i < len(src) {
			err = syntaxError(i, "invalid character %q after top-level value", src[i])
		}
	}
	if err != nil {
		return dst[:n], err
	}
	return dst, nil
}

func skipSpace(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func unexpectedEnd(src []byte) error {
	return syntaxError(len(src), "unexpected end of JSON input")
}

// appendValue appends the canonical form of the value starting at src[i]
// and returns the offset just past the value.
func appendValue(dst, src []byte, i, depth int) ([]byte, int, error) {
	if i >= len(src) {
		return dst, i, unexpectedEnd(src)
	}
	switch c := src[i]; c {
	case '{':
		return appendObject(dst, src, i, depth)
	case '[':
		return appendArray(dst, src, i, depth)
	case '"':
		end, flags, err := scanString(src, i)
		if err != nil {
			return dst, i, err
		}
		return appendString(dst, src[i+1:end-1], flags), end, nil
	case 't':
		return appendLiteral(dst, src, i, "true")
	case 'f':
		return appendLiteral(dst, src, i, "false")
	case 'n':
		return appendLiteral(dst, src, i, "null")
	default:
		if c != '-' && (c < '0' || c > '9') {
			return dst, i, syntaxError(i, "invalid character %q looking for beginning of value", c)
		}
		end, err := scanNumber(src, i)
		if err != nil {
			return dst, i, err
		}
		return appendNumber(dst, src[i:end]), end, nil
	}
}

func appendLiteral(dst, src []byte, i int, lit string) ([]byte, int, error) {
	end := i + len(lit)
	if end > len(src) || string(src[i:end]) != lit {
		return dst, i, syntaxError(i, "invalid literal, expected %s", lit)
	}
	return append(dst, lit...), end, nil
}

func appendArray(dst, src []byte, i, depth int) ([]byte, int, error) {
	if depth >= maxDepth {
		return dst, i, syntaxError(i, "exceeded max depth")
	}
	dst = append(dst, '[')
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == ']' {
		return append(dst, ']'), i + 1, nil
	}
	for {
		var err error
		if dst, i, err = appendValue(dst, src, i, depth+1); err != nil {
			return dst, i, err
		}
		i = skipSpace(src, i)
		if i >= len(src) {
			return dst, i, unexpectedEnd(src)
		}
		switch src[i] {
		case ',':
			dst = append(dst, ',')
			i = skipSpace(src, i+1)
		case ']':
			return append(dst, ']'), i + 1, nil
		default:
			return dst, i, syntaxError(i, "invalid character %q after array element", src[i])
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

func appendObject(dst, src []byte, i, depth int) ([]byte, int, error) {
	if depth >= maxDepth {
		return dst, i, syntaxError(i, "exceeded max depth")
	}
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		return append(dst, "{}"...), i + 1, nil
	}
	var stack [sortOnStack]member
	members := stack[:0]
	start := len(dst)
	ordered := true // as written by encoders that sort keys
	for {
		if i >= len(src) {
			return dst, i, unexpectedEnd(src)
		}
		if src[i] != '"' {
			return dst, i, syntaxError(i, "invalid character %q looking for beginning of object key string", src[i])
		}
		end, flags, err := scanString(src, i)
		if err != nil {
			return dst, i, err
		}
		m := member{keyStart: i + 1, keyEnd: end - 1, plain: isPlain(src[i+1:end-1], flags), start: len(dst)}
		i = skipSpace(src, end)
		if i >= len(src) {
			return dst, i, unexpectedEnd(src)
		}
		if src[i] != ':' {
			return dst, i, syntaxError(i, "invalid character %q after object key", src[i])
		}
		// Each member is written with a leading comma; the first one
		// becomes the opening brace once the members are in order.
		dst = append(dst, ',')
		dst = appendString(dst, src[m.keyStart:m.keyEnd], flags)
		dst = append(dst, ':')
		if dst, i, err = appendValue(dst, src, skipSpace(src, i+1), depth+1); err != nil {
			return dst, i, err
		}
		m.end = len(dst)
		if ordered && len(members) > 0 {
			ordered = before(src, &members[len(members)-1], &m)
		}
		members = append(members, m)
		i = skipSpace(src, i)
		if i >= len(src) {
			return dst, i, unexpectedEnd(src)
		}
		if src[i] == '}' {
			i++
			break
		}
		if src[i] != ',' {
			return dst, i, syntaxError(i, "invalid character %q after object key:value pair", src[i])
		}
		i = skipSpace(src, i+1)
	}
	if !ordered {
		dst = arrange(dst, src, start, members)
	}
	dst[start] = '{'
	return append(dst, '}'), i, nil
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
	ra, rb := runeReader{s: ka}, runeReader{s: kb}
	for {
		x, okx := ra.next()
		y, oky := rb.next()
		switch {
		case !okx && !oky:
			return 0
		case !okx:
			return -1
		case !oky:
			return 1
		case x != y:
			if x < y {
				return -1
			}
			return 1
		}
	}
}

// Flags reported by scanString.
const (
	strEscape uint8 = 1 << iota // has a backslash escape
	strHigh                     // has a byte >= 0x80
)

// scanString checks the string whose opening quote is src[i] and returns
// the offset just past its closing quote.
func scanString(src []byte, i int) (end int, flags uint8, err error) {
	for j := i + 1; j < len(src); {
		c := src[j]
		switch {
		case c == '"':
			return j + 1, flags, nil
		case c == '\\':
			flags |= strEscape
			if j+1 >= len(src) {
				return 0, 0, unexpectedEnd(src)
			}
			switch src[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				for k := j + 2; k < j+6; k++ {
					if k >= len(src) {
						return 0, 0, unexpectedEnd(src)
					}
					if hexValue(src[k]) < 0 {
						return 0, 0, syntaxError(k, "invalid character %q in \\u hexadecimal character escape", src[k])
					}
				}
				j += 6
			default:
				return 0, 0, syntaxError(j+1, "invalid character %q in string escape code", src[j+1])
			}
		case c < 0x20:
			return 0, 0, syntaxError(j, "invalid control character %q in string literal", c)
		default:
			if c >= utf8.RuneSelf {
				flags |= strHigh
			}
			j++
		}
	}
	return 0, 0, unexpectedEnd(src)
}

// isPlain reports whether the raw content of a string is its decoded form.
func isPlain(s []byte, flags uint8) bool {
	return flags&strEscape == 0 && (flags&strHigh == 0 || utf8.Valid(s))
}

func hexValue(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	default:
		return -1
	}
}

// runeReader decodes the raw content of a checked JSON string as
// encoding/json does.
type runeReader struct {
	s []byte
	i int
}

func (r *runeReader) next() (rune, bool) {
	if r.i >= len(r.s) {
		return 0, false
	}
	c := r.s[r.i]
	if c >= utf8.RuneSelf {
		x, size := utf8.DecodeRune(r.s[r.i:]) // RuneError for invalid bytes
		r.i += size
		return x, true
	}
	if c != '\\' {
		r.i++
		return rune(c), true
	}
	e := r.s[r.i+1]
	r.i += 2
	switch e {
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'u':
	default: // '"', '\\', '/'
		return rune(e), true
	}
	x := hex4(r.s[r.i:])
	r.i += 4
	if !utf16.IsSurrogate(x) {
		return x, true
	}
	if r.i+6 <= len(r.s) && r.s[r.i] == '\\' && r.s[r.i+1] == 'u' {
		if y := utf16.DecodeRune(x, hex4(r.s[r.i+2:])); y != utf8.RuneError {
			r.i += 6
			return y, true
		}
	}
	return utf8.RuneError, true
}

// hex4 decodes four checked hexadecimal digits.
func hex4(s []byte) rune {
	return hexValue(s[0])<<12 | hexValue(s[1])<<8 | hexValue(s[2])<<4 | hexValue(s[3])
}

// appendString appends the canonical form of a string given its raw
// content and the flags from scanString.
func appendString(dst, s []byte, flags uint8) []byte {
	dst = append(dst, '"')
	if isPlain(s, flags) {
		// No escapes, so no quote, backslash or control character.
		dst = append(dst, s...)
		return append(dst, '"')
	}
	r := runeReader{s: s}
	for {
		x, ok := r.next()
		if !ok {
			break
		}
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

// scanNumber checks the number starting at src[i] and returns the offset
// just past it.
func scanNumber(src []byte, i int) (int, error) {
	if src[i] == '-' {
		i++
	}
	digits := func() {
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
	}
	needDigit := func(what string) error {
		if i >= len(src) {
			return unexpectedEnd(src)
		}
		if src[i] < '0' || src[i] > '9' {
			return syntaxError(i, "invalid character %q in %s", src[i], what)
		}
		return nil
	}
	if err := needDigit("numeric literal"); err != nil {
		return 0, err
	}
	if src[i] == '0' {
		i++
	} else {
		digits()
	}
	if i < len(src) && src[i] == '.' {
		i++
		if err := needDigit("fraction"); err != nil {
			return 0, err
		}
		digits()
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if err := needDigit("exponent"); err != nil {
			return 0, err
		}
		digits()
	}
	return i, nil
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
