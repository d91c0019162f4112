package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type hostileArgs struct {
	N    int       `json:"n" jsonschema:"minimum=1,maximum=100"`
	Ns   []int     `json:"ns,omitempty" jsonschema:"maximum=100"`
	F    float64   `json:"f,omitempty" jsonschema:"exclusiveMinimum=0"`
	Fs   []float64 `json:"fs,omitempty"`
	Rate float32   `json:"rate,omitempty" jsonschema:"exclusiveMinimum=0"`
}

func hostileTool(t testing.TB, seen *[]hostileArgs) toolset.Tool {
	tool := toolset.NewTool("hostile", "", func(_ context.Context, in hostileArgs) (string, error) {
		if seen != nil {
			*seen = append(*seen, in)
		}
		return "ok", nil
	})
	require.NoError(t, tool.Err())
	return tool
}

// argumentProblems calls tool with args and returns the problems of the
// *ArgumentError it must return.
func argumentProblems(t *testing.T, tool toolset.Tool, args string) []toolset.ArgumentProblem {
	t.Helper()
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(args)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae, args)
	require.NotEmpty(t, ae.Problems)
	assert.Less(t, len(err.Error()), 2000, "message of %.60s", args)
	return ae.Problems
}

func TestHugeExponentIsRefusedCheaply(t *testing.T) {
	tool := hostileTool(t, nil)
	for _, n := range []string{"1e999999", "-1e999999", "1E+999999", "1e-999999", "0.5e-999999", "1" + strings.Repeat("0", 500)} {
		p := argumentProblems(t, tool, `{"n":`+n+`}`)
		assert.Equal(t, "n", p[0].Field, n)
		assert.Contains(t, p[0].Message, "out of range", n)
	}
	p := argumentProblems(t, tool, `{"n":5,"ns":[1,2,1e999999]}`)
	assert.Equal(t, "ns[2]", p[0].Field)
}

// A problem quotes at most a short piece of what the model sent: a 40-byte
// argument once produced a message of a million digits.
func TestArgumentErrorQuotesAreCapped(t *testing.T) {
	tool := hostileTool(t, nil)
	p := argumentProblems(t, tool, `{"n":1e400}`)
	assert.Less(t, len(p[0].Message), 300)
	p = argumentProblems(t, tool, `{"n":`+strings.Repeat("9", 390)+`}`)
	assert.Less(t, len(p[0].Message), 300)

	long := strings.Repeat("x", 100_000)
	schema := &jsonschema.Schema{Extras: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"code": map[string]any{"type": "string", "pattern": "^[A-Z]+$"},
			"c":    map[string]any{"const": "fixed"},
			"e":    map[string]any{"enum": []any{"a", "b"}},
		},
		"additionalProperties": false,
	}}
	raw := toolset.NewRawTool("raw", "", schema, echoHandler)
	require.NoError(t, raw.Err())
	for _, args := range []string{
		`{"code":"` + long + `"}`,
		`{"c":"` + long + `"}`,
		`{"e":{"k":"` + long + `"}}`,
		`{"` + long + `":1}`,
	} {
		argumentProblems(t, raw, args)
	}
	var many strings.Builder
	many.WriteString("{")
	for i := range 5000 {
		fmt.Fprintf(&many, `"f%d":1,`, i)
	}
	many.WriteString(`"code":"A"}`)
	p = argumentProblems(t, raw, many.String())
	assert.LessOrEqual(t, len(p), 21)
	assert.Contains(t, p[len(p)-1].Message, "more problems")
}

