package tracefields

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset"
)

// keep is a propagator that carries the fields as they are.
type keep struct{}

func (keep) Inject(ctx context.Context) map[string]string {
	f, _ := ctx.Value(keep{}).(map[string]string)
	return f
}

func (keep) Extract(ctx context.Context, f map[string]string) context.Context {
	return context.WithValue(ctx, keep{}, f)
}

// Whatever a peer sends, what passes is bounded printable ASCII, and a
// tracestate passes only with a traceparent.
func FuzzGet(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=00f067aa0ba902b7")
	f.Add("", "a=1")
	f.Add("00-\x00", "a=\n1")
	f.Fuzz(func(t *testing.T, parent, state string) {
		fields := map[string]string{toolset.TraceparentField: parent, toolset.TracestateField: state}
		p, s := Get(func(k string) (string, bool) { v, ok := fields[k]; return v, ok })
		if len(p) > toolset.MaxTraceparentBytes || len(s) > toolset.MaxTracestateBytes {
			t.Fatalf("too long: %d, %d", len(p), len(s))
		}
		if p == "" && s != "" {
			t.Fatal("a tracestate without a traceparent")
		}
		for _, v := range []string{p, s} {
			for i := 0; i < len(v); i++ {
				if v[i] < 0x20 || v[i] > 0x7e {
					t.Fatalf("byte %#x passed", v[i])
				}
			}
		}
		if p != "" && p != parent || s != "" && s != state {
			t.Fatal("a field was changed")
		}
		ctx := Extract(context.Background(), keep{}, p, s)
		p2, s2 := Inject(ctx, keep{})
		if p2 != p || s2 != s {
			t.Fatalf("round trip: %q %q, want %q %q", p2, s2, p, s)
		}
	})
}
