package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tokens lexes src to the end and returns its tokens as kind:text.
func tokens(t testing.TB, src string, lim Limits) ([]string, error) {
	t.Helper()
	l := NewLexer([]byte(src), lim)
	var out []string
	for {
		tok, err := l.Next()
		if err != nil {
			return out, err
		}
		if tok.Kind == End {
			return out, nil
		}
		out = append(out, tok.Kind.String()+":"+src[tok.Start:tok.End])
	}
}

func TestTokens(t *testing.T) {
	got, err := tokens(t, " {\"a\" : [1, -2.5e3, \"x\\n\", true,false , null], \"\":{}}\n", Limits{})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"'{':{", `string:"a"`, "'[':[", "number:1", "number:-2.5e3", `string:"x\n"`,
		"true:true", "false:false", "null:null", "']':]", `string:""`, "'{':{", "'}':}", "'}':}",
	}, got)
}

func TestTokenFlags(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want Flags
	}{
		{`"plain"`, 0},
		{`"caf\u00e9"`, Escaped},
		{`"café"`, NonASCII},
		{`"\"é"`, Escaped | NonASCII},
		{`12`, 0},
		{`-0`, 0},
		{`1.5`, Fraction},
		{`1e5`, Exponent},
		{`-1.5E-5`, Fraction | Exponent},
	} {
		l := NewLexer([]byte(tc.src), Limits{})
		tok, err := l.Next()
		require.NoError(t, err, tc.src)
		assert.Equal(t, tc.want, tok.Flags, tc.src)
	}
}