// 1e-400 passes "exclusiveMinimum: 0", and a float64 holds it as 0: the
// handler would see the value the schema forbids.
func TestFloatUnderflowIsRefused(t *testing.T) {
	var seen []hostileArgs
	tool := hostileTool(t, &seen)
	for args, field := range map[string]string{
		`{"n":5,"f":1e-400}`:           "f",
		`{"n":5,"f":0.1e-330}`:         "f",
		`{"n":5,"fs":[1,-1e-399]}`:     "fs[1]",
		`{"n":5,"rate":1e-50}`:         "rate",
		`{"n":5,"f":1e-` + "324" + `}`: "f",
	} {
		p := argumentProblems(t, tool, args)
		assert.Equal(t, field, p[0].Field, args)
		assert.Contains(t, p[0].Message, "too close to zero", args)
	}
	assert.Empty(t, seen, "no underflowed value reached the handler")

	// The smallest float64 is held exactly enough: it is above zero.
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"n":5,"f":5e-324,"rate":1e-40,"fs":[0,0.0,-0e-999,1.5]}`)})
	require.NoError(t, err)
	require.Len(t, seen, 1)
	assert.Equal(t, math.SmallestNonzeroFloat64, seen[0].F)
	assert.Greater(t, seen[0].Rate, float32(0))
}

// Numbers the schema allows but the handler's Go type cannot hold are
// refused, naming the field, never rounded or wrapped.
func TestNumbersBeyondTheGoTypeAreRefused(t *testing.T) {
	type widths struct {
		I8  int8    `json:"i8,omitempty"`
		U   uint    `json:"u,omitempty"`
		I64 int64   `json:"i64,omitempty"`
		I   int     `json:"i,omitempty"`
		F   float64 `json:"f,omitempty"`
		F32 float32 `json:"f32,omitempty"`
	}
	var seen []widths
	tool := toolset.NewTool("widths", "", func(_ context.Context, in widths) (string, error) {
		seen = append(seen, in)
		return "ok", nil
	})
	require.NoError(t, tool.Err())
	for args, field := range map[string]string{
		`{"i8":200}`:                  "i8",
		`{"i8":-129}`:                 "i8",
		`{"u":-1}`:                    "u",
		`{"u":-0}`:                    "u",
		`{"i64":9223372036854775808}`: "i64",
		`{"i":1.5}`:                   "i",
		`{"f":1e309}`:                 "f",
		`{"f":-2e308}`:                "f",
		`{"f32":1e39}`:                "f32",
	} {
		p := argumentProblems(t, tool, args)
		assert.Equal(t, field, p[0].Field, args)
	}
	assert.Empty(t, seen)
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"i8":-128,"u":18446744073709551615,"i64":-9223372036854775808,"i":-0,"f":1.7976931348623157e308}`)})
	require.NoError(t, err)
}

// hostileNumbers1KB is about a kilobyte of arguments made of numbers that
// are expensive to weigh exactly.
func hostileNumbers1KB() json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"n":1e999999,"ns":[`)
	forms := []string{"1e999999", "-1e-999999", "1E+99999", strings.Repeat("9", 60) + "e300", "0." + strings.Repeat("0", 40) + "1e-350", "123456789.123456789e-380"}
	for i := 0; b.Len() < 980; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(forms[i%len(forms)])
	}
	b.WriteString(`],"f":1e-400}`)
	return json.RawMessage(b.String())
}

func benchHostile(b *testing.B) {
	tool := hostileTool(b, nil)
	args := hostileNumbers1KB()
	ctx := context.Background()
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Execute(ctx, toolset.ToolCall{Args: args}); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkValidateHostileNumbers1KBUnder1ms validates about a kilobyte of
// hostile numbers (huge and tiny exponents, long mantissas); it must stay
// well under a millisecond per call.
func BenchmarkValidateHostileNumbers1KBUnder1ms(b *testing.B) { benchHostile(b) }

// ordinaryNumbers1KB is about a kilobyte of valid arguments of the same
// shape as hostileNumbers1KB, made of ordinary numbers: what validating
// and decoding a kilobyte of numbers costs.
func ordinaryNumbers1KB() json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"n":50,"ns":[`)
	for i := 0; b.Len() < 980; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d", i*7%100)
	}
	b.WriteString(`],"f":0.5}`)
	return json.RawMessage(b.String())
}

// TestValidateHostileNumbersIsCheap holds hostile numbers to the cost of
// ordinary ones: validation once took over a second on a kilobyte of them
// (a million-digit integer for 1e999999). It compares, in the same test,
// the bytes a call allocates, and the fastest of a few interleaved rounds
// of calls, with those of a kilobyte of ordinary numbers, so that a loaded
// machine slows both alike.
func TestValidateHostileNumbersIsCheap(t *testing.T) {
	tool := hostileTool(t, nil)
	ctx := context.Background()
	hostile, ordinary := hostileNumbers1KB(), ordinaryNumbers1KB()
	require.InDelta(t, len(ordinary), len(hostile), 64, "arguments of one size")
	const calls = 20
	round := func(args json.RawMessage, refused bool) (time.Duration, uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		for range calls {
			_, err := tool.Execute(ctx, toolset.ToolCall{Args: args})
			require.Equal(t, refused, err != nil, "%.40s: %v", args, err)
		}
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		return took / calls, (after.TotalAlloc - before.TotalAlloc) / calls
	}
	round(hostile, true) // warm: the schema compiles on first use
	round(ordinary, false)
	fastest := func(d, best time.Duration) time.Duration {
		if best == 0 || d < best {
			return d
		}
		return best
	}
	var hostileTime, ordinaryTime time.Duration
	var hostileBytes, ordinaryBytes uint64
	for range 5 {
		d, b := round(hostile, true)
		hostileTime, hostileBytes = fastest(d, hostileTime), max(hostileBytes, b)
		d, b = round(ordinary, false)
		ordinaryTime, ordinaryBytes = fastest(d, ordinaryTime), max(ordinaryBytes, b)
	}
	t.Logf("per call: hostile %v, %d bytes; ordinary %v, %d bytes", hostileTime, hostileBytes, ordinaryTime, ordinaryBytes)
	assert.Less(t, hostileBytes, 4*ordinaryBytes+64<<10, "bytes allocated validating 1 KB of hostile numbers")
	assert.Less(t, hostileTime, 10*ordinaryTime+time.Millisecond, "time validating 1 KB of hostile numbers")
}

