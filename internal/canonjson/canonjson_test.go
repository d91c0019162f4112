package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func canonical(t testing.TB, src string) string {
	t.Helper()
	out, err := Append(nil, []byte(src))
	require.NoError(t, err, "Append(%q)", src)
	return string(out)
}

func TestAppend(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Literals and whitespace.
		{`true`, `true`},
		{" \t\r\nfalse\n", `false`},
		{`null`, `null`},
		{` [ 1 , 2 , [ ] , { } ] `, `[1,2,[],{}]`},
		// Objects: sorted by decoded key, last duplicate wins.
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"a":1,"b":0,"a":2,"a":3}`, `{"a":3,"b":0}`},
		{`{"b":{"d":1,"c":2},"a":[{"z":1,"y":2}]}`, `{"a":[{"y":2,"z":1}],"b":{"c":2,"d":1}}`},
		{`{"\u0061":1,"a":2}`, `{"a":2}`},
		{`{"a":1,"\u0061":2}`, `{"a":2}`},
		{`{"é":1,"z":2,"\u00e9":3}`, `{"z":2,"é":3}`},
		{`{"\n":1,"A":2}`, `{"\n":1,"A":2}`},
		{`{"A":1,"\n":2}`, `{"\n":2,"A":1}`},
		{`{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
		{"{\"\xff\":1,\"\xfe\":2}", "{\"\ufffd\":2}"},
		{`{"😀":1,"\uffff":2}`, `{"` + "\uffff" + `":2,"😀":1}`},
		// Strings.
		{`"a\"b\\c\/d"`, `"a\"b\\c/d"`},
		{`"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{`"\u0001\u001F\u007f"`, `"\u0001\u001f` + "\x7f" + `"`},
		{`"\u00e9\u00E9é"`, `"ééé"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`"\ud83d"`, `"` + "\ufffd" + `"`},
		{`"\ude00\ud83d"`, `"` + "\ufffd\ufffd" + `"`},
		{`"\ud83d\u0041"`, `"` + "\ufffd" + `A"`},
		{`"\ud83dx"`, `"` + "\ufffdx" + `"`},
		{"\"a\xffb\"", "\"a\ufffdb\""},
		{"\"\xed\xa0\x80\"", "\"\ufffd\ufffd\ufffd\""},
		{"\"\u2028<>&\"", "\"\u2028<>&\""},
		{`"\u003c"`, `"<"`},
		// Numbers.
		{`0`, `0`},
		{`-0`, `0`},
		{`-0.0e-5`, `0`},
		{`0e999999999999999999999999`, `0`},
		{`1`, `1`},
		{`1.0`, `1`},
		{`1e0`, `1`},
		{`10e-1`, `1`},
		{`0.1e1`, `1`},
		{`1.50`, `1.5`},
		{`-1.5`, `-1.5`},
		{`15e-1`, `1.5`},
		{`100`, `100`},
		{`1e2`, `100`},
		{`1E+2`, `100`},
		{`0.000001`, `0.000001`},
		{`1e-6`, `0.000001`},
		{`1e-7`, `1e-7`},
		{`1.25e-7`, `1.25e-7`},
		{`-0.0000012`, `-0.0000012`},
		{`1e20`, `100000000000000000000`},
		{`1e21`, `1e+21`},
		{`123e18`, `123000000000000000000`},
		{`1.5e21`, `1.5e+21`},
		{`12345678901234567890123`, `1.2345678901234567890123e+22`},
		{`123456789012345678901`, `123456789012345678901`},
		{`9007199254740993`, `9007199254740993`},
		{`18446744073709551617`, `18446744073709551617`},
		{`0.1`, `0.1`},
		{`3.14159265358979323846264338327950288`, `3.14159265358979323846264338327950288`},
		{`1e999999999`, `1e+999999999`},
		{`1e-999999999`, `1e-999999999`},
		{`2.5e1000000000000000000000`, `2.5e+1000000000000000000000`},
		{`2.5e-1000000000000000000000`, `2.5e-1000000000000000000000`},
		{`25e-1000000000000000000000`, `2.5e-999999999999999999999`},
		{`1e0000000000000000000000000003`, `1000`},
		{`[1.0,-0,0.10e1]`, `[1,0,1]`},
	} {
		assert.Equal(t, tc.want, canonical(t, tc.in), "Append(%q)", tc.in)
		tight, err := Append(make([]byte, 0, len(tc.want)), []byte(tc.in))
		assert.NoError(t, err)
		assert.Equal(t, tc.want, string(tight), "Append(%q) into a full buffer", tc.in)
	}
}

func TestEqualNumbers(t *testing.T) {
	groups := [][]string{
		{"1", "1.0", "1e0", "10e-1", "0.1e1", "100e-2", "1.000000"},
		{"0", "-0", "0.0", "0e10", "-0.000e-5"},
		{"-120", "-1.2e2", "-12E1", "-120.00", "-0.12e+3"},
		{"1234567890123456789012345678901234567890", "1.234567890123456789012345678901234567890e39"},
	}
	var seen []string
	for _, g := range groups {
		want := canonical(t, g[0])
		for _, s := range g[1:] {
			assert.Equal(t, want, canonical(t, s), s)
		}
		assert.NotContains(t, seen, want)
		seen = append(seen, want)
	}
	// Big integers never collapse.
	assert.NotEqual(t, canonical(t, "9007199254740993"), canonical(t, "9007199254740992"))
	assert.NotEqual(t, canonical(t, "1e400"), canonical(t, "1.0000000000000000000001e400"))
}

