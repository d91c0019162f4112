// Package jsontext reads JSON text: a bounded lexer that turns a document
// into tokens, and an ordered value model built on it.
//
// The lexer accepts exactly the JSON that encoding/json accepts (RFC 8259;
// strings may hold any byte from 0x20 up except an unescaped quote or
// backslash, and invalid UTF-8 is tolerated there, to be decoded as
// U+FFFD). It enforces the caller's [Limits] on nesting depth, input size
// and token count, and reports every problem as a *[SyntaxError] or a
// *[LimitError] with the byte offset where it was found. It imposes no
// policy on duplicate object keys: it hands every member to the caller,
// and [Parser] reports duplicates to its Duplicate function.
//
// The lexer does not allocate on the common path: a [Lexer] is a value the
// caller keeps on its stack, and tokens are offsets into the input. Strings
// are decoded only when a caller asks ([Plain], [NextRune], [Parser]).
//
// A value, as [Parser] builds it and [Append] writes it, is one of nil,
// bool, json.Number (the number's literal text), string, []any and
// *[Object] (members in document order).
package jsontext

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"unicode/utf8"
)

// Kind is the kind of a token.
type Kind uint8

// The kinds of token. End follows the top-level value and its trailing
// white space.
const (
	End Kind = iota
	ObjectStart
	ObjectEnd
	ArrayStart
	ArrayEnd
	String
	Number
	True
	False
	Null
)

var kindNames = [...]string{"end of input", "'{'", "'}'", "'['", "']'", "string", "number", "true", "false", "null"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Flags describe the text of a String or Number token.
type Flags uint8

// The flags of a token.
const (
	Escaped  Flags = 1 << iota // a string with a backslash escape
	NonASCII                   // a string with a byte of 0x80 or above
	Fraction                   // a number with a fraction
	Exponent                   // a number with an exponent
)

// Token is one token of a JSON document: its kind and where its text is in
// the input, data[Start:End]. The text of a string includes its quotes.
type Token struct {
	Kind       Kind
	Flags      Flags
	Start, End int
}

// Limits bound the work a [Lexer] does. A zero field takes its default:
// a depth of [DefaultMaxDepth], no bound on size or tokens.
type Limits struct {
	MaxDepth  int // the deepest nesting of arrays and objects
	MaxBytes  int // the longest input, in bytes
	MaxTokens int // the most tokens, End not counted
}

// DefaultMaxDepth is the nesting depth accepted when [Limits] gives none,
// the one encoding/json accepts.
const DefaultMaxDepth = 10000

// SyntaxError reports input that is not JSON.
type SyntaxError struct {
	Offset int // the byte offset in the input where the problem was found
	msg    string
}

// Error implements the error interface.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at byte offset %d", e.msg, e.Offset)
}

// LimitError reports input that goes beyond one of the caller's [Limits].
type LimitError struct {
	Offset int    // the byte offset in the input where the limit was reached
	Limit  string // "depth", "size" or "tokens"
	Max    int    // the limit
}

// Error implements the error interface.
func (e *LimitError) Error() string {
	switch e.Limit {
	case "depth":
		return fmt.Sprintf("nested deeper than %d levels at byte offset %d", e.Max, e.Offset)
	case "size":
		return fmt.Sprintf("longer than %d bytes", e.Max)
	}
	return fmt.Sprintf("more than %d tokens at byte offset %d", e.Max, e.Offset)
}

func syntaxError(offset int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Offset: offset, msg: fmt.Sprintf(format, args...)}
}

func unexpectedEnd(d []byte) *SyntaxError {
	return &SyntaxError{Offset: len(d), msg: "unexpected end of JSON input"}
}

// The lexer's states: what the next token may be. The states from
// stAfterElem on follow a complete value.
const (
	stValue     uint8 = iota // a value: at the top, after ':' or after ',' in an array
	stElemFirst              // a value or ']', after '['
	stKeyFirst               // a key or '}', after '{'
	stKey                    // a key, after ',' in an object
	stAfterElem              // ',' or ']', after an element
	stAfterMemb              // ',' or '}', after a member's value
	stDone                   // the end, after the top-level value
	stFailed                 // an error was reported
)

