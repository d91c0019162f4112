package toolpkg

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync"
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
	values  []string // at least 3 bytes each
	seen    map[string]bool
	longest int // the length of the longest value
	keys    map[string]bool

	once sync.Once // makes ac, once every value was added
	ac   *matcher

	keysOnce sync.Once // makes keyAC: a quote and each key
	keyAC    *matcher
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
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[text] {
		return
	}
	s.seen[text] = true
	s.values = append(s.values, text)
	s.longest = max(s.longest, len(text))
}

// maxLen returns the length of the longest secret value.
func (s *secrets) maxLen() int {
	if s == nil {
		return 0
	}
	return s.longest
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
// (a boolean, a number, null). Strings are left to the value search. All
// keys are looked for in one pass: its cost is linear in the text.
func (s *secrets) members(t string) string {
	if len(s.keys) == 0 || len(t) == 0 {
		return t
	}
	s.keysOnce.Do(func() {
		quoted := make([]string, 0, len(s.keys))
		for k := range s.keys {
			quoted = append(quoted, `"`+k)
		}
		s.keyAC = newMatcher(quoted)
	})
	var b strings.Builder
	last := 0
	s.keyAC.each(t, func(i, _ int) {
		// t[:i] ends with a quote and a secret key.
		j := i
		if j < last {
			return
		}
		switch {
		case strings.HasPrefix(t[j:], `\"`):
			j += 2
		case strings.HasPrefix(t[j:], `"`):
			j++
		default:
			return
		}
		j = skipSpace(t, j)
		if j >= len(t) || t[j] != ':' {
			return
		}
		j = skipSpace(t, j+1)
		end := j
		for end < len(t) && strings.IndexByte("truefalsn0123456789+-.eE", t[end]) >= 0 {
			end++
		}
		if end == j {
			return
		}
		b.WriteString(t[last:j])
		b.WriteString(redacted)
		last = end
	})
	if last == 0 {
		return t
	}
	b.WriteString(t[last:])
	return b.String()
}

func skipSpace(t string, j int) int {
	for j < len(t) && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n' || t[j] == '\r') {
		j++
	}
	return j
}

// replaceValues replaces the secret values in t. Its cost is linear in
// the length of t, whatever t and the secrets hold: t is searched as it
// is, with its JSON escapes decoded, and with them decoded twice (text
// escaped once more, as a JSON document quoted in a string), all secrets
// at once.
func (s *secrets) replaceValues(t string) string {
	if len(s.values) == 0 || len(t) == 0 {
		return t
	}
	s.once.Do(func() { s.ac = newMatcher(s.values) })
	var spans []span
	spans = s.ac.find(t, nil, spans)
	v1 := decodeView(t)
	if v1.sites != nil {
		spans = s.ac.find(v1.text, []*view{v1}, spans)
		if v2 := decodeView(v1.text); v2.sites != nil {
			spans = s.ac.find(v2.text, []*view{v2, v1}, spans)
		}
	}
	if len(spans) == 0 {
		return t
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start < end; i++ {
			end = max(end, spans[i].end)
		}
		b.WriteString(t[last:start])
		b.WriteString(redacted)
		last = end
	}
	b.WriteString(t[last:])
	return b.String()
}

// span is a part [start, end) of a text.
type span struct{ start, end int }

// view is a text with its JSON escapes decoded, and where each decoded
// escape came from.
type view struct {
	text  string
	sites []site // the decoded escapes, in order; nil when there were none
}

// site is one decoded escape: text[v:v+vn] of the view came from
// src[s:s+sn].
type site struct{ v, vn, s, sn int }

