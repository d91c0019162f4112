package schema

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRandomSchemas compares the checker with the full validator on
// generated schemas (in and around the subset, some of them invalid) and
// generated arguments (most of them aimed at the schema).
func TestRandomSchemas(t *testing.T) {
	rounds := 3000
	switch {
	case testing.Short():
		rounds = 300
	case raceEnabled:
		// One goroutine: the race detector has nothing to find, and the
		// suite runs without it too, with every round.
		rounds = 1000
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var fast, proven, accepted int
	for range rounds {
		g := generator{rng: rng}
		schema, err := json.Marshal(g.schema(3))
		require.NoError(t, err)
		c, err := compileFast(schema)
		require.NoError(t, err)
		full, fullErr := fullSchema(schema)
		if !c.Fast() {
			continue
		}
		fast++
		require.NoError(t, fullErr, "fast schema %s is rejected by the full validator", schema)
		var v any
		require.NoError(t, json.Unmarshal(schema, &v))
		for range 20 {
			args := g.spell(g.value(v, 3))
			ok := fullAccepts(full, args)
			if c.Valid(args) {
				proven++
				require.True(t, ok, "proved %s against %s, which the full validator rejects", args, schema)
			}
			if ok {
				accepted++
			}
		}
	}
	t.Logf("%d schemas, %d fast; %d arguments accepted, %d of them proven", rounds, fast, accepted, proven)
	assert.Greater(t, fast, rounds/3)
	assert.Greater(t, proven, accepted/3)
}

type generator struct{ rng *rand.Rand }

func (g generator) pick(options ...any) any { return options[g.rng.IntN(len(options))] }

func (g generator) chance(p float64) bool { return g.rng.Float64() < p }

var (
	names   = []string{"a", "b", "c", "é", "a b", ""}
	types   = []string{"null", "boolean", "integer", "number", "string", "array", "object"}
	numbers = []any{json.Number("0"), json.Number("1"), json.Number("-1"), json.Number("2.5"), json.Number("1e2"), json.Number("10"), json.Number("-0.5"), json.Number("3")}
)

func (g generator) literal() any {
	return g.pick(json.Number("1"), json.Number("1.0"), json.Number("2"), json.Number("-0"), json.Number("2.5"),
		"a", "é", "", "x y", true, false, nil, map[string]any{"a": json.Number("1")}, []any{json.Number("1")})
}

func (g generator) count() any {
	if g.chance(0.03) {
		return g.pick(json.Number("-1"), json.Number("1.5"), "2")
	}
	return json.Number(fmt.Sprint(g.rng.IntN(4)))
}

// schema returns a random schema, mostly within the subset.
func (g generator) schema(depth int) any {
	if g.chance(0.08) {
		return g.chance(0.7)
	}
	s := map[string]any{}
	if g.chance(0.6) {
		if g.chance(0.7) {
			s["type"] = types[g.rng.IntN(len(types))]
		} else {
			var ts []any
			for range 1 + g.rng.IntN(3) {
				ts = append(ts, types[g.rng.IntN(len(types))])
			}
			s["type"] = ts
		}
	}
	for range g.rng.IntN(5) {
		switch g.rng.IntN(22) {
		case 0, 1:
			if depth > 0 {
				props := map[string]any{}
				for range 1 + g.rng.IntN(3) {
					props[names[g.rng.IntN(len(names))]] = g.schema(depth - 1)
				}
				s["properties"] = props
			}
		case 2:
			var req []any
			for range 1 + g.rng.IntN(3) {
				req = append(req, names[g.rng.IntN(len(names))])
			}
			s["required"] = req
		case 3:
			if depth > 0 && g.chance(0.5) {
				s["additionalProperties"] = g.schema(depth - 1)
			} else {
				s["additionalProperties"] = g.chance(0.5)
			}
		case 4:
			if depth > 0 {
				s["items"] = g.schema(depth - 1)
			}
		case 5:
			var e []any
			for range 1 + g.rng.IntN(4) {
				e = append(e, g.literal())
			}
			s["enum"] = e
		case 6:
			s["const"] = g.literal()
		case 7:
			s[g.pick("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum").(string)] = numbers[g.rng.IntN(len(numbers))]
		case 8:
			s[g.pick("minLength", "maxLength").(string)] = g.count()
		case 9:
			s[g.pick("minItems", "maxItems").(string)] = g.count()
		case 10:
			s[g.pick("minProperties", "maxProperties").(string)] = g.count()
		case 11:
			s["pattern"] = g.pick("^a", "b$", "é", "^\\d+$", "^.{2}$", "(")
		case 12:
			s["uniqueItems"] = g.chance(0.8)
		case 13, 14:
			if depth > 0 {
				kw := g.pick("anyOf", "oneOf").(string)
				var branches []any
				for range 1 + g.rng.IntN(3) {
					b := g.schema(depth - 1)
					if m, ok := b.(map[string]any); ok && kw == "oneOf" && g.chance(0.8) {
						m["type"] = types[g.rng.IntN(len(types))]
					}
					branches = append(branches, b)
				}
				s[kw] = branches
			}
		case 15:
			s[g.pick("title", "description", "$comment", "format").(string)] = g.pick("text", "email", json.Number("1"))
		case 16:
			s[g.pick("default", "examples", "x-extra").(string)] = g.pick([]any{json.Number("1")}, map[string]any{"$ref": "#/nowhere"}, "x")
		case 17:
			s[g.pick("deprecated", "readOnly", "writeOnly").(string)] = g.pick(true, false, "yes")
		case 18:
			if g.chance(0.3) {
				s[g.pick("allOf", "not", "multipleOf", "$ref", "contains", "patternProperties").(string)] = g.pick(json.Number("2"), map[string]any{}, []any{true})
			}
		case 19:
			s["type"] = g.pick("string", "strin", []any{}, []any{"string", "string"})
		default:
			if g.chance(0.5) {
				s["maxLength"] = json.Number(fmt.Sprint(1 + g.rng.IntN(3)))
			}
		}
	}
	return s
}

// value returns a random value, aimed at schema when it can tell how.
func (g generator) value(schema any, depth int) any {
	s, _ := schema.(map[string]any)
	if s == nil || g.chance(0.1) {
		return g.anyValue(depth)
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 && g.chance(0.8) {
		return e[g.rng.IntN(len(e))]
	}
	if c, ok := s["const"]; ok && g.chance(0.8) {
		return c
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if bs, ok := s[kw].([]any); ok && len(bs) > 0 && g.chance(0.7) {
			return g.value(bs[g.rng.IntN(len(bs))], depth)
		}
	}
	t := ""
	switch ts := s["type"].(type) {
	case string:
		t = ts
	case []any:
		if len(ts) > 0 {
			t, _ = ts[g.rng.IntN(len(ts))].(string)
		}
	}
	if t == "" {
		switch {
		case s["properties"] != nil || s["required"] != nil:
			t = "object"
		case s["items"] != nil:
			t = "array"
		default:
			t = types[g.rng.IntN(len(types))]
		}
	}
	switch t {
	case "null":
		return nil
	case "boolean":
		return g.chance(0.5)
	case "integer":
		return json.Number(fmt.Sprint(g.rng.IntN(7) - 2))
	case "number":
		return g.pick(numbers...)
	case "string":
		return g.pick("a", "ab", "b", "é", "abc", "12", "a\"b", "x\\y", "\u00e9t\u00e9", "")
	case "array":
		if depth == 0 {
			return []any{}
		}
		var arr []any
		for range g.rng.IntN(4) {
			arr = append(arr, g.value(s["items"], depth-1))
		}
		return arr
	default:
		if depth == 0 {
			return map[string]any{}
		}
		obj := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for name, ps := range props {
			if g.chance(0.7) {
				obj[name] = g.value(ps, depth-1)
			}
		}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok && obj[name] == nil && g.chance(0.9) {
					obj[name] = g.value(props[name], depth-1)
				}
			}
		}
		if g.chance(0.2) {
			obj[names[g.rng.IntN(len(names))]] = g.value(s["additionalProperties"], depth-1)
		}
		return obj
	}
}