// Lexer reads the tokens of one JSON document; make one with [NewLexer]. A
// Lexer may be copied to save its
// position and copied back to return to it.
type Lexer struct {
	data     []byte
	pos      int
	state    uint8
	after    uint8 // the state after a value at the current depth
	depth    int
	stack    uint64 // bit d: level d+1 is an object, for d < 64
	budget   int    // the tokens left
	maxDepth int
	maxToks  int
	deep     []uint64 // the same as stack for levels beyond 64
	err      error
}

// NewLexer returns a lexer for data within lim.
func NewLexer(data []byte, lim Limits) Lexer {
	l := Lexer{data: data, after: stDone, maxDepth: lim.MaxDepth, budget: lim.MaxTokens, maxToks: lim.MaxTokens}
	if l.maxDepth <= 0 {
		l.maxDepth = DefaultMaxDepth
	}
	if l.budget <= 0 {
		l.budget = math.MaxInt
	}
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
		l.fail(&LimitError{Offset: lim.MaxBytes, Limit: "size", Max: lim.MaxBytes})
	}
	return l
}

// Depth returns the number of arrays and objects open.
func (l *Lexer) Depth() int { return l.depth }

func (l *Lexer) fail(err error) (Token, error) {
	l.state, l.err = stFailed, err
	return Token{}, err
}

// Next returns the next token. After the top-level value it returns End,
// or a *SyntaxError for anything but white space. An error is final: Next
// returns it again.
//
// Next is the hot loop of every reader in the module, so the common
// tokens (plain strings, small integers, compact punctuation) are read
// inline.
func (l *Lexer) Next() (Token, error) {
	d := l.data
	i := l.pos
	if i < len(d) && d[i] <= ' ' {
		i = skipSpace(d, i)
	}
	st := l.state
	if st >= stAfterElem {
		if i >= len(d) {
			if st == stDone {
				l.pos = i
				return Token{Kind: End, Start: i, End: i}, nil
			}
			if st == stFailed {
				return Token{}, l.err
			}
			return l.badChar(len(d), "")
		}
		c := d[i]
		switch {
		case st == stAfterMemb && c == ',':
			st = stKey
		case st == stAfterElem && c == ',':
			st = stValue
		case st == stAfterMemb && c == '}':
			return l.pop(i, ObjectEnd)
		case st == stAfterElem && c == ']':
			return l.pop(i, ArrayEnd)
		default:
			return l.afterValueError(i)
		}
		i++
		if i < len(d) && d[i] <= ' ' {
			i = skipSpace(d, i)
		}
	}
	if i >= len(d) {
		return l.badChar(len(d), "")
	}
	c := d[i]
	switch st {
	case stKeyFirst:
		if c == '}' {
			return l.pop(i, ObjectEnd)
		}
		fallthrough
	case stKey:
		// An object key, and the colon after it.
		if c != '"' {
			return l.badChar(i, "looking for beginning of object key string")
		}
		t := Token{Kind: String, Start: i}
		j := plainRun(d, i+1)
		if j < len(d) && d[j] == '"' {
			t.End = j + 1
		} else {
			var err *SyntaxError
			if t.End, t.Flags, err = scanString(d, i); err != nil {
				return l.fail(err)
			}
		}
		j = t.End
		if j < len(d) && d[j] <= ' ' {
			j = skipSpace(d, j)
		}
		if j >= len(d) {
			return l.badChar(len(d), "")
		}
		if d[j] != ':' {
			return l.badChar(j, "after object key")
		}
		if l.budget--; l.budget < 0 {
			return l.tooMany(i)
		}
		l.pos = j + 1
		l.state = stValue
		return t, nil
	case stElemFirst:
		if c == ']' {
			return l.pop(i, ArrayEnd)
		}
	}
	t := Token{Start: i}
	switch c {
	case '"':
		t.Kind = String
		j := plainRun(d, i+1)
		if j < len(d) && d[j] == '"' {
			t.End = j + 1
			break
		}
		var err *SyntaxError
		if t.End, t.Flags, err = scanString(d, i); err != nil {
			return l.fail(err)
		}
	case '{':
		return l.push(i, ObjectStart)
	case '[':
		return l.push(i, ArrayStart)
	case 't', 'f', 'n':
		return l.literal(i)
	default:
		t.Kind = Number
		j := i
		for j < len(d) && isDigit(d[j]) {
			j++
		}
		if c != '0' && j > i && (j == len(d) || d[j] != '.' && d[j]|0x20 != 'e') {
			t.End = j
			break
		}
		if c != '-' && !isDigit(c) {
			return l.badChar(i, "looking for beginning of value")
		}
		var err *SyntaxError
		if t.End, t.Flags, err = scanNumber(d, i); err != nil {
			return l.fail(err)
		}
	}
	l.budget--
	if l.budget < 0 {
		return l.tooMany(i)
	}
	l.pos = t.End
	l.state = l.after
	return t, nil
}