func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
	}{
		{``, 0},
		{`   `, 3},
		{`x`, 0},
		{`{`, 1},
		{`{"a"`, 4},
		{`{"a":}`, 5},
		{`{"a":1,}`, 7},
		{`{"a" 1}`, 5},
		{`{a:1}`, 1},
		{`{"a":1 "b":2}`, 7},
		{`[1,]`, 3},
		{`[1 2]`, 3},
		{`[`, 1},
		{`"abc`, 4},
		{`"a\x"`, 3},
		{`"\u12g4"`, 5},
		{"\"a\x01\"", 2},
		{`01`, 1},
		{`1.`, 2},
		{`1.e5`, 2},
		{`1e`, 2},
		{`1e+`, 3},
		{`-`, 1},
		{`-a`, 1},
		{`+1`, 0},
		{`.5`, 0},
		{`tru`, 0},
		{`nulL`, 0},
		{`1 2`, 2},
		{`{} x`, 3},
		{"\ufeff1", 0},
	} {
		dst := []byte("prefix")
		out, err := Append(dst, []byte(tc.in))
		var se *SyntaxError
		if assert.True(t, errors.As(err, &se), "Append(%q) error %v", tc.in, err) {
			assert.Equal(t, tc.offset, se.Offset, "Append(%q): %v", tc.in, err)
			assert.Contains(t, se.Error(), fmt.Sprintf("offset %d", tc.offset))
		}
		assert.Equal(t, "prefix", string(out))
		assert.False(t, json.Valid([]byte(tc.in)), tc.in)
	}
}

func TestDepthLimit(t *testing.T) {
	ok := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	deep := "[" + ok + "]"
	require.True(t, json.Valid([]byte(ok)))
	require.False(t, json.Valid([]byte(deep)))
	_, err := Append(nil, []byte(ok))
	assert.NoError(t, err)
	_, err = Append(nil, []byte(deep))
	assert.Error(t, err)
	deepObject := strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1)
	_, err = Append(nil, []byte(deepObject))
	assert.Error(t, err)
}

func TestAppendKeepsPrefix(t *testing.T) {
	out, err := Append([]byte(`{"x":`), []byte(`{"b":1,"a":[true]}`))
	require.NoError(t, err)
	assert.Equal(t, `{"x":{"a":[true],"b":1}`, string(out))
}

func TestManyMembers(t *testing.T) {
	// Enough members to sort on the heap, in reverse order, with
	// duplicates.
	var b strings.Builder
	var want strings.Builder
	b.WriteString("{")
	want.WriteString("{")
	for i := 40; i >= 0; i-- {
		fmt.Fprintf(&b, `"k%02d":%d,`, i, i)
	}
	b.WriteString(`"k07":"last"}`)
	for i := 0; i <= 40; i++ {
		if i > 0 {
			want.WriteString(",")
		}
		if i == 7 {
			want.WriteString(`"k07":"last"`)
			continue
		}
		fmt.Fprintf(&want, `"k%02d":%d`, i, i)
	}
	want.WriteString("}")
	assert.Equal(t, want.String(), canonical(t, b.String()))
	tight, err := Append(make([]byte, 0, want.Len()), []byte(b.String()))
	require.NoError(t, err)
	assert.Equal(t, want.String(), string(tight))
}

func TestRespelledInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, src := range canonicalSeeds {
		want := canonical(t, src)
		v := decode(t, []byte(src))
		for range 20 {
			alt := respell(v, rng)
			assert.Equal(t, want, canonical(t, string(alt)), "respelled %s as %s", src, alt)
		}
	}
}

