package canonjson

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// FuzzCanonical checks the properties of the canonical form on arbitrary
// input.
func FuzzCanonical(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := Append(nil, src)
		if valid := json.Valid(src); valid != (err == nil) {
			t.Fatalf("json.Valid is %v but Append's error is %v for %q", valid, err, src)
		}
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q for %q", out, src)
		}
		// Without spare capacity, members are sorted in place.
		tight, err := Append(make([]byte, 1, 1+len(out)), src)
		if err != nil || !bytes.Equal(tight[1:], out) {
			t.Fatalf("%q gives %q, and %q into a full buffer (%v)", src, out, tight[1:], err)
		}
		again, err := Append(nil, out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q gives %q, then %q (%v)", src, out, again, err)
		}
		v := decode(t, src)
		if !sameValue(v, decode(t, out)) {
			t.Fatalf("%q decodes differently from its canonical form %q", src, out)
		}
		rng := rand.New(rand.NewPCG(uint64(len(src)), 1))
		alt := respell(v, rng)
		altOut, err := Append(nil, alt)
		if err != nil || !bytes.Equal(altOut, out) {
			t.Fatalf("%q gives %q but its respelling %q gives %q (%v)", src, out, alt, altOut, err)
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	inputs := []struct{ name, src string }{
		// Arguments as encoders write them: keys in order, no space.
		{"sorted", `{"city":"Paris","days":3,"units":"metric"}`},
		{"unsorted", `{"units":"metric","days":3,"city":"Paris","tags":["rain","wind"],"geo":{"lon":2.35,"lat":48.85},"detailed":true}`},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			src := []byte(in.src)
			buf := make([]byte, 0, 2*len(src))
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				var err error
				if buf, err = Append(buf[:0], src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
