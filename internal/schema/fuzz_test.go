package schema

import (
	"encoding/json"
	"github.com/gotoolset/toolset/internal/jsontext"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// fuzzSchemas cover every keyword of the subset between them.
var fuzzSchemas = []string{
	0:  weatherSchema,
	1:  `{"type":"object","properties":{"items":{"type":"array","minItems":1,"maxItems":5,"items":{"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-\\d+$"},"qty":{"type":"integer","exclusiveMinimum":0,"maximum":100},"price":{"type":"number","minimum":0.01,"exclusiveMaximum":1e6}},"required":["sku","qty"],"additionalProperties":false}},"note":{"type":["string","null"],"maxLength":20}},"required":["items"]}`,
	2:  `{"anyOf":[{"type":"string","minLength":2},{"type":"integer","minimum":-5,"maximum":5},{"type":"array","items":{"type":"boolean"}}]}`,
	3:  `{"type":"object","properties":{"v":{"oneOf":[{"type":"string","enum":["a","b","é"]},{"type":"number","maximum":2.5},{"type":["null","boolean"]}]}}}`,
	4:  `{"type":"object","properties":{"e":{"enum":[1,"1",true,null,1.5,{"a":1},[1],-0,"x\"y"]},"c":{"const":10},"c2":{"const":"ü"}},"minProperties":1,"maxProperties":3}`,
	5:  `{"type":"array","uniqueItems":true,"items":{"type":["string","number","boolean","null"]}}`,
	6:  `{"type":"string","minLength":2,"maxLength":4,"pattern":"^[^x]*$"}`,
	7:  `{"type":"number","minimum":-12345678901234567890.5,"maximum":1e20,"exclusiveMaximum":99999999999999999999.99,"exclusiveMinimum":-1e25}`,
	8:  `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"boolean"},"c":{"type":"null"},"d":{"type":"number"},"e":{"type":"integer"},"f":{"type":"array"},"g":{"type":"object"},"h":{"const":1},"i":{"enum":["x"]}},"required":["a","z"],"additionalProperties":{"type":"integer","maximum":9}}`,
	9:  `{"type":"object","properties":{"t":true,"f":false,"arr":{"type":"array","items":false},"any":{}},"additionalProperties":true}`,
	10: `true`,
	11: `{"type":"integer","minimum":0,"description":"x","format":"int32","x-foo":{"$ref":"#/nope"},"default":1,"examples":[1],"title":"t","$comment":"c","deprecated":false,"readOnly":true,"writeOnly":false,"contentEncoding":"base64","contentMediaType":"text/plain"}`,
	12: `{"type":"object","minProperties":2,"properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"array","uniqueItems":true,"maxItems":3}}`,
}

// FuzzValid checks soundness: whatever Valid proves, the full validator
// accepts.
func FuzzValid(f *testing.F) {
	type pair struct {
		fast *fastChecker
		full *sjs.Schema
	}
	pairs := make([]pair, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		c, err := compileFast([]byte(s))
		if err != nil || !c.Fast() {
			f.Fatalf("schema %d: not fast (%v)", i, err)
		}
		full, err := fullSchema([]byte(s))
		if err != nil {
			f.Fatalf("schema %d: %v", i, err)
		}
		pairs[i] = pair{c, full}
	}
	f.Add(byte(0), []byte(`{"city":"Paris","days":3,"units":"metric"}`))
	f.Add(byte(1), []byte(`{"items":[{"sku":"ABC-12","qty":3,"price":1.5}],"note":"ok"}`))
	f.Fuzz(func(t *testing.T, k byte, args []byte) {
		p := pairs[int(k)%len(pairs)]
		if !p.fast.Valid(args) {
			return
		}
		if !json.Valid(args) {
			t.Fatalf("schema %d: proved malformed JSON %q", int(k)%len(pairs), args)
		}
		if !fullAccepts(p.full, args) {
			t.Fatalf("schema %d: proved %q, which the full validator rejects", int(k)%len(pairs), args)
		}
		if repeated(args) {
			t.Fatalf("schema %d: proved %q, which repeats a key", int(k)%len(pairs), args)
		}
	})
}

// FuzzSchema checks soundness over schemas too: a fast schema compiles in
// the full validator, and what Valid proves against it is accepted.
func FuzzSchema(f *testing.F) {
	for _, s := range fuzzSchemas {
		f.Add([]byte(s), []byte(`{"a":1,"v":"a","items":[{"sku":"ABC-1","qty":1}]}`))
	}
	for _, sc := range table {
		if len(sc.cases) > 0 {
			f.Add([]byte(sc.schema), []byte(sc.cases[0].args))
		}
	}
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		c, err := compileFast(schema)
		if err != nil || !c.Fast() {
			return
		}
		full, err := fullSchema(schema)
		if err != nil {
			t.Fatalf("fast schema %s is rejected by the full validator: %v", schema, err)
		}
		if c.Valid(args) && !fullAccepts(full, args) {
			t.Fatalf("proved %q against %s, which the full validator rejects", args, schema)
		}
		if c.Valid(args) && repeated(args) {
			t.Fatalf("proved %q against %s, which repeats a key", args, schema)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	c, err := compileFast([]byte(weatherSchema))
	if err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"city":"Paris","days":3,"units":"metric"}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if !c.Valid(args) {
			b.Fatal("not proven")
		}
	}
}

// repeated reports whether some object of args, valid JSON, has a key
// twice; the caller refuses such arguments, so they are never proven.
func repeated(args []byte) bool {
	found := false
	p := jsontext.Parser{Duplicate: func(string, int) error { found = true; return nil }}
	if _, err := p.Parse(args); err != nil {
		return false
	}
	return found
}
