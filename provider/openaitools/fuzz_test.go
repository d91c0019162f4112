package openaitools

import (
	"bytes"
	"encoding/json"
	"github.com/gotoolset/toolset/provider"
	"reflect"
	"testing"
)

// FuzzDecodeJSON checks that the order-keeping decoder accepts exactly what
// encoding/json accepts, and that encoding its value gives back JSON
// equal to the input.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `[]`, `"\u00e9"`, `1e3`, `{"a":1,"a":2}`, `{`, `[1,]`, `{"a":1} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decodeJSON(data)
		if (err == nil) != json.Valid(data) {
			if err != nil && bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) > maxDepth {
				return // nested past our bound
			}
			t.Fatalf("decodeJSON error %v, but json.Valid says %v", err, json.Valid(data))
		}
		if err != nil {
			return
		}
		std, err := decodeStd(data)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeStd(encodeJSON(v))
		if err != nil {
			t.Fatalf("encoded value is not JSON: %v\n%s", err, encodeJSON(v))
		}
		if !reflect.DeepEqual(std, back) {
			t.Fatalf("round trip changed the value:\n%#v\n%#v", std, back)
		}
	})
}

// decodeStd decodes with encoding/json, numbers kept as written.
func decodeStd(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// FuzzStrictSchema checks that any schema is either refused with a
// *StrictError or rewritten to one whose objects are all closed and fully
// required.
func FuzzStrictSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"object","properties":{"c":{"enum":[1,2]}}}}},"required":["a"]}`,
		`{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"$ref":"#/$defs/x"}]}},"$defs":{"x":{"type":"integer"}}}`,
		`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`,
		`{"anyOf":[]}`, `[]`, `{"type":"object","properties":{"a":{"type":[1]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := strictSchema(data)
		if err != nil {
			if _, ok := err.(*StrictError); !ok {
				t.Fatalf("error %T is not a *StrictError: %v", err, err)
			}
			return
		}
		v, err := decodeJSON(out)
		if err != nil {
			t.Fatalf("output is not JSON: %v", err)
		}
		checkClosed(t, v)
		// The rewrite is stable: a strict schema is its own strict form.
		again, err := strictSchema(out)
		if err != nil {
			t.Fatalf("strict output refused: %v\n%s", err, out)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("rewrite not stable:\n%s\n%s", out, again)
		}
	})
}

// checkClosed fails if an object schema in v lacks additionalProperties
// false or does not require every property.
func checkClosed(t *testing.T, v any) {
	switch v := v.(type) {
	case *provider.Object:
		if p, ok := v.Lookup("properties"); ok {
			if props, ok := p.(*provider.Object); ok {
				if ap, _ := v.Lookup("additionalProperties"); ap != false {
					t.Fatalf("object without additionalProperties false: %s", encodeJSON(v))
				}
				req, _ := v.Lookup("required")
				list, _ := req.([]any)
				if len(list) != props.Len() {
					t.Fatalf("object does not require every property: %s", encodeJSON(v))
				}
			}
		}
		for _, k := range v.Keys() {
			checkClosed(t, v.Get(k))
		}
	case []any:
		for _, e := range v {
			checkClosed(t, e)
		}
	}
}

// FuzzDropNulls checks that dropping nulls never breaks valid arguments.
func FuzzDropNulls(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","properties":{"c":{"type":"integer"}}}}}`), []byte(`{"a":null,"b":{"c":null}}`))
	f.Add([]byte(`{"$ref":"#"}`), []byte(`{"a":null}`))
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		out := dropNulls(schema, args)
		if json.Valid(args) && !json.Valid(out) {
			t.Fatalf("valid arguments became invalid: %s -> %s", args, out)
		}
	})
}
