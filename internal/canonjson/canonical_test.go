package canonjson

import (
	"bytes"
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
