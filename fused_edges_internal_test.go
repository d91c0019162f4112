package toolset

import (
	"context"
	"fmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"strings"
	"sync"
	"testing"
)

// fusedEdges has a field of each width the one-pass decode stores.
type fusedEdges struct {
	I   int        `json:"i,omitempty"`
	I8  int8       `json:"i8,omitempty"`
	I16 int16      `json:"i16,omitempty"`
	I32 int32      `json:"i32,omitempty"`
	I64 int64      `json:"i64,omitempty"`
	U   uint       `json:"u,omitempty"`
	U8  uint8      `json:"u8,omitempty"`
	U16 uint16     `json:"u16,omitempty"`
	U32 uint32     `json:"u32,omitempty"`
	U64 uint64     `json:"u64,omitempty"`
	F32 float32    `json:"f32,omitempty"`
	F64 float64    `json:"f64,omitempty"`
	S   string     `json:"s,omitempty"`
	B   bool       `json:"b,omitempty"`
	P   *fusedEdge `json:"p,omitempty"`
	L   []int      `json:"l,omitempty"`
	PS  *[]string  `json:"ps,omitempty"`
	A_B string     `json:"a_b,omitempty"`
	AB  string     `json:"ab,omitempty"`
}

type fusedEdge struct {
	N int    `json:"n,omitempty"`
	T string `json:"t,omitempty"`
}

var fusedEdgeArgs = []string{
	`{"i":-0}`, `{"u":-0}`, `{"f64":-0}`, `{"f64":-0.0}`, `{"i":0}`,
	`{"i8":127}`, `{"i8":-128}`, `{"i8":128}`, `{"i8":-129}`,
	`{"i16":32767}`, `{"i16":-32768}`, `{"i16":32768}`, `{"i16":-32769}`,
	`{"i32":2147483647}`, `{"i32":-2147483648}`, `{"i32":2147483648}`,
	`{"i64":9223372036854775807}`, `{"i64":-9223372036854775808}`, `{"i64":9223372036854775808}`,
	`{"i":9223372036854775807}`, `{"i":-9223372036854775809}`,
	`{"u8":255}`, `{"u8":256}`, `{"u8":-1}`, `{"u16":65535}`, `{"u32":4294967295}`, `{"u32":4294967296}`,
	`{"u64":18446744073709551615}`, `{"u64":18446744073709551616}`, `{"u":-1}`,
	`{"i":1.0}`, `{"i":1e0}`, `{"i":1E2}`, `{"i":10e-1}`, `{"i":01}`, `{"i":-}`, `{"i":+1}`,
	`{"f32":3.4028234663852886e38}`, `{"f32":3.4028235677973366e38}`, `{"f32":3.5e38}`, `{"f32":-3.5e38}`,
	`{"f32":1e-46}`, `{"f32":1.401298464324817e-45}`, `{"f32":16777217}`, `{"f32":0.1}`,
	`{"f64":1e308}`, `{"f64":1.8e308}`, `{"f64":1e400}`, `{"f64":4.9e-324}`, `{"f64":2e-324}`,
	`{"f64":1e199}`, `{"f64":1e200}`, `{"f64":0.` + strings.Repeat("1", 198) + `}`,
	`{"f64":123456789012345678901234567890}`,
	`{"s":"a\u0000b"}`, `{"s":"\ud800"}`, `{"s":"\udc00\ud800"}`, `{"s":"\ud83d\ude00"}`, "{\"s\":\"\xed\xa0\x80\"}",
	"{\"s\":\"\xc0\xaf\"}", "{\"s\":\"\xef\xbf\xbd\"}", "{\"s\":\"\u2028\"}", "{\"s\":\"\x7f\"}", "{\"s\":\"a\tb\"}",
	`{"s":"x","s":"y"}`, `{"s":"x","S":"y"}`, `{"S":"y"}`, `{"\u0073":"y"}`, `{"s\u0000":"y"}`,
	`{"a_b":"x"}`, `{"ab":"x","a_b":"y"}`, `{"a-b":"x"}`, `{"AB":"x"}`, `{"A_B":"x"}`, `{"aB":"x"}`,
	`{"s":null}`, `{"b":null}`, `{"p":null}`, `{"l":null}`, `{"ps":null}`, `{"ps":[]}`, `{"ps":["a"]}`,
	`{"p":{"n":1},"p":{"t":"x"}}`, `{"l":[1],"l":[2,3]}`, `{"p":{"n":1,"n":2}}`, `{"p":{}}`, `{"p":{"N":1}}`,
	`{"l":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}`, `{"l":[1,null]}`, `{"l":[1.5]}`, `{"l":{}}`,
	`{"b":true}`, `{"b":false}`, `{"b":1}`, `{"b":"true"}`, `{"s":1}`, `{"i":"1"}`,
	` {"i":1} `, "\t{\"i\":1}\n", "\ufeff{\"i\":1}", `{"i":1}}`, `{"i":1},`, `{"i":1}null`, `{"i":1,}`,
	`{"p":` + strings.Repeat(`{"p":`, 20) + `{}` + strings.Repeat(`}`, 20) + `}`,
	`{"s":"` + strings.Repeat("x", 2000) + `","i":1}`, `{"s":"` + strings.Repeat("é", 600) + `"}`,
}

// Edge cases of numbers, strings, keys, nulls and repetitions get the
// same answer and the same value on the one-pass and two-pass paths.
func TestFusedCallEdges(t *testing.T) {
	pairs := append(fusedPairs(t), newFusedPair[fusedEdges](t, "edges"))
	for _, s := range fusedEdgeArgs {
		for _, p := range pairs {
			compareFused(t, p, []byte(s))
		}
	}
}

// A string the handler keeps does not share memory with the arguments,
// which the caller may reuse: overwriting them after the call leaves it
// as it was, for short and long arguments alike.
func TestFusedStringsOwnTheirBytes(t *testing.T) {
	var kept []string
	tool := NewTool("t", "", func(_ context.Context, in fusedEdges) (string, error) {
		kept = append(kept, in.S, in.P.T)
		return "ok", nil
	})
	require.NotNil(t, tool.core.fused)
	for _, n := range []int{3, 2000} {
		kept = kept[:0]
		want := strings.Repeat("v", n)
		args := []byte(`{"s":"` + want + `","p":{"t":"` + want + `"}}`)
		_, err := tool.Execute(context.Background(), ToolCall{Args: args})
		require.NoError(t, err)
		for i := range args {
			args[i] = 'X'
		}
		assert.Equal(t, []string{want, want}, kept)
	}
}

// The same tool called from many goroutines at once decodes each call's
// own arguments: no state is shared between calls.
func TestFusedConcurrentCalls(t *testing.T) {
	tool := NewTool("t", "", func(_ context.Context, in fusedEdges) (string, error) {
		return fmt.Sprintf("%d %s %d %v", in.I, in.S, in.P.N, in.L), nil
	})
	require.NotNil(t, tool.core.fused)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				args := fmt.Sprintf(`{"i":%d,"s":"g%d","p":{"n":%d},"l":[%d,%d]}`, i, g, g, i, g)
				if i%3 == 0 {
					args = fmt.Sprintf(`{"i":%d,"s":"\u0067%d","p":{"n":%d},"l":[%d,%d]}`, i, g, g, i, g) // escaped: two passes
				}
				res, err := tool.Execute(context.Background(), ToolCall{Args: []byte(args)})
				want := fmt.Sprintf("%d g%d %d [%d %d]", i, g, g, i, g)
				if err != nil || res != want {
					errs <- fmt.Errorf("%s: got %v, %v; want %q", args, res, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
