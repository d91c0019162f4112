package schema

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullSchema compiles schema with the full validator the way the toolset
// does.
func fullSchema(schema []byte) (*sjs.Schema, error) {
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := sjs.NewCompiler()
	c.DefaultDraft(sjs.Draft2020)
	const url = "mem:///parameters.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// fullAccepts reports the full validator's verdict on args.
func fullAccepts(s *sjs.Schema, args []byte) bool {
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return false
	}
	return s.Validate(doc) == nil
}

const weatherSchema = `{"type":"object","properties":{"city":{"type":"string","description":"City"},"days":{"type":"integer","minimum":1,"maximum":14},"units":{"type":"string","enum":["metric","imperial"]}},"required":["city","days"],"additionalProperties":false}`

// Verdicts of a case: the full validator's, and whether Valid proves it.
const (
	invalid  = iota // rejected (so never proven)
	proven          // accepted and proven
	unproven        // accepted but not proven
)

type validCase struct {
	args string
	want int
}

type schemaCases struct {
	name   string
	schema string
	cases  []validCase
}

var table = []schemaCases{
	{"weather", weatherSchema, []validCase{
		{`{"city":"Paris","days":3,"units":"metric"}`, proven},
		{` { "city" : "Paris" , "days" : 14 } ` + "\n\t\r", proven},
		{`{"days":1,"city":""}`, proven},
		{`{"city":"Paris","days":3,"units":"metric"} x`, invalid},
		{`{"city":"Paris","days":3}}`, invalid},
		{`{"city":"Paris","days":3,}`, invalid},
		{`{"city":"Paris","days":3`, invalid},
		{`{"city":"Paris"}`, invalid},
		{`{"city":"Paris","days":0}`, invalid},
		{`{"city":"Paris","days":15}`, invalid},
		{`{"city":"Paris","days":3.5}`, invalid},
		{`{"city":"Paris","days":"3"}`, invalid},
		{`{"city":"Paris","days":3,"units":"kelvin"}`, invalid},
		{`{"city":"Paris","days":3,"extra":1}`, invalid},
		{`{"city":5,"days":3}`, invalid},
		{`[]`, invalid},
		{`null`, invalid},
		{``, invalid},
		{`   `, invalid},
		{`{"city":"Par\u0069s","days":3}`, proven}, // the escape does not matter
		{`{"ci\u0074y":"Paris","days":3}`, unproven},
		{`{"city":"Paris","days":3,"units":"m\u0065tric"}`, unproven},
		{`{"city":"Paris","days":3.0}`, unproven},
		{`{"city":"Paris","days":3e0}`, unproven},
		{`{"city":"Paris","days":-0}`, invalid},
		{`{"city":"Paris","days":03}`, invalid},
		{`{"city":"Paris","days":3,"days":4}`, unproven},  // a key twice is refused by the caller
		{`{"city":"Paris","days":30,"days":4}`, unproven}, // the last duplicate wins
		{"{\"city\":\"Pa\x01ris\",\"days\":3}", invalid},
		{"{\"city\":\"Pa\xffris\",\"days\":3}", proven},
		{`{"city":"Paris","days":3,"units":"metric"`, invalid},
		{`{"city":"Paris" "days":3}`, invalid},
		{`{"city":"Paris",,"days":3}`, invalid},
		{`{"city":'Paris',"days":3}`, invalid},
		{"\ufeff{\"city\":\"Paris\",\"days\":3}", invalid},
	}},
	{"true", `true`, []validCase{
		{`1`, proven}, {`"x"`, proven}, {`[1,{"a":[null,true,false]}]`, proven},
		{`{"a":"\u00e9\n\"\\\/\b\f\r\t"}`, proven},
		{`[1,]`, invalid}, {`{"a"}`, invalid}, {`{"a":1 "b":2}`, invalid},
		{`tru`, invalid}, {`nul`, invalid}, {`falsey`, invalid}, {`"\x"`, invalid},
		{`"\u12g4"`, invalid}, {`"abc`, invalid}, {`01`, invalid}, {`1.`, invalid},
		{`.5`, invalid}, {`1e`, invalid}, {`-`, invalid}, {`+1`, invalid},
		{`1 2`, invalid}, {`[`, invalid}, {`]`, invalid}, {`{`, invalid},
		{`NaN`, invalid}, {`1e999999999`, unproven}, {`1e-400`, unproven}, {`"\ud800"`, proven},
		{`1e-199`, proven}, {"1" + strings.Repeat("0", 199), proven}, {"1" + strings.Repeat("0", 200), unproven},
		{strings.Repeat("[", 500) + strings.Repeat("]", 500), proven},
		{strings.Repeat("[", 2000) + strings.Repeat("]", 2000), unproven},
	}},
	{"false", `false`, []validCase{{`1`, invalid}, {`{}`, invalid}}},
	{"empty", `{}`, []validCase{{`{"a":1}`, proven}, {`"x"`, proven}, {`[`, invalid}}},
	{"type names", `{"type":["null","boolean","object"]}`, []validCase{
		{`null`, proven}, {`true`, proven}, {`false`, proven}, {`{}`, proven},
		{`1`, invalid}, {`"s"`, invalid}, {`[]`, invalid},
	}},
	{"type number", `{"type":"number"}`, []validCase{
		{`1`, proven}, {`-1.5e-3`, proven}, {`1E+2`, proven}, {`"1"`, invalid},
	}},
	{"type integer", `{"type":"integer"}`, []validCase{
		{`1`, proven}, {`-0`, proven}, {`123456789012345678901234567890`, proven},
		{`1.5`, invalid}, {`1.0`, unproven}, {`1e2`, unproven}, {`true`, invalid},
	}},
	{"type string array", `{"type":["string","array"]}`, []validCase{
		{`"a"`, proven}, {`[1]`, proven}, {`{}`, invalid}, {`1`, invalid},
	}},
	{"properties", `{"properties":{"a":{"type":"integer"},"b":{"properties":{"c":{"type":"string"}}}}}`, []validCase{
		{`{"a":1,"b":{"c":"x"},"z":[]}`, proven},
		{`{"b":{"c":1}}`, invalid},
		{`{"a":"1"}`, invalid},
		{`[1]`, proven},
		{`{"\u0061":"1"}`, invalid},
		{`{"\u0062":{}}`, unproven},
		{"{\"\xff\":1}", unproven},
		{`{"é":1}`, proven},
	}},
	{"required", `{"required":["a","b"],"properties":{"a":true}}`, []validCase{
		{`{"a":1,"b":2}`, proven}, {`{"b":2,"a":null,"c":3}`, proven},
		{`{"a":1}`, invalid}, {`{}`, invalid}, {`"x"`, proven},
		{`{"a":1,"\u0062":2}`, unproven},
	}},
	{"additionalProperties false", `{"properties":{"a":{}},"additionalProperties":false}`, []validCase{
		{`{"a":1}`, proven}, {`{}`, proven}, {`{"b":1}`, invalid}, {`{"\u0061":1}`, unproven},
	}},
	{"additionalProperties schema", `{"properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer"}}`, []validCase{
		{`{"a":"x","b":1,"c":2}`, proven}, {`{"b":"x"}`, invalid}, {`{"a":1}`, invalid},
	}},
	{"additionalProperties only", `{"additionalProperties":{"type":"integer"}}`, []validCase{
		{`{"b":1,"\u00e9":2}`, proven}, {`{"b":"x"}`, invalid},
	}},
	{"many properties", manyPropsSchema(12), []validCase{
		{`{"p0":0,"p5":5,"p11":11,"p3":3}`, proven},
		{`{"p0":0,"p5":"x","p11":11,"p3":3}`, invalid},
		{`{"p0":0,"p12":1,"p3":3}`, invalid},
		{`{"p0":0}`, invalid},
	}},
	{"items", `{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}`, []validCase{
		{`[]`, proven}, {`[{"n":1},{"n":2}]`, proven}, {`[{"n":1},{}]`, invalid},
		{`[{"n":1},]`, invalid}, {`[1]`, invalid},
	}},
	{"items false", `{"items":false}`, []validCase{{`[]`, proven}, {`[1]`, invalid}, {`{}`, proven}}},
	{"enum", `{"enum":["a","é",1,2.5,true,null,{"x":1},[1],"q\"t"]}`, []validCase{
		{`"a"`, proven}, {`"é"`, proven}, {`1`, proven}, {`1.0`, proven}, {`10e-1`, proven},
		{`2.50`, proven}, {`25e-1`, proven}, {`true`, proven}, {`null`, proven},
		{`"q\"t"`, unproven}, {`"\u0061"`, unproven}, {`{"x":1}`, unproven}, {`[1]`, unproven},
		{`"b"`, invalid}, {`2`, invalid}, {`false`, invalid}, {`[2]`, invalid}, {`"A"`, invalid},
	}},
	{"enum zero", `{"enum":[0]}`, []validCase{{`-0`, proven}, {`0.0`, proven}, {`0e5`, proven}, {`1`, invalid}}},
	{"enum and const", `{"enum":[1,2,3],"const":2}`, []validCase{{`2`, proven}, {`1`, invalid}, {`4`, invalid}}},
	{"const", `{"properties":{"s":{"const":"x"},"n":{"const":-10},"z":{"const":null},"b":{"const":false}}}`, []validCase{
		{`{"s":"x","n":-10,"z":null,"b":false}`, proven},
		{`{"n":-1e1}`, proven}, {`{"n":-10.00}`, proven},
		{`{"s":"y"}`, invalid}, {`{"n":10}`, invalid}, {`{"z":0}`, invalid}, {`{"b":true}`, invalid},
	}},
	{"const object", `{"const":{"a":1}}`, []validCase{{`{"a":1}`, unproven}, {`{"a":2}`, invalid}, {`1`, invalid}}},
	{"minimum maximum", `{"minimum":-1.5,"maximum":100}`, []validCase{
		{`-1.5`, proven}, {`100`, proven}, {`1e2`, proven}, {`0.00001`, proven}, {`-15e-1`, proven},
		{`-1.50000000001`, invalid}, {`100.0000001`, invalid}, {`1e3`, invalid}, {`"x"`, proven},
	}},
	{"exclusive bounds", `{"exclusiveMinimum":0,"exclusiveMaximum":1}`, []validCase{
		{`0.5`, proven}, {`1e-100`, proven}, {`0.9999999999999999999999999`, proven},
		{`0`, invalid}, {`-0`, invalid}, {`1`, invalid}, {`1.0`, invalid},
	}},
	{"large bounds", `{"type":"integer","minimum":-9223372036854775809,"maximum":18446744073709551616}`, []validCase{
		{`-9223372036854775809`, proven}, {`18446744073709551616`, proven}, {`0`, proven},
		{`-9223372036854775810`, invalid}, {`18446744073709551617`, invalid},
		{`123456789012345678901234567890123456789012345`, invalid},
		{`1234567890123456789012345678901234567890123456789`, invalid},
	}},
	{"long numbers", `{"minimum":0}`, []validCase{
		{`0.` + strings.Repeat("0", 50) + `1`, proven},
		{`1` + strings.Repeat("0", 60), proven},
		{`1.` + strings.Repeat("1", 60), unproven},
		{`1e100001`, unproven},
		{`1` + strings.Repeat("0", 1000), unproven},
		{`-1e-5`, invalid},
	}},
	{"minLength maxLength", `{"minLength":2,"maxLength":3}`, []validCase{
		{`"ab"`, proven}, {`"abc"`, proven}, {`"éé"`, proven}, {`"日本語"`, proven}, {`"😀😀"`, proven},
		{`"a"`, invalid}, {`"abcd"`, invalid}, {`"é"`, invalid}, {`"日本語x"`, invalid},
		{`"a\n"`, unproven}, {"\"a\xff\"", unproven}, {`1`, proven},
	}},
	{"pattern", `{"pattern":"^[a-z]+\\d$"}`, []validCase{
		{`"abc1"`, proven}, {`"abc"`, invalid}, {`"ABC1"`, invalid}, {`"ab\u00631"`, unproven}, {`true`, proven},
	}},
	{"pattern unanchored", `{"pattern":"é"}`, []validCase{{`"café"`, proven}, {`"cafe"`, invalid}}},
	{"minItems maxItems", `{"minItems":1,"maxItems":2}`, []validCase{
		{`[1]`, proven}, {`[1,[]]`, proven}, {`[]`, invalid}, {`[1,2,3]`, invalid}, {`"x"`, proven},
	}},
	{"uniqueItems", `{"uniqueItems":true}`, []validCase{
		{`[]`, proven}, {`[1]`, proven}, {`[{"a":1}]`, proven},
		{`[1,2,"1",true,false,null,"a",1.5]`, proven},
		{`[1,1]`, invalid}, {`[1,1.0]`, invalid}, {`[0,-0]`, invalid}, {`["a","a"]`, invalid},
		{`[true,true]`, invalid}, {`[null,null]`, invalid}, {`[10,1e1]`, invalid},
		{`[{"a":1},{"a":2}]`, unproven}, {`["a","\u0062"]`, unproven},
		{`[` + strings.Repeat(`1,`, 10) + `2]`, invalid},
		{`[` + numberList(64) + `]`, proven},
		{`[` + numberList(65) + `]`, unproven},
	}},
	{"minProperties maxProperties", `{"minProperties":2,"maxProperties":3}`, []validCase{
		{`{"a":1,"b":2}`, proven}, {`{"a":1,"b":2,"c":3}`, proven},
		{`{"a":1}`, invalid}, {`{"a":1,"b":2,"c":3,"d":4}`, invalid},
		{`{"a":1,"a":2}`, invalid}, {`{"a":1,"b":2,"c":3,"c":4}`, unproven},
		{`{"a":1,"\u0062":2}`, unproven}, {`[]`, proven},
	}},
	{"anyOf", `{"anyOf":[{"type":"string","maxLength":2},{"type":"integer"},{"type":"number","minimum":10}]}`, []validCase{
		{`"ab"`, proven}, {`3`, proven}, {`10.5`, proven}, {`1e1`, proven},
		{`"abc"`, invalid}, {`9.5`, invalid}, {`[]`, invalid}, {`9e0`, unproven},
	}},
	{"anyOf with true", `{"anyOf":[{"type":"string"},true]}`, []validCase{{`1`, proven}}},
	{"anyOf nested", `{"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"k":{"const":"a"}},"required":["k"]},{"type":"object","properties":{"k":{"const":"b"},"n":{"type":"integer"}},"required":["k","n"]}]}}}`, []validCase{
		{`{"v":{"k":"a"}}`, proven}, {`{"v":{"k":"b","n":1}}`, proven},
		{`{"v":{"k":"b"}}`, invalid}, {`{"v":{"k":"c"}}`, invalid},
	}},
	{"oneOf disjoint", `{"oneOf":[{"type":"string"},{"type":["integer","null"],"minimum":0},{"type":"array","items":{"type":"string"}}]}`, []validCase{
		{`"a"`, proven}, {`5`, proven}, {`null`, proven}, {`["a"]`, proven},
		{`-1`, invalid}, {`1.5`, invalid}, {`[1]`, invalid}, {`{}`, invalid},
	}},
	{"annotations and unknown keywords", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://example.com/tools/weather.json","title":"t","description":"d","default":{"a":1},"examples":[1,"x"],"deprecated":true,"readOnly":false,"writeOnly":false,"$comment":"c","format":"email","contentEncoding":"base64","contentMediaType":"application/json","x-unknown":{"$ref":"#/nowhere","type":"integer"},"$foo":1,"type":"string"}`, []validCase{
		{`"not an email"`, proven}, {`"!!"`, proven}, {`1`, invalid},
	}},
	{"http $id", `{"$id":"https://example.com/tools/weather.json#","type":"string"}`, []validCase{{`"x"`, proven}}},
}

func manyPropsSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"integer","const":%d}`, i, i)
	}
	b.WriteString(`},"required":["p0","p3"],"additionalProperties":false}`)
	return b.String()
}

func numberList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i)
	}
	return strings.Join(parts, ",")
}

func TestValidAgainstFullValidator(t *testing.T) {
	for _, sc := range table {
		t.Run(sc.name, func(t *testing.T) {
			c, err := compileFast([]byte(sc.schema))
			require.NoError(t, err)
			require.True(t, c.Fast(), "schema should be in the fast subset")
			full, err := fullSchema([]byte(sc.schema))
			require.NoError(t, err, "the full validator must compile every fast schema")
			for _, tc := range sc.cases {
				args := []byte(tc.args)
				accepted := fullAccepts(full, args)
				got := c.Valid(args)
				if got {
					require.True(t, accepted, "unsound: %s proven valid but the full validator rejects it", tc.args)
				}
				assert.Equal(t, tc.want != invalid, accepted, "full validator's verdict on %s", tc.args)
				assert.Equal(t, tc.want == proven, got, "Valid(%s)", tc.args)
			}
		})
	}
}

func TestUnsupported(t *testing.T) {
	for _, schema := range []string{
		`{"$id":"a.json"}`, // refused by the reference rule, so never proven
		`{"$id":"tools/weather.json#","type":"string"}`,
		`{"$ref":"#/$defs/a","$defs":{"a":{}}}`,
		`{"$defs":{"a":{}}}`,
		`{"definitions":{"a":{}}}`,
		`{"allOf":[{}]}`,
		`{"not":{}}`,
		`{"if":{},"then":{},"else":{}}`,
		`{"dependentRequired":{"a":["b"]}}`,
		`{"dependentSchemas":{"a":{}}}`,
		`{"dependencies":{"a":["b"]}}`,
		`{"prefixItems":[{}]}`,
		`{"contains":{}}`,
		`{"patternProperties":{"a":{}}}`,
		`{"propertyNames":{}}`,
		`{"multipleOf":2}`,
		`{"unevaluatedProperties":false}`,
		`{"unevaluatedItems":false}`,
		`{"$anchor":"a"}`,
		`{"$dynamicAnchor":"a"}`,
		`{"properties":{"a":{"$ref":"#"}}}`,
		`{"items":{"allOf":[true]}}`,
		`{"anyOf":[{"not":{}}]}`,
		`{"oneOf":[{"type":"string"},{"type":"string","minLength":2}]}`,
		`{"oneOf":[{"type":"integer"},{"type":"number"}]}`,
		`{"oneOf":[{"type":"string"},{"minLength":2}]}`,
		`{"oneOf":[{"type":"string"},true]}`,
		`{"properties":{"a":{"$id":"https://example.com/a"}}}`,
		`{"properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`,
		`{"$id":"https://json-schema.org/draft/2020-12/schema"}`,
		`{"$id":"#frag"}`,
		`{"$id":"a b"}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#"}`,
		`{"minLength":1e10}`,
		`{"minimum":1e1000000}`,
	} {
		c, err := compileFast([]byte(schema))
		require.NoError(t, err, schema)
		assert.False(t, c.Fast(), schema)
		assert.False(t, c.Valid([]byte(`{}`)), schema)
	}
}