// Every malformed document fails with a *SyntaxError at the offset of the
// first byte that cannot continue it, as encoding/json finds it.
func TestSyntaxErrorOffsets(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
		msg    string
	}{
		{``, 0, "unexpected end"},
		{`   `, 3, "unexpected end"},
		{`x`, 0, "looking for beginning of value"},
		{`{`, 1, "unexpected end"},
		{`{"a"`, 4, "unexpected end"},
		{`{"a":}`, 5, "looking for beginning of value"},
		{`{"a":1,}`, 7, "looking for beginning of object key string"},
		{`{"a" 1}`, 5, "after object key"},
		{`{a:1}`, 1, "looking for beginning of object key string"},
		{`{"a":1 "b":2}`, 7, "after object key:value pair"},
		{`[1,]`, 3, "looking for beginning of value"},
		{`[1 2]`, 3, "after array element"},
		{`[`, 1, "unexpected end"},
		{`[}`, 1, "looking for beginning of value"},
		{`{]`, 1, "looking for beginning of object key string"},
		{`"abc`, 4, "unexpected end"},
		{`"a\x"`, 3, "in string escape code"},
		{`"\u12g4"`, 5, "hexadecimal character escape"},
		{`"\u12`, 5, "unexpected end"},
		{`"\`, 2, "unexpected end"},
		{"\"a\x01\"", 2, "control character"},
		{"\"a\n\"", 2, "control character"},
		{`01`, 1, "after top-level value"},
		{`1.`, 2, "unexpected end"},
		{`1.e5`, 2, "in fraction"},
		{`1e`, 2, "unexpected end"},
		{`1e+`, 3, "unexpected end"},
		{`1ex`, 2, "in exponent"},
		{`-`, 1, "unexpected end"},
		{`-a`, 1, "in numeric literal"},
		{`+1`, 0, "looking for beginning of value"},
		{`.5`, 0, "looking for beginning of value"},
		{`tru`, 0, "expected true"},
		{`nulL`, 0, "expected null"},
		{`falsey`, 5, "after top-level value"},
		{`1 2`, 2, "after top-level value"},
		{`{} x`, 3, "after top-level value"},
		{"\ufeff1", 0, "looking for beginning of value"},
		{"[1,\n  2,\n  ?]", 11, "looking for beginning of value"},
	} {
		_, err := tokens(t, tc.in, Limits{})
		var se *SyntaxError
		if assert.True(t, errors.As(err, &se), "%q: error %v", tc.in, err) {
			assert.Equal(t, tc.offset, se.Offset, "%q: %v", tc.in, err)
			assert.Contains(t, se.Error(), tc.msg, tc.in)
			assert.Contains(t, se.Error(), fmt.Sprintf("at byte offset %d", tc.offset), tc.in)
		}
		assert.False(t, json.Valid([]byte(tc.in)), tc.in)
		_, perr := (&Parser{}).Parse([]byte(tc.in))
		assert.Equal(t, err, perr, "Parse(%q)", tc.in)
	}
}

// An error is final: the lexer does not read on after it.
func TestErrorIsFinal(t *testing.T) {
	l := NewLexer([]byte(`[1,?,2]`), Limits{})
	for range 2 {
		_, err := l.Next()
		require.NoError(t, err)
	}
	_, err := l.Next()
	require.Error(t, err)
	for range 3 {
		_, again := l.Next()
		assert.Equal(t, err, again)
	}
}

func TestDeepNestingIsRefusedWithOffset(t *testing.T) {
	for _, open := range []string{"[", `{"k":`} {
		ok := strings.Repeat(open, DefaultMaxDepth) + "1" + strings.Repeat(closer(open), DefaultMaxDepth)
		_, err := (&Parser{}).Parse([]byte(ok))
		require.NoError(t, err)
		require.True(t, json.Valid([]byte(ok)))

		deep := strings.Repeat(open, DefaultMaxDepth+1) + "1" + strings.Repeat(closer(open), DefaultMaxDepth+1)
		_, err = (&Parser{}).Parse([]byte(deep))
		var le *LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "depth", le.Limit)
		assert.Equal(t, DefaultMaxDepth*len(open), le.Offset)
		assert.Contains(t, err.Error(), "nested deeper than 10000 levels")
		require.False(t, json.Valid([]byte(deep)), "encoding/json refuses it too")
	}
	// A caller's own limit.
	_, err := tokens(t, "[[[[]]]]", Limits{MaxDepth: 3})
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LimitError{Offset: 3, Limit: "depth", Max: 3}, *le)
	_, err = tokens(t, "[[[]]]", Limits{MaxDepth: 3})
	assert.NoError(t, err)
}

func closer(open string) string {
	if open == "[" {
		return "]"
	}
	return "}"
}

func TestDeepNestingBeyondTheStackBitsKeepsObjectsAndArraysApart(t *testing.T) {
	// Past 64 levels the kinds of open containers live in a slice.
	var b strings.Builder
	for i := range 200 {
		if i%3 == 0 {
			b.WriteString(`{"k":`)
		} else {
			b.WriteString("[")
		}
	}
	b.WriteString("0")
	for i := 199; i >= 0; i-- {
		if i%3 == 0 {
			b.WriteString("}")
		} else {
			b.WriteString("]")
		}
	}
	src := b.String()
	v, err := (&Parser{}).Parse([]byte(src))
	require.NoError(t, err)
	assert.Equal(t, src, string(Append(nil, v)))
	// The same document with one closer swapped fails where it is.
	bad := []byte(src)
	i := bytes.LastIndexByte(bad, ']')
	bad[i] = '}'
	_, err = (&Parser{}).Parse(bad)
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, i, se.Offset)
}

func TestSizeLimit(t *testing.T) {
	_, err := tokens(t, `[1,2,3]`, Limits{MaxBytes: 6})
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LimitError{Offset: 6, Limit: "size", Max: 6}, *le)
	assert.Equal(t, "longer than 6 bytes", err.Error())
	_, err = tokens(t, `[1,2,3]`, Limits{MaxBytes: 7})
	assert.NoError(t, err)
}

func TestTokenLimit(t *testing.T) {
	for _, src := range []string{`[1,2,3]`, `{"a":1,"b":2}`, `[true,null,[]]`} {
		all, err := tokens(t, src, Limits{})
		require.NoError(t, err)
		_, err = tokens(t, src, Limits{MaxTokens: len(all)})
		assert.NoError(t, err, src)
		_, err = tokens(t, src, Limits{MaxTokens: len(all) - 1})
		var le *LimitError
		if assert.ErrorAs(t, err, &le, src) {
			assert.Equal(t, "tokens", le.Limit)
			assert.Equal(t, len(src)-1, le.Offset, src)
			assert.Contains(t, err.Error(), fmt.Sprintf("more than %d tokens", len(all)-1))
		}
	}
}

// Every prefix of a document is either a document itself or fails with an
// error at an offset inside the input, never a panic.
func TestTruncatedInputFailsAtItsEnd(t *testing.T) {
	src := `{"a":[1,-2.5e-3,"x\u00e9\ud83d\ude00y",true,false,null],"b":{"c":{}},"d":"é"}`
	for n := range len(src) {
		_, err := tokens(t, src[:n], Limits{})
		if json.Valid([]byte(src[:n])) {
			assert.NoError(t, err, src[:n])
			continue
		}
		var se *SyntaxError
		if assert.ErrorAs(t, err, &se, src[:n]) {
			assert.LessOrEqual(t, se.Offset, n, src[:n])
		}
	}
}

func TestHugeNumberIsKeptAsWritten(t *testing.T) {
	digits := strings.Repeat("9", 1<<20)
	for _, src := range []string{digits, "-" + digits + "." + digits + "e+" + digits, "1e" + digits} {
		v, err := (&Parser{}).Parse([]byte(src))
		require.NoError(t, err)
		assert.Equal(t, json.Number(src), v)
	}
	// Cut inside the exponent.
	_, err := (&Parser{}).Parse([]byte(digits + "e"))
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, len(digits)+1, se.Offset)
}

func TestLongStringIsRead(t *testing.T) {
	long := strings.Repeat("abcdefgh", 1<<17)
	v, err := (&Parser{}).Parse([]byte(`"` + long + `"`))
	require.NoError(t, err)
	assert.Equal(t, long, v)
	escaped := strings.Repeat(`\u00e9\n`, 1<<16)
	v, err = (&Parser{}).Parse([]byte(`"` + escaped + `"`))
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("é\n", 1<<16), v)
	// Unterminated: the end of the input is the offset.
	_, err = (&Parser{}).Parse([]byte(`"` + long))
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, len(long)+1, se.Offset)
}

// Invalid UTF-8 and unpaired surrogates are accepted, as encoding/json
// accepts them, and decode to U+FFFD as it decodes them.
func TestBadUTF8DecodesAsEncodingJSON(t *testing.T) {
	for _, src := range []string{
		"\"a\xffb\"",
		"\"\xed\xa0\x80\"",
		"\"\xc3\"",
		"\"\xf0\x9f\x98\"",
		`"\ud83d"`,
		`"\ude00\ud83d"`,
		`"\ud83d\u0041"`,
		`"\ud83dx"`,
		`"\ud83d\ude00"`,
		`"\ud83d\\ude00"`,
		"{\"\xff\":1,\"\xfe\":2}",
	} {
		require.True(t, json.Valid([]byte(src)), src)
		v, err := (&Parser{}).Parse([]byte(src))
		require.NoError(t, err, src)
		assert.Equal(t, std(t, []byte(src)), Unordered(v), "%q", src)
	}
}

func TestDuplicateKeysAreReported(t *testing.T) {
	src := []byte(`{"a":1,"b":2,"\u0061":3,"c":{"b":4,"b":5}}`)
	type dup struct {
		key    string
		offset int
	}
	var dups []dup
	p := Parser{Duplicate: func(key string, offset int) error {
		dups = append(dups, dup{key, offset})
		return nil
	}}
	v, err := p.Parse(src)
	require.NoError(t, err)
	assert.Equal(t, []dup{{"a", 13}, {"b", 35}}, dups)
	// First position, last value, as encoding/json keeps the value.
	assert.Equal(t, `{"a":3,"b":2,"c":{"b":5}}`, string(Append(nil, v)))
	assert.Equal(t, std(t, src), Unordered(v))

	// The zero Parser merges them silently; a caller may refuse them.
	v, err = (&Parser{}).Parse(src)
	require.NoError(t, err)
	assert.Equal(t, `{"a":3,"b":2,"c":{"b":5}}`, string(Append(nil, v)))
	refuse := errors.New("duplicate")
	p.Duplicate = func(string, int) error { return refuse }
	_, err = p.Parse(src)
	assert.ErrorIs(t, err, refuse)
}

func TestObject(t *testing.T) {
	var o Object
	assert.False(t, o.Set("a", 1))
	assert.False(t, o.Set("b", 2))
	assert.True(t, o.Set("a", 3))
	assert.Equal(t, []string{"a", "b"}, o.Keys())
	o.Rename("a", "c")
	assert.Equal(t, []string{"c", "b"}, o.Keys())
	o.Rename("b", "c") // replaces the member that had the key
	assert.Equal(t, []Member{{"c", 2}}, o.Members())
	o.Delete("c")
	o.Delete("missing")
	assert.Zero(t, o.Len())

	// Past indexAt members, lookups go through the index; it follows
	// every change.
	for i := range 3 * indexAt {
		o.Set(fmt.Sprint(i), i)
	}
	o.Delete("0")
	o.Rename("1", "one")
	o.Rename("2", "3")
	o.Set("new", -1)
	want := []string{"one", "3"}
	for i := 4; i < 3*indexAt; i++ {
		want = append(want, fmt.Sprint(i))
	}
	want = append(want, "new")
	assert.Equal(t, want, o.Keys())
	for i, k := range o.Keys() {
		v, ok := o.Lookup(k)
		require.True(t, ok, k)
		assert.Equal(t, o.Members()[i].Value, v)
	}
	assert.Equal(t, 2, o.Get("3"))
	for o.Len() > 0 {
		o.Delete(o.Members()[0].Key)
	}
	assert.Nil(t, o.Get("one"))
}

// Append writes valid strings exactly as encoding/json writes them without
// HTML escaping, and invalid UTF-8 as the escape \ufffd on every
// toolchain, so that its bytes do not depend on the Go release.
func TestAppendStringsAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s/", "\b\f\n\r\t\x00\x1f\x7f", "<>&", "\u2028\u2029", "é😀"} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		assert.Equal(t, strings.TrimSuffix(b.String(), "\n"), string(Append(nil, s)), "%q", s)
	}
	for s, want := range map[string]string{"a\xffb": `"a\ufffdb"`, "\xed\xa0\x80": `"\ufffd\ufffd\ufffd"`} {
		got := Append(nil, s)
		assert.Equal(t, want, string(got), "%q", s)
		assert.True(t, json.Valid(got), "%q", s)
	}
}