func (g generator) anyValue(depth int) any {
	switch k := g.rng.IntN(7); {
	case k == 0 && depth > 0:
		obj := map[string]any{}
		for range g.rng.IntN(3) {
			obj[names[g.rng.IntN(len(names))]] = g.anyValue(depth - 1)
		}
		return obj
	case k == 1 && depth > 0:
		var arr []any
		for range g.rng.IntN(3) {
			arr = append(arr, g.anyValue(depth-1))
		}
		return arr
	default:
		return g.literal()
	}
}

// spell writes v as JSON, sometimes with escapes, duplicate keys,
// whitespace or numbers written differently.
func (g generator) spell(v any) []byte {
	var b strings.Builder
	var write func(v any)
	write = func(v any) {
		if g.chance(0.05) {
			b.WriteString(" ")
		}
		switch v := v.(type) {
		case map[string]any:
			b.WriteByte('{')
			first := true
			for k, x := range v {
				if !first {
					b.WriteByte(',')
				}
				first = false
				if g.chance(0.05) { // an earlier duplicate
					g.writeString(&b, k)
					b.WriteString(`:"dup",`)
				}
				g.writeString(&b, k)
				b.WriteByte(':')
				write(x)
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, x := range v {
				if i > 0 {
					b.WriteByte(',')
				}
				write(x)
			}
			b.WriteByte(']')
		case string:
			g.writeString(&b, v)
		case json.Number:
			s := string(v)
			if g.chance(0.1) {
				s = g.pick(s+"e0", s+".0", "-"+strings.TrimPrefix(s, "-")).(string)
				if strings.Contains(string(v), ".") && strings.HasSuffix(s, ".0") {
					s = string(v) + "0"
				}
			}
			b.WriteString(s)
		default:
			out, _ := json.Marshal(v)
			b.Write(out)
		}
	}
	write(v)
	if g.chance(0.02) {
		b.WriteString("}")
	}
	return []byte(b.String())
}

func (g generator) writeString(b *strings.Builder, s string) {
	if g.chance(0.1) {
		out, _ := json.Marshal(s) // escapes some characters differently
		b.WriteString(strings.ReplaceAll(string(out), "a", `\u0061`))
		return
	}
	out, _ := json.Marshal(s)
	b.Write(out)
}