// TestRejectedByFullValidator lists schemas the full validator refuses to
// compile: they must not be fast, or Valid would accept arguments for a
// tool whose schema is broken.
func TestRejectedByFullValidator(t *testing.T) {
	for _, schema := range []string{
		`{"type":"strin"}`,
		`{"type":[]}`,
		`{"type":["string","string"]}`,
		`{"type":5}`,
		`{"required":["a","a"]}`,
		`{"required":"a"}`,
		`{"required":[1]}`,
		`{"minLength":-1}`,
		`{"minLength":1.5}`,
		`{"maxItems":"2"}`,
		`{"minimum":"0"}`,
		`{"pattern":"("}`,
		`{"pattern":"(?<=a)"}`,
		`{"enum":1}`,
		`{"uniqueItems":1}`,
		`{"anyOf":[]}`,
		`{"anyOf":{}}`,
		`{"oneOf":[]}`,
		`{"properties":[]}`,
		`{"properties":{"a":1}}`,
		`{"items":[{}]}`,
		`{"additionalProperties":"no"}`,
		`{"title":1}`,
		`{"description":null}`,
		`{"examples":{}}`,
		`{"deprecated":"yes"}`,
		`{"format":1}`,
		`{"$comment":1}`,
		`{"$schema":"https://example.com/nope"}`,
		`{"$id":"%zz"}`,
	} {
		_, err := fullSchema([]byte(schema))
		assert.Error(t, err, "the full validator accepts %s", schema)
		c, err := compileFast([]byte(schema))
		require.NoError(t, err, schema)
		assert.False(t, c.Fast(), schema)
	}
}

