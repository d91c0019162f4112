package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// std decodes data as encoding/json does into an any, numbers as written.
func std(t testing.TB, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json cannot decode %q: %v", data, err)
	}
	return v
}

// differential checks the lexer and the parser against encoding/json on
// data: the same documents accepted, the same values decoded, errors
// within the input, tokens in order and in bounds.
func differential(t *testing.T, data []byte) {
	valid := json.Valid(data)
	l := NewLexer(data, Limits{})
	last := 0
	var err error
	for {
		var tok Token
		if tok, err = l.Next(); err != nil {
			break
		}
		if tok.Start < last || tok.End < tok.Start || tok.End > len(data) {
			t.Fatalf("token %v at [%d:%d] after offset %d in %d bytes", tok.Kind, tok.Start, tok.End, last, len(data))
		}
		last = tok.End
		if tok.Kind == End {
			break
		}
	}
	if valid != (err == nil) {
		t.Fatalf("json.Valid is %v but the lexer's error is %v for %q", valid, err, data)
	}
	var se *SyntaxError
	var le *LimitError
	switch {
	case err == nil:
	case errors.As(err, &se):
		if se.Offset < last || se.Offset > len(data) {
			t.Fatalf("error offset %d outside [%d, %d]: %v", se.Offset, last, len(data), err)
		}
	case errors.As(err, &le):
	default:
		t.Fatalf("error of type %T: %v", err, err)
	}

	v, perr := (&Parser{}).Parse(data)
	if (perr == nil) != valid {
		t.Fatalf("json.Valid is %v but Parse's error is %v for %q", valid, perr, data)
	}
	if perr != nil {
		return
	}
	want := std(t, data)
	if got := Unordered(v); !reflect.DeepEqual(want, got) {
		t.Fatalf("%q decodes as\n%#v\nnot as encoding/json decodes it\n%#v", data, got, want)
	}
	out := Append(nil, v)
	if !json.Valid(out) {
		t.Fatalf("Append wrote invalid JSON %q for %q", out, data)
	}
	back, err := (&Parser{}).Parse(out)
	if err != nil || !reflect.DeepEqual(back, v) {
		t.Fatalf("%q written as %q reads back as %#v (%v)", data, out, back, err)
	}
}

// FuzzLexer checks the lexer and the ordered values it builds against
// encoding/json.
func FuzzLexer(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null,"x",-0.5e+3]}`,
		` [ ] `, `{}`, `""`, `"\u00e9\ud83d\ude00\ud83d"`, "\"\xff\"",
		`{"a":1,"a":2}`, `{`, `[1,]`, `{"a":1} x`, `01`, `1.e5`, `tru`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(differential)
}

func TestDifferentialEncodingJSON(t *testing.T) {
	for _, s := range []string{
		``, ` `, `null`, `true`, `false`, `0`, `-0`, `1e400`, `123456789012345678901234567890`,
		`"\/\b\f\n\r\t\"\\"`, `"\u0000"`, "\"\u2028\"", "\"\xc0\xaf\"", `"\uD800\uDC00"`, `"\uDFFF"`,
		`[[[[]]],{}]`, `{"":{"":[""]}}`, `{"a":{"a":{"a":1}},"a":2}`,
		"\t\n\r {\"k\"\t:\n1\r}\n", "\x00", `[1,2`, `{"a":1,}`, `[-]`, `[--1]`, `[1e1.5]`, `"\a"`,
		`{"a" "b"}`, `{,}`, `[,]`, `{"a":1 , "b":2 , }`, `nul`, `nulll`, `[true false]`,
	} {
		t.Run("", func(t *testing.T) { differential(t, []byte(s)) })
	}
}

func BenchmarkLexer(b *testing.B) {
	src := []byte(`{"city":"Paris","days":3,"units":"metric","tags":["rain","wind"],"geo":{"lon":2.35,"lat":48.85},"detailed":true}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if err := drain(src, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	src := []byte(`{"city":"Paris","days":3,"units":"metric","tags":["rain","wind"],"geo":{"lon":2.35,"lat":48.85},"detailed":true}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := (&Parser{}).Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}
