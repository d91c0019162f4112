package toolset_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manyTools is a set of more tools than an UnknownToolError lists, so its
// message ranks them by similarity to the name called.
func manyTools(t testing.TB) *toolset.ToolList {
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("tool_with_a_long_name_of_sixty_four_bytes_for_scoring_%09d", i)
	}
	tools, err := toolset.BuildTools(newRun(t, "r"), "a", toolset.NewFunction(echoTools(names...)...))
	require.NoError(t, err)
	return tools
}

func TestUnknownHugeToolNameIsBounded(t *testing.T) {
	tools := manyTools(t)
	ctx := newRun(t, "r")
	tools, _ = toolset.BuildTools(ctx, "a", toolset.NewFunction(tools.Tools()...))
	for _, size := range []int{50 << 10, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			name := strings.Repeat("to\x00l\n", size/5)
			_, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: nil})
			var ue *toolset.UnknownToolError
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, name, ue.Name, "the error keeps what the model sent")

			start := time.Now()
			msg := err.Error()
			model, _ := toolset.ErrorText(err)
			elapsed := time.Since(start)
			// Unbounded, scoring a 50 KB name against 100 names took about a
			// second; bounded, it takes microseconds.
			assert.Less(t, elapsed, 200*time.Millisecond)
			assert.Less(t, len(msg), 4<<10)
			assert.Less(t, len(model), 4<<10)
			assert.Contains(t, msg, `unknown tool "to\x00l\nto`)
			assert.Contains(t, msg, `…"; available tools: `)
			assert.NotContains(t, msg, "\x00", "the name is shown quoted, control characters escaped")
			assert.Contains(t, msg, "(and 60 more)")
		})
	}
}

// BenchmarkUnknownToolError1MBNameUnder1ms renders the error of a call of
// a 1 MB name among 100 tools; it must stay far under a millisecond.
func BenchmarkUnknownToolError1MBNameUnder1ms(b *testing.B) {
	tools := manyTools(b)
	ctx := newRun(b, "r")
	tools, _ = toolset.BuildTools(ctx, "a", toolset.NewFunction(tools.Tools()...))
	name := strings.Repeat("x", 1<<20)
	_, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: nil})
	for b.Loop() {
		if len(err.Error()) > 4<<10 {
			b.Fatal("message too long")
		}
	}
	if b.Elapsed()/time.Duration(b.N) > time.Millisecond {
		b.Fatalf("%v per message", b.Elapsed()/time.Duration(b.N))
	}
}
