package provider

import "github.com/gotoolset/toolset/internal/jsontext"

// Object is a JSON object as [Decode] and [ParseBounded] give it: its
// members in the order the document lists them, a key that occurs twice
// in its first position with its last value (as encoding/json keeps the
// value). Its methods read it (Len, Members, Keys, Lookup, Get) and
// rewrite it (Set, Delete, Rename); [Encode] writes it back.
type Object = jsontext.Object

// Member is one member of an [Object]: Key and Value.
type Member = jsontext.Member

// Decode reads data, which must hold one JSON value and white space around
// it, into nil, bool, [encoding/json.Number], string, []any or *[Object],
// keeping the order of object members. Arrays and objects nested deeper
// than maxDepth are an error, so that hostile input cannot exhaust the
// stack; maxDepth below 1 accepts the depth encoding/json accepts.
func Decode(data []byte, maxDepth int) (any, error) {
	p := jsontext.Parser{Limits: jsontext.Limits{MaxDepth: maxDepth}}
	return p.Parse(data)
}

// Encode writes v, a value as [Decode] gives it, compactly, object
// members in their order.
func Encode(v any) []byte { return jsontext.Append(nil, v) }