func TestAppendPanicsOnAForeignValue(t *testing.T) {
	assert.PanicsWithValue(t, "jsontext: int is not a JSON value", func() { Append(nil, 1) })
}

func TestLexerDoesNotAllocate(t *testing.T) {
	src := []byte(`{"city":"Paris","days":3,"units":"metric","tags":["a","b\n"],"geo":{"lat":48.85,"lon":2.35},"ok":true,"none":null}`)
	allocs := testing.AllocsPerRun(100, func() {
		if err := drain(src, Limits{MaxDepth: 10}); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// drain reads every token of src.
func drain(src []byte, lim Limits) error {
	l := NewLexer(src, lim)
	for {
		tok, err := l.Next()
		if err != nil || tok.Kind == End {
			return err
		}
	}
}

func TestKindString(t *testing.T) {
	assert.Equal(t, "'{'", ObjectStart.String())
	assert.Equal(t, "end of input", End.String())
	assert.Equal(t, "Kind(42)", Kind(42).String())
}

// plainRun finds the same first special byte as a byte-by-byte scan,
// wherever it is in a word and whatever the bytes after it.
func TestPlainRunMatchesBytewiseScan(t *testing.T) {
	bytewise := func(d []byte, j int) int {
		for j < len(d) && strClass[d[j]] == clPlain {
			j++
		}
		return j
	}
	d := make([]byte, 19)
	for pos := range d {
		for b := range 256 {
			for k := range d {
				d[k] = 'a'
			}
			d[pos] = byte(b)
			if pos+1 < len(d) {
				d[pos+1] = 0x00 // a special byte after it must not matter
			}
			for start := range 3 {
				if got, want := plainRun(d, start), bytewise(d, start); got != want {
					t.Fatalf("byte %#x at %d from %d: plainRun gives %d, not %d", b, pos, start, got, want)
				}
			}
		}
	}
}
