package argcheck

// The scanners below accept exactly the JSON that encoding/json accepts
// (RFC 8259; strings may hold any byte from 0x20 up except an unescaped
// quote or backslash, and invalid UTF-8 is tolerated there).

// Flags reported by scanString.
const (
	strEscape uint8 = 1 << iota // has a backslash escape
	strHigh                     // has a byte >= 0x80
)

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

// scanString scans the string whose opening quote is d[i] and returns the
// offset just past its closing quote.
func scanString(d []byte, i int) (end int, flags uint8, ok bool) {
	i++
	for i < len(d) {
		switch strClass[d[i]] {
		case clPlain:
			i++
		case clQuote:
			return i + 1, flags, true
		case clHigh:
			flags |= strHigh
			i++
		case clEscape:
			flags |= strEscape
			if i+1 >= len(d) {
				return 0, 0, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) {
					return 0, 0, false
				}
				for _, c := range d[i+2 : i+6] {
					if !isHex(c) {
						return 0, 0, false
					}
				}
				i += 6
			default:
				return 0, 0, false
			}
		default: // unescaped control character
			return 0, 0, false
		}
	}
	return 0, 0, false
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber scans the number starting at d[i]. plain reports a token
// without fraction or exponent. It fails on a number that may be of
// magnitude beyond 1e±400 (see maxProvenNumLen).
func scanNumber(d []byte, i int) (end int, plain, ok bool) {
	start := i
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i >= len(d):
		return 0, false, false
	case d[i] == '0':
		i++
	case '1' <= d[i] && d[i] <= '9':
		i++
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return 0, false, false
	}
	plain = true
	if i < len(d) && d[i] == '.' {
		plain = false
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return 0, false, false
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		plain = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return 0, false, false
		}
		exp := 0
		for i < len(d) && isDigit(d[i]) {
			exp = min(exp*10+int(d[i]-'0'), maxProvenExponent+1)
			i++
		}
		if exp > maxProvenExponent {
			return 0, false, false
		}
	}
	if i-start > maxProvenNumLen {
		return 0, false, false
	}
	return i, plain, true
}

// The caller refuses numbers of magnitude beyond 1e400 (or nonzero below
// 1e-400) before its validator sees them, so no number of such magnitude
// may be proven valid. A token of at most maxProvenNumLen bytes with an
// exponent of at most maxProvenExponent lies well inside; longer tokens
// and larger exponents are left to the caller.
const (
	maxProvenNumLen   = 200
	maxProvenExponent = 199
)

// skipValue checks the syntax of the value starting at d[i] (not
// whitespace) and returns the offset just past it.
func skipValue(d []byte, i, depth int) (int, bool) {
	if i >= len(d) {
		return 0, false
	}
	switch d[i] {
	case '{':
		return skipContainer(d, i, depth, '}', true)
	case '[':
		return skipContainer(d, i, depth, ']', false)
	case '"':
		end, _, ok := scanString(d, i)
		return end, ok
	case 't':
		return skipLiteral(d, i, "true")
	case 'f':
		return skipLiteral(d, i, "false")
	case 'n':
		return skipLiteral(d, i, "null")
	default:
		end, _, ok := scanNumber(d, i)
		return end, ok
	}
}

func skipLiteral(d []byte, i int, lit string) (int, bool) {
	end := i + len(lit)
	if end > len(d) || string(d[i:end]) != lit {
		return 0, false
	}
	return end, true
}

// skipContainer checks the object or array starting at d[i].
func skipContainer(d []byte, i, depth int, closer byte, object bool) (int, bool) {
	if depth >= maxDepth {
		return 0, false
	}
	depth++
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == closer {
		return i + 1, true
	}
	for {
		var ok bool
		if object {
			if i >= len(d) || d[i] != '"' {
				return 0, false
			}
			if i, _, ok = scanString(d, i); !ok {
				return 0, false
			}
			i = skipSpace(d, i)
			if i >= len(d) || d[i] != ':' {
				return 0, false
			}
			i = skipSpace(d, i+1)
		}
		if i, ok = skipValue(d, i, depth); !ok {
			return 0, false
		}
		i = skipSpace(d, i)
		if i >= len(d) {
			return 0, false
		}
		switch d[i] {
		case ',':
			i = skipSpace(d, i+1)
		case closer:
			return i + 1, true
		default:
			return 0, false
		}
	}
}