// A number just below an exclusive bound, written with more digits than a
// float keeps, becomes the bound itself in the handler's field.
func TestFloatRoundingOntoABoundIsRefused(t *testing.T) {
	type shares struct {
		P   float64   `json:"p" jsonschema:"exclusiveMaximum=1"`
		Q   float32   `json:"q,omitempty" jsonschema:"exclusiveMaximum=1"`
		Any any       `json:"any,omitempty"`
		Ps  []float64 `json:"ps,omitempty" jsonschema:"exclusiveMinimum=0"`
	}
	var seen []shares
	tool := toolset.NewTool("share", "", func(_ context.Context, in shares) (string, error) {
		seen = append(seen, in)
		return "ok", nil
	})
	require.NoError(t, tool.Err())
	for args, field := range map[string]string{
		`{"p":0.99999999999999999}`:           "p",
		`{"p":0.5,"q":0.99999999}`:            "q",
		`{"p":0.999999999999999999999999999}`: "p",
	} {
		p := argumentProblems(t, tool, args)
		assert.Equal(t, field, p[0].Field, args)
		assert.Contains(t, p[0].Message, "after rounding", args)
	}
	assert.Empty(t, seen)
	for _, args := range []string{
		`{"p":0.12345678901234567890}`,
		`{"p":0.9999999999999999}`, // 16 digits: still below 1 as a float64
		`{"p":0.5,"q":0.9999999}`,
		`{"p":0.5,"any":1.00000000000000000001,"ps":[1e-300,123456789012345678901234567890]}`,
	} {
		_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(args)})
		require.NoError(t, err, args)
	}
	require.Len(t, seen, 4)
	assert.Less(t, seen[1].P, 1.0)
}

// A key given twice is refused, never handed on: the validator reads the
// last value, while a reader of the raw arguments (a package, an MCP
// server in another language) may act on the first, which nobody checked.
func TestRepeatedKeyIsRefused(t *testing.T) {
	var seen []hostileArgs
	typed := hostileTool(t, &seen)
	var raw []string
	rawTool := toolset.NewRawTool("raw", "", &jsonschema.Schema{Type: "object",
		Properties: nil, AdditionalProperties: jsonschema.TrueSchema},
		func(_ context.Context, args json.RawMessage) (any, error) {
			raw = append(raw, string(args))
			return "ok", nil
		})
	require.NoError(t, rawTool.Err())
	for _, tc := range []struct{ args, field string }{
		{`{"n":500,"n":5}`, "n"},              // the first out of range, the last valid
		{`{"n":5,"\u006e":5}`, "n"},           // the same key spelt with an escape
		{`{"n":5,"ns":[1],"ns":[2]}`, "ns"},   // a field the schema does not require
		{`{"n":5,"fs":[1],"x":1,"x":2}`, "x"}, // an unknown key, twice
	} {
		p := argumentProblems(t, typed, tc.args)
		assert.Equal(t, tc.field, p[0].Field, tc.args)
		assert.Contains(t, p[0].Message, "more than once", tc.args)
	}
	assert.Empty(t, seen, "the handler ran on arguments with a repeated key")
	for _, tc := range []struct{ args, field string }{
		{`{"cmd":"ls","cmd":"rm -rf /"}`, "cmd"},
		{`{"a":{"b":1,"b":2}}`, "a.b"},
		{`{"a":[{"c":1},{"c":1,"c":2}]}`, "a[1].c"},
	} {
		p := argumentProblems(t, rawTool, tc.args)
		assert.Equal(t, tc.field, p[0].Field, tc.args)
	}
	assert.Empty(t, raw, "a raw tool was handed a repeated key")
	// The same keys in different objects are not repeated.
	_, err := rawTool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"a":{"b":1},"c":{"b":1},"b":[{"b":1},{"b":2}]}`)})
	require.NoError(t, err)
	assert.Len(t, raw, 1)
}