// decodeView decodes every JSON escape of src.
func decodeView(src string) *view {
	if strings.IndexByte(src, '\\') < 0 {
		return &view{text: src}
	}
	var b strings.Builder
	b.Grow(len(src))
	var sites []site
	for i := 0; i < len(src); {
		if r, n := unescapeAt(src, i); n > 0 {
			v := b.Len()
			b.WriteRune(r)
			sites = append(sites, site{v: v, vn: b.Len() - v, s: i, sn: n})
			i += n
			continue
		}
		b.WriteByte(src[i])
		i++
	}
	return &view{text: b.String(), sites: sites}
}

// toSource maps the span [start, end) of the view back to its source:
// a decoded escape partly inside the span is taken whole.
func (v *view) toSource(start, end int) (int, int) {
	return v.source(start, false), v.source(end-1, true)
}

// source returns where the byte x of the view came from: the start of
// its source, or with after, its end.
func (v *view) source(x int, after bool) int {
	// The last escape at or before x.
	i := sort.Search(len(v.sites), func(i int) bool { return v.sites[i].v > x }) - 1
	end := 0
	if after {
		end = 1
	}
	if i < 0 {
		return x + end
	}
	st := v.sites[i]
	if x < st.v+st.vn {
		return st.s + end*st.sn
	}
	return st.s + st.sn + (x - (st.v + st.vn)) + end
}

// matcher finds every occurrence of a set of strings in one pass
// (Aho-Corasick): its cost is linear in the text searched, whatever the
// text and the strings.
type matcher struct {
	next    map[uint64]int32 // node<<8 | byte → node
	fail    []int32
	longest []int32 // the length of the longest string that ends at the node
}

func newMatcher(words []string) *matcher {
	m := &matcher{next: map[uint64]int32{}, fail: []int32{0}, longest: []int32{0}}
	for _, w := range words {
		n := int32(0)
		for i := 0; i < len(w); i++ {
			k := uint64(n)<<8 | uint64(w[i])
			c, ok := m.next[k]
			if !ok {
				c = int32(len(m.fail))
				m.fail = append(m.fail, 0)
				m.longest = append(m.longest, 0)
				m.next[k] = c
			}
			n = c
		}
		m.longest[n] = int32(len(w))
	}
	// Failure links, breadth first.
	children := make([][]int32, len(m.fail))
	labels := make([]byte, len(m.fail))
	for k, c := range m.next {
		p := int32(k >> 8)
		children[p] = append(children[p], c)
		labels[c] = byte(k)
	}
	queue := append([]int32(nil), children[0]...)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, c := range children[n] {
			if n != 0 {
				f := m.fail[n]
				for {
					if g, ok := m.next[uint64(f)<<8|uint64(labels[c])]; ok {
						m.fail[c] = g
						break
					}
					if f == 0 {
						break
					}
					f = m.fail[f]
				}
			}
			if m.longest[c] == 0 {
				m.longest[c] = m.longest[m.fail[c]]
			}
			queue = append(queue, c)
		}
	}
	return m
}

// each calls f with the end and the length of each occurrence in t, in
// order (one per end: the longest).
func (m *matcher) each(t string, f func(end, n int)) {
	n := int32(0)
	for i := 0; i < len(t); i++ {
		for {
			if c, ok := m.next[uint64(n)<<8|uint64(t[i])]; ok {
				n = c
				break
			}
			if n == 0 {
				break
			}
			n = m.fail[n]
		}
		if l := int(m.longest[n]); l > 0 {
			f(i+1, l)
		}
	}
}

// find appends to spans every occurrence in t (the longest ending at each
// byte), mapped back through the views t was decoded by, innermost first.
func (m *matcher) find(t string, views []*view, spans []span) []span {
	m.each(t, func(end, n int) {
		start := end - n
		for _, v := range views {
			start, end = v.toSource(start, end)
		}
		spans = append(spans, span{start, end})
	})
	return spans
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
	// A duplicate key hides its earlier values from the decoded form: when
	// the walk changed nothing but the text still holds a secret, the
	// re-encoding below (which keeps one value a key) is what goes out.
	if !changed && s.text(string(raw)) == string(raw) {
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