func TestAllocations(t *testing.T) {
	src := []byte(`{"units":"metric","days":3,"city":"Paris","tags":["a","b"],"geo":{"lon":2.35,"lat":48.85},"flag":true,"note":null,"n":-0.50e1,"esc":"caf\u00e9","k9":9,"k8":8,"k7":7,"k6":6,"k5":5,"k4":4,"k3":3}`)
	buf := make([]byte, 0, 2*len(src))
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if _, err = Append(buf[:0], src); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
	// Exactly the capacity the output needs is enough.
	out := canonical(t, string(src))
	tight := make([]byte, 0, len(out))
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := Append(tight[:0], src); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

var canonicalSeeds = []string{
	`{"city":"Paris","days":3,"units":"metric"}`,
	`{"b":[1,2.50,{"y":null,"x":true}],"a":"\u00e9\n","a":"last","c":-0}`,
	`[1e2,0.001,-1.5e-9,123456789012345678901234567890,"\ud83d\ude00",false]`,
	`{"\ud83d":1,"\u0000":"\u001f","z":{"z":{"z":{}}}}`,
	`"plain"`,
	`-12.5e+3`,
	`{"k16":16,"k15":15,"k14":14,"k13":13,"k12":12,"k11":11,"k10":10,"k9":9,"k8":8,"k7":7,"k6":6,"k5":5,"k4":4,"k3":3,"k2":2,"k1":1,"k0":0}`,
	"{\"\xff\":1,\"\xfe\":2,\"a\xc3\":[\"\xed\xa0\x80\"]}",
}

// decode decodes JSON the way the property checks compare values.
func decode(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

// sameValue reports whether two decoded values are equal, comparing numbers
// exactly.
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, x := range a {
			if y, ok := b[k]; !ok || !sameValue(x, y) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		return ok && sameNumber(string(a), string(b))
	default:
		return a == b
	}
}

// sameNumber compares two JSON numbers exactly: with big.Rat when the
// exponents are small enough for it to be quick, otherwise as a big integer
// mantissa and an exponent.
func sameNumber(a, b string) bool {
	if smallExponent(a) && smallExponent(b) {
		x, okx := new(big.Rat).SetString(a)
		y, oky := new(big.Rat).SetString(b)
		if okx && oky {
			return x.Cmp(y) == 0
		}
	}
	ma, ea := scaled(a)
	mb, eb := scaled(b)
	return ma.Cmp(mb) == 0 && (ma.Sign() == 0 || ea.Cmp(eb) == 0)
}

// smallExponent reports whether the number s has a written exponent of at
// most 10000 in magnitude and a mantissa of at most 10000 digits.
func smallExponent(s string) bool {
	mant, exp, ok := strings.Cut(strings.ToLower(s), "e")
	if len(mant) > 10000 {
		return false
	}
	if !ok {
		return true
	}
	e, err := strconv.Atoi(exp)
	return err == nil && e >= -10000 && e <= 10000
}

// scaled returns m and e with the value of s equal to m × 10^e and m not a
// multiple of 10.
func scaled(s string) (*big.Int, *big.Int) {
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	m, _ := new(big.Int).SetString(intPart+frac, 10)
	e := big.NewInt(0)
	if exp != "" {
		e.SetString(strings.TrimPrefix(exp, "+"), 10)
	}
	e.Sub(e, big.NewInt(int64(len(frac))))
	ten := big.NewInt(10)
	for m.Sign() != 0 {
		q, r := new(big.Int).QuoRem(m, ten, new(big.Int))
		if r.Sign() != 0 {
			break
		}
		m = q
		e.Add(e, big.NewInt(1))
	}
	return m, e
}

// respell writes v as different but equivalent JSON: members in a random
// order, random whitespace, some characters escaped, and numbers written
// differently.
func respell(v any, rng *rand.Rand) []byte {
	var b []byte
	space := func() {
		for range rng.IntN(3) {
			b = append(b, " \t\n\r"[rng.IntN(4)])
		}
	}
	var write func(v any)
	write = func(v any) {
		space()
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			b = append(b, '{')
			for i, k := range keys {
				if i > 0 {
					b = append(b, ',')
				}
				space()
				b = respellString(b, k, rng)
				space()
				b = append(b, ':')
				write(v[k])
			}
			space()
			b = append(b, '}')
		case []any:
			b = append(b, '[')
			for i, x := range v {
				if i > 0 {
					b = append(b, ',')
				}
				write(x)
			}
			space()
			b = append(b, ']')
		case string:
			b = respellString(b, v, rng)
		case json.Number:
			b = append(b, respellNumber(string(v), rng)...)
		default:
			out, _ := json.Marshal(v)
			b = append(b, out...)
		}
		space()
	}
	write(v)
	return b
}

func respellString(b []byte, s string, rng *rand.Rand) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || rng.IntN(4) == 0:
			if r >= 0x10000 {
				r1, r2 := utf16.EncodeRune(r)
				b = fmt.Appendf(b, `\u%04X\u%04x`, r1, r2)
			} else {
				b = fmt.Appendf(b, `\u%04x`, r)
			}
		case r == '/' && rng.IntN(2) == 0:
			b = append(b, `\/`...)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

func respellNumber(s string, rng *rand.Rand) string {
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	e := 0
	if hasExp {
		var err error
		if e, err = strconv.Atoi(exp); err != nil || e > 1e9 || e < -1e9 {
			return s
		}
	}
	switch rng.IntN(3) {
	case 0: // a trailing zero in the fraction
		if strings.Contains(mant, ".") {
			mant += "0"
		} else {
			mant += ".0"
		}
	case 1: // m × 10^e = (m × 10) × 10^(e-1)
		if !strings.Contains(mant, ".") && strings.Trim(mant, "-0") != "" {
			mant += "0"
			e--
		}
	}
	if e >= 0 && rng.IntN(2) == 0 {
		return mant + "E+" + strconv.Itoa(e)
	}
	return mant + "e" + strconv.Itoa(e)
}

func ExampleAppend() {
	out, err := Append(nil, []byte(`{ "b": [1.50, 2e3], "a": "caf\u00e9", "b": -0 }`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output: {"a":"café","b":0}
}