func (l *Lexer) afterValueError(i int) (Token, error) {
	switch l.state {
	case stAfterMemb:
		return l.badChar(i, "after object key:value pair")
	case stAfterElem:
		return l.badChar(i, "after array element")
	case stFailed:
		return Token{}, l.err
	}
	return l.badChar(i, "after top-level value")
}

// badChar fails on the byte at d[i], found where the grammar allows none
// such: after the named context, or, at the end of the input, on the end.
//
//go:noinline
func (l *Lexer) badChar(i int, context string) (Token, error) {
	if i >= len(l.data) {
		return l.fail(unexpectedEnd(l.data))
	}
	return l.fail(syntaxError(i, "invalid character %q %s", l.data[i], context))
}

//go:noinline
func (l *Lexer) tooMany(i int) (Token, error) {
	l.budget = 0
	return l.fail(&LimitError{Offset: i, Limit: "tokens", Max: l.maxToks})
}

func (l *Lexer) inObject() bool {
	d := l.depth - 1
	if d < 64 {
		return l.stack>>d&1 != 0
	}
	return l.deep[d/64-1]>>(d%64)&1 != 0
}

// push opens an array or object at d[i].
func (l *Lexer) push(i int, k Kind) (Token, error) {
	if l.depth >= l.maxDepth {
		return l.fail(&LimitError{Offset: i, Limit: "depth", Max: l.maxDepth})
	}
	if l.budget--; l.budget < 0 {
		return l.tooMany(i)
	}
	d := l.depth
	obj := k == ObjectStart
	if d < 64 {
		l.stack = l.stack&^(1<<d) | b2u(obj)<<d
	} else {
		w := d/64 - 1
		if w == len(l.deep) {
			l.deep = append(l.deep, 0)
		}
		l.deep[w] = l.deep[w]&^(1<<(d%64)) | b2u(obj)<<(d%64)
	}
	l.depth++
	l.pos = i + 1
	if obj {
		l.state, l.after = stKeyFirst, stAfterMemb
	} else {
		l.state, l.after = stElemFirst, stAfterElem
	}
	return Token{Kind: k, Start: i, End: i + 1}, nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// pop closes the array or object at d[i].
func (l *Lexer) pop(i int, k Kind) (Token, error) {
	if l.budget--; l.budget < 0 {
		return l.tooMany(i)
	}
	l.depth--
	switch {
	case l.depth == 0:
		l.after = stDone
	case l.inObject():
		l.after = stAfterMemb
	default:
		l.after = stAfterElem
	}
	l.pos = i + 1
	l.state = l.after
	return Token{Kind: k, Start: i, End: i + 1}, nil
}

// literal reads true, false or null at d[i].
func (l *Lexer) literal(i int) (Token, error) {
	t := Token{Start: i}
	lit := "null"
	switch l.data[i] {
	case 't':
		t.Kind, lit = True, "true"
	case 'f':
		t.Kind, lit = False, "false"
	default:
		t.Kind = Null
	}
	end, err := scanLiteral(l.data, i, lit)
	if err != nil {
		return l.fail(err)
	}
	if l.budget--; l.budget < 0 {
		return l.tooMany(i)
	}
	t.End = end
	l.pos = end
	l.state = l.after
	return t, nil
}

func skipSpace(d []byte, i int) int {
	for i < len(d) {
		switch d[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func scanLiteral(d []byte, i int, lit string) (int, *SyntaxError) {
	end := i + len(lit)
	if end > len(d) || string(d[i:end]) != lit {
		return 0, syntaxError(i, "invalid literal, expected %s", lit)
	}
	return end, nil
}

// Byte classes inside a string.
const (
	clPlain = iota
	clQuote
	clEscape
	clControl
	clHigh
)

var strClass = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = clControl
	}
	t['"'] = clQuote
	t['\\'] = clEscape
	for c := 0x80; c < 0x100; c++ {
		t[c] = clHigh
	}
	return t
}()

// plainRun returns the offset of the first byte from d[j] on that is not
// plain string content: a quote, a backslash, a control character or a
// byte beyond ASCII; or len(d). It looks at eight bytes at a time.
func plainRun(d []byte, j int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for ; j+8 <= len(d); j += 8 {
		w := binary.LittleEndian.Uint64(d[j:])
		// A byte's high bit is set in special when the byte is below
		// 0x20, a quote, a backslash or at least 0x80. A borrow can set
		// bits above such a byte, never below it.
		special := ((w - lo*0x20) | ((w ^ lo*'"') - lo) | ((w ^ lo*'\\') - lo) | w) & hi
		if special != 0 {
			return j + bits.TrailingZeros64(special)/8
		}
	}
	for j < len(d) && strClass[d[j]] == clPlain {
		j++
	}
	return j
}

// scanString checks the string whose opening quote is d[i] and returns the
// offset just past its closing quote, and whether it has escapes or bytes
// beyond ASCII.
func scanString(d []byte, i int) (end int, flags Flags, err *SyntaxError) {
	for j := i + 1; j < len(d); {
		switch strClass[d[j]] {
		case clPlain:
			j++
		case clQuote:
			return j + 1, flags, nil
		case clHigh:
			flags |= NonASCII
			j++
		case clEscape:
			flags |= Escaped
			if j+1 >= len(d) {
				return 0, 0, unexpectedEnd(d)
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				for k := j + 2; k < j+6; k++ {
					if k >= len(d) {
						return 0, 0, unexpectedEnd(d)
					}
					if hexValue(d[k]) < 0 {
						return 0, 0, syntaxError(k, "invalid character %q in \\u hexadecimal character escape", d[k])
					}
				}
				j += 6
			default:
				return 0, 0, syntaxError(j+1, "invalid character %q in string escape code", d[j+1])
			}
		default:
			return 0, 0, syntaxError(j, "invalid control character %q in string literal", d[j])
		}
	}
	return 0, 0, unexpectedEnd(d)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber checks the number starting at d[i] and returns the offset just
// past it, and whether it has a fraction or an exponent.
func scanNumber(d []byte, i int) (end int, flags Flags, err *SyntaxError) {
	if i < len(d) && d[i] == '-' {
		i++
	}
	if i >= len(d) || !isDigit(d[i]) {
		return 0, 0, needDigit(d, i, "numeric literal")
	}
	if d[i] == '0' {
		i++
	} else {
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && d[i] == '.' {
		flags |= Fraction
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return 0, 0, needDigit(d, i, "fraction")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		flags |= Exponent
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return 0, 0, needDigit(d, i, "exponent")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	return i, flags, nil
}

// needDigit reports the missing digit at d[i] of a number.
func needDigit(d []byte, i int, what string) *SyntaxError {
	if i >= len(d) {
		return unexpectedEnd(d)
	}
	return syntaxError(i, "invalid character %q in %s", d[i], what)
}

func hexValue(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// Plain reports whether the raw content of a string token (between its
// quotes; flags from its token) is its decoded form: no escapes and valid
// UTF-8.
func Plain(raw []byte, flags Flags) bool {
	return flags&Escaped == 0 && (flags&NonASCII == 0 || utf8.Valid(raw))
}
