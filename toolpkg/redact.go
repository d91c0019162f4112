package toolpkg

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// redacted replaces a secret in text the model or a log could see.
const redacted = "[secret]"

// secrets are what must never leave a call: the values of the
// configuration keys that any tool of the package declares secret, and
// those keys, whose values are hidden wherever they appear in a tool's
// JSON output (a boolean has no text that could be searched for).
type secrets struct {
	values []string // longest first; at least 3 bytes each
	keys   map[string]bool
}

// add records the text of a secret value: a string as itself, an
// integer in decimal. Values shorter than 3 bytes are left alone:
// replacing them would garble the text without hiding anything.
func (s *secrets) add(v any) {
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case bool, nil:
		return
	default:
		i, ok := toInt(v)
		if !ok {
			return
		}
		text = strconv.FormatInt(i, 10)
	}
	if len(text) < 3 {
		return
	}
	for _, have := range s.values {
		if have == text {
			return
		}
	}
	s.values = append(s.values, text)
	sort.Slice(s.values, func(i, j int) bool { return len(s.values[i]) > len(s.values[j]) })
}

// text replaces every secret value in t, in any form JSON could give it:
// raw, or with any of its characters escaped (\", \\, \/, \n and the
// like, or \uXXXX in either case, surrogate pairs included).
func (s *secrets) text(t string) string {
	if s == nil {
		return t
	}
	return s.members(s.replaceValues(t))
}

// members hides the value of every JSON object member, in text, whose
// key is secret: "key": true becomes "key": [secret], whatever the value
// (a boolean, a number, null). Strings are left to the value search.
func (s *secrets) members(t string) string {
	for k := range s.keys {
		var b strings.Builder
		last := 0
		for i := 0; ; {
			n := strings.Index(t[i:], k)
			if n < 0 {
				break
			}
			start := i + n
			j := start + len(k)
			i = j
			if start == 0 || t[start-1] != '"' {
				continue
			}
			switch {
			case strings.HasPrefix(t[j:], `\"`):
				j += 2
			case strings.HasPrefix(t[j:], `"`):
				j++
			default:
				continue
			}
			j = skipSpace(t, j)
			if j >= len(t) || t[j] != ':' {
				continue
			}
			j = skipSpace(t, j+1)
			end := j
			for end < len(t) && strings.IndexByte("truefalsn0123456789+-.eE", t[end]) >= 0 {
				end++
			}
			if end == j {
				continue
			}
			b.WriteString(t[last:j])
			b.WriteString(redacted)
			last, i = end, end
		}
		if last > 0 {
			b.WriteString(t[last:])
			t = b.String()
		}
	}
	return t
}

func skipSpace(t string, j int) int {
	for j < len(t) && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n' || t[j] == '\r') {
		j++
	}
	return j
}

// replaceValues replaces the secret values in t.
func (s *secrets) replaceValues(t string) string {
	if len(s.values) == 0 {
		return t
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(t); {
		end := -1
		for _, v := range s.values {
			if t[i] != v[0] && t[i] != '\\' {
				continue
			}
			if e, ok := matchSecret(t, i, v); ok {
				end = e
				break
			}
		}
		if end < 0 {
			i++
			continue
		}
		b.WriteString(t[last:i])
		b.WriteString(redacted)
		i, last = end, end
	}
	if last == 0 {
		return t
	}
	b.WriteString(t[last:])
	return b.String()
}

// matchSecret reports whether t holds the secret v at i, each of its
// characters raw or JSON-escaped, and where the match ends.
func matchSecret(t string, i int, v string) (int, bool) {
	j := i
	for k := 0; k < len(v); {
		r, size := utf8.DecodeRuneInString(v[k:])
		// An escape first: a backslash of the secret may be escaped too.
		if got, n := unescapeAt(t, j); n > 0 && got == r && (r != utf8.RuneError || size > 1) {
			j += n
			k += size
			continue
		}
		if j+size <= len(t) && t[j:j+size] == v[k:k+size] {
			j += size
			k += size
			continue
		}
		return 0, false
	}
	return j, true
}

// unescapeAt decodes the JSON escape at t[j:], returning the character
// and the escape's length, or 0 when there is none.
func unescapeAt(t string, j int) (rune, int) {
	if j+1 >= len(t) || t[j] != '\\' {
		return 0, 0
	}
	switch t[j+1] {
	case '"', '\\', '/':
		return rune(t[j+1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, ok := hex4(t, j+2)
		if !ok {
			return 0, 0
		}
		if utf16.IsSurrogate(r) {
			if j+12 <= len(t) && t[j+6] == '\\' && t[j+7] == 'u' {
				if lo, ok := hex4(t, j+8); ok {
					if c := utf16.DecodeRune(r, lo); c != utf8.RuneError {
						return c, 12
					}
				}
			}
			return 0, 0
		}
		return r, 6
	}
	return 0, 0
}

func hex4(t string, j int) (rune, bool) {
	if j+4 > len(t) {
		return 0, false
	}
	n, err := strconv.ParseUint(t[j:j+4], 16, 32)
	return rune(n), err == nil
}

// json returns raw with every secret hidden: the values of secret keys
// replaced whatever their type, and secret values in strings, keys and
// numbers. It is raw itself when nothing had to be hidden.
func (s *secrets) json(raw json.RawMessage) json.RawMessage {
	if s == nil || len(raw) == 0 || (len(s.values) == 0 && len(s.keys) == 0) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// Not JSON: hide what text search can find.
		return json.RawMessage(s.text(string(raw)))
	}
	v, changed := s.walk(v)
	if !changed {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage(strconv.Quote(redacted))
	}
	return bytes.TrimSpace(buf.Bytes())
}

func (s *secrets) walk(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		r := s.text(x)
		return r, r != x
	case json.Number:
		if s.text(x.String()) != x.String() {
			return redacted, true
		}
	case []any:
		changed := false
		for i, e := range x {
			var c bool
			x[i], c = s.walk(e)
			changed = changed || c
		}
		return x, changed
	case map[string]any:
		out := make(map[string]any, len(x))
		changed := false
		for k, e := range x {
			nk := s.text(k)
			if nk != k {
				changed = true
			}
			if s.keys[k] {
				out[nk] = redacted
				changed = true
				continue
			}
			ne, c := s.walk(e)
			changed = changed || c
			out[nk] = ne
		}
		return out, changed
	}
	return v, false
}
