package canonjson

import "bytes"

// maxCheckDepth is the deepest nesting IsCanonical follows; deeper values
// are not proven canonical.
const maxCheckDepth = 64

// IsCanonical reports whether src is one JSON value already in canonical
// form, so that Append would append it unchanged. It is conservative:
// false means only "not proven", for a value whose canonical form may
// differ (whitespace, unsorted or repeated keys, escapes, characters
// outside printable ASCII, numbers other than plain integers) or that is
// not JSON at all. It reads src once and allocates nothing, which makes
// it far cheaper than Append on the arguments models usually send.
func IsCanonical(src []byte) bool {
	end, ok := canonicalValue(src, 0, 0)
	return ok && end == len(src)
}

// canonicalValue checks the value at src[i:] and returns where it ends.
func canonicalValue(src []byte, i, depth int) (int, bool) {
	if i >= len(src) {
		return i, false
	}
	switch c := src[i]; {
	case c == '{':
		return canonicalObject(src, i+1, depth+1)
	case c == '[':
		return canonicalArray(src, i+1, depth+1)
	case c == '"':
		return canonicalString(src, i)
	case c == '-' || c >= '0' && c <= '9':
		return canonicalInteger(src, i)
	case c == 't':
		return literal(src, i, "true")
	case c == 'f':
		return literal(src, i, "false")
	case c == 'n':
		return literal(src, i, "null")
	}
	return i, false
}

func literal(src []byte, i int, lit string) (int, bool) {
	if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// canonicalObject checks the members after the '{' at src[i-1]: keys in
// strictly increasing byte order, which for keys of printable ASCII is
// the canonical order, with no key repeated.
func canonicalObject(src []byte, i, depth int) (int, bool) {
	if depth > maxCheckDepth {
		return i, false
	}
	if i < len(src) && src[i] == '}' {
		return i + 1, true
	}
	var prev []byte
	for first := true; ; first = false {
		start := i
		end, ok := canonicalString(src, i)
		if !ok {
			return i, false
		}
		key := src[start+1 : end-1]
		if !first && bytes.Compare(prev, key) >= 0 {
			return i, false
		}
		prev = key
		if end >= len(src) || src[end] != ':' {
			return i, false
		}
		if i, ok = canonicalValue(src, end+1, depth); !ok {
			return i, false
		}
		if i >= len(src) {
			return i, false
		}
		switch src[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// canonicalArray checks the elements after the '[' at src[i-1].
func canonicalArray(src []byte, i, depth int) (int, bool) {
	if depth > maxCheckDepth {
		return i, false
	}
	if i < len(src) && src[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = canonicalValue(src, i, depth); !ok || i >= len(src) {
			return i, false
		}
		switch src[i] {
		case ',':
			i++
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// canonicalString checks the string at src[i]: printable ASCII without
// escapes, which the canonical form writes as it is.
func canonicalString(src []byte, i int) (int, bool) {
	if i >= len(src) || src[i] != '"' {
		return i, false
	}
	for j := i + 1; j < len(src); j++ {
		switch c := src[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return j, false
		}
	}
	return len(src), false
}

// canonicalInteger checks the number at src[i]: an integer in canonical
// form (no fraction or exponent, no leading zero, not -0, at most 21
// digits).
func canonicalInteger(src []byte, i int) (int, bool) {
	j := i
	if src[j] == '-' {
		j++
	}
	start := j
	for j < len(src) && src[j] >= '0' && src[j] <= '9' {
		j++
	}
	digits := src[start:j]
	switch {
	case len(digits) == 0 || len(digits) > 21:
		return j, false
	case digits[0] == '0' && (len(digits) > 1 || start > i): // 01, -0
		return j, false
	case j < len(src) && (src[j] == '.' || src[j] == 'e' || src[j] == 'E'):
		return j, false
	}
	return j, true
}
