package canonjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestIsCanonical(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{"city":"Paris","days":3,"units":"metric"}`, true},
		{`{}`, true},
		{`[]`, true},
		{`[1,-2,"x",true,false,null,{"a":[{}]}]`, true},
		{`123456789012345678901`, true},
		{`0`, true},
		{`{"b":1,"a":2}`, false},          // unsorted
		{`{"a":1,"a":2}`, false},          // repeated key
		{`{"a":1, "b":2}`, false},         // whitespace
		{` {"a":1}`, false},               // whitespace
		{`{"a":1}x`, false},               // trailing data
		{`-0`, false},                     // canonical form is 0
		{`1.0`, false},                    // 1
		{`1.5`, false},                    // not proven, though canonical
		{`1e3`, false},                    // 1000
		{`1234567890123456789012`, false}, // 22 digits: exponent form
		{`01`, false},                     // not JSON
		{`"a\nb"`, false},                 // escape
		{`"é"`, false},                    // outside ASCII: not proven
		{`"a`, false},
		{`{"a"}`, false},
		{`{"a":}`, false},
		{`[1,]`, false},
		{`[1 2]`, false},
		{`tru`, false},
		{``, false},
	} {
		if got := IsCanonical([]byte(c.in)); got != c.want {
			t.Errorf("IsCanonical(%#q) = %v, want %v", c.in, got, c.want)
		}
		if c.want {
			out, err := Append(nil, []byte(c.in))
			if err != nil || !bytes.Equal(out, []byte(c.in)) {
				t.Errorf("Append(%#q) = %#q, %v: not canonical after all", c.in, out, err)
			}
		}
	}
}

func TestIsCanonicalDepthIsBounded(t *testing.T) {
	deep := bytes.Repeat([]byte("["), 100)
	deep = append(deep, bytes.Repeat([]byte("]"), 100)...)
	if IsCanonical(deep) {
		t.Error("a value nested 100 deep is proven canonical")
	}
}

// Whatever IsCanonical proves canonical, Append leaves unchanged.
func FuzzIsCanonical(f *testing.F) {
	for _, s := range []string{`{"city":"Paris","days":3}`, `[1,"a",{"b":null}]`, `{"a":1,"b":{"c":[true]}}`, `-12`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !IsCanonical(in) {
			return
		}
		out, err := Append(nil, in)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("IsCanonical(%#q), but Append gives %#q, %v", in, out, err)
		}
	})
}

func BenchmarkIsCanonical(b *testing.B) {
	in := []byte(`{"city":"Paris","days":3,"units":"metric"}`)
	b.Run("IsCanonical", func(b *testing.B) {
		for b.Loop() {
			IsCanonical(in)
		}
	})
	b.Run("Append", func(b *testing.B) {
		buf := make([]byte, 0, 256)
		for b.Loop() {
			buf, _ = Append(buf[:0], in)
		}
	})
}

// Near-canonical texts (canonical forms with one byte changed) are where
// IsCanonical could prove too much: whatever it proves canonical among
// them, Append leaves unchanged, and encoding/json accepts.
func FuzzIsCanonicalNearCanonical(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[2,-3],"c":"x"}`, `[0,10,"\u00e9",1.5,1e21]`, `{"a":{"b":{}},"aa":null}`, `-12`, `"x y"`} {
		f.Add([]byte(s), uint16(0), byte('0'))
	}
	f.Fuzz(func(t *testing.T, src []byte, at uint16, b byte) {
		out, err := Append(nil, src)
		if err != nil {
			return
		}
		for _, m := range [][]byte{out, mutate(out, int(at), b, false), mutate(out, int(at), b, true)} {
			if !IsCanonical(m) {
				continue
			}
			if !json.Valid(m) {
				t.Fatalf("IsCanonical(%#q), but encoding/json rejects it", m)
			}
			again, err := Append(nil, m)
			if err != nil || !bytes.Equal(again, m) {
				t.Fatalf("IsCanonical(%#q), but Append gives %#q, %v", m, again, err)
			}
		}
	})
}

// mutate returns a copy of b with the byte at at%len(b) replaced by c, or
// with c inserted before it.
func mutate(b []byte, at int, c byte, insert bool) []byte {
	if len(b) == 0 {
		return []byte{c}
	}
	at %= len(b)
	out := append([]byte(nil), b[:at]...)
	out = append(out, c)
	if !insert {
		at++
	}
	return append(out, b[at:]...)
}
