package jsontext

import (
	"unicode/utf16"
	"unicode/utf8"
)

// NextRune decodes the character at raw[i] of the raw content of a checked
// string token (between its quotes), as encoding/json decodes it: an
// invalid UTF-8 byte and an unpaired surrogate escape give U+FFFD. It
// returns the character and the offset of the next one; i must be less
// than len(raw).
func NextRune(raw []byte, i int) (rune, int) {
	c := raw[i]
	if c >= utf8.RuneSelf {
		r, size := utf8.DecodeRune(raw[i:]) // RuneError for invalid bytes
		return r, i + size
	}
	if c != '\\' {
		return rune(c), i + 1
	}
	switch e := raw[i+1]; e {
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	case 'u':
	default: // '"', '\\', '/'
		return rune(e), i + 2
	}
	r := hex4(raw[i+2:])
	i += 6
	if !utf16.IsSurrogate(r) {
		return r, i
	}
	if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
		if pair := utf16.DecodeRune(r, hex4(raw[i+2:])); pair != utf8.RuneError {
			return pair, i + 6
		}
	}
	return utf8.RuneError, i
}

// hex4 decodes four checked hexadecimal digits.
func hex4(s []byte) rune {
	return hexValue(s[0])<<12 | hexValue(s[1])<<8 | hexValue(s[2])<<4 | hexValue(s[3])
}

// unquote decodes the raw content of a checked string token.
func unquote(raw []byte, flags Flags) string {
	if Plain(raw, flags) {
		return string(raw)
	}
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		var r rune
		r, i = NextRune(raw, i)
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

// appendQuoted appends s as a JSON string, as encoding/json writes it
// without HTML escaping.
func appendQuoted(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Unquote decodes the inside of a string token (raw, without its quotes,
// with the token's flags) as encoding/json decodes it: escapes resolved,
// invalid UTF-8 replaced by U+FFFD.
func Unquote(raw []byte, flags Flags) string { return unquote(raw, flags) }