func TestValidAllocations(t *testing.T) {
	for _, tc := range []struct{ schema, args string }{
		{weatherSchema, `{"city":"Paris","days":3,"units":"metric"}`},
		{fuzzSchemas[1], `{"items":[{"sku":"ABC-1","qty":2,"price":9.99}],"note":null}`},
		{fuzzSchemas[5], `["a","b",1,2.5,true]`},
		{manyPropsSchema(12), `{"p0":0,"p5":5,"p11":11,"p3":3}`},
	} {
		c, err := compileFast([]byte(tc.schema))
		require.NoError(t, err)
		args := []byte(tc.args)
		require.True(t, c.Valid(args), tc.args)
		allocs := testing.AllocsPerRun(100, func() { c.Valid(args) })
		assert.Zero(t, allocs, tc.args)
	}
}

func TestConcurrentUse(t *testing.T) {
	c, err := compileFast([]byte(fuzzSchemas[1]))
	require.NoError(t, err)
	args := []byte(`{"items":[{"sku":"ABC-1","qty":2}]}`)
	done := make(chan bool)
	for range 4 {
		go func() {
			ok := true
			for range 200 {
				ok = ok && c.Valid(args)
			}
			done <- ok
		}()
	}
	for range 4 {
		assert.True(t, <-done)
	}
}

func Example_fastCheck() {
	c, err := compileFast([]byte(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Fast(), c.Valid([]byte(`{"n":3}`)), c.Valid([]byte(`{"n":0}`)), c.Valid([]byte(`{"n":3.0}`)))
	// Output: true true false false
}

// Counting an object's keys reads past every member's value, even one the
// fast path cannot prove (a number of 400 digits in an array here), rather
// than taking the rest of that value for keys.
func TestDistinctKeysReadsPastValuesItCannotProve(t *testing.T) {
	big := strings.Repeat("9", 400)
	for in, want := range map[string]int{
		`{"a":[` + big + `,{"b":1}],"c":2,"a":3}`:   2,
		`{"a":{"x":[1e999,[2]]},"b":[` + big + `]}`: 2,
		`{"a":1,"b":2}`: 2,
	} {
		if got := distinctKeys([]byte(in)); got != want {
			t.Errorf("distinctKeys(%.40s…) = %d, want %d", in, got, want)
		}
	}
	// A schema whose keys the fast path is unsure of, with such a value:
	// not proven, never a panic.
	c, err := compileFast([]byte(`{"type":"object","additionalProperties":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Valid([]byte(`{"a":[` + big + `,{"b":1}],"c":2}`))
}
