package toolset_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/tracefields"
	"github.com/stretchr/testify/assert"
)

// fieldsPropagator injects fixed fields and records the fields Extract is
// given.
type fieldsPropagator struct {
	inject    map[string]string
	extracted []map[string]string
}

func (p *fieldsPropagator) Inject(context.Context) map[string]string { return p.inject }

func (p *fieldsPropagator) Extract(ctx context.Context, fields map[string]string) context.Context {
	p.extracted = append(p.extracted, fields)
	return ctx
}

// TestTraceFieldsAreBoundedAcrossTheBoundary checks the promise of
// TracePropagator, as the packages that carry it keep it: the W3C fields
// cross up to their limits, a field one byte longer or with a byte outside
// printable ASCII is dropped whole, no other field crosses, and Extract
// sees only what crossed.
func TestTraceFieldsAreBoundedAcrossTheBoundary(t *testing.T) {
	assert.Equal(t, "traceparent", toolset.TraceparentField, "the W3C Trace Context name")
	assert.Equal(t, "tracestate", toolset.TracestateField, "the W3C Trace Context name")
	parent := "00-" + strings.Repeat("a", toolset.MaxTraceparentBytes-3)
	state := "k=" + strings.Repeat("v", toolset.MaxTracestateBytes-2)
	ctx := context.Background()

	cases := []struct {
		name                  string
		inject                map[string]string
		wantParent, wantState string
	}{
		{"at the limits", map[string]string{toolset.TraceparentField: parent, toolset.TracestateField: state, "baggage": "user=ada"}, parent, state},
		{"traceparent one byte over", map[string]string{toolset.TraceparentField: parent + "a", toolset.TracestateField: state}, "", ""},
		{"tracestate one byte over", map[string]string{toolset.TraceparentField: parent, toolset.TracestateField: state + "v"}, parent, ""},
		{"a control byte", map[string]string{toolset.TraceparentField: "00-a\n-01", toolset.TracestateField: "k=v"}, "", ""},
		{"a byte beyond ASCII", map[string]string{toolset.TraceparentField: parent, toolset.TracestateField: "k=é"}, parent, ""},
		{"none", nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &fieldsPropagator{inject: c.inject}
			gotParent, gotState := tracefields.Inject(ctx, p)
			assert.Equal(t, c.wantParent, gotParent)
			assert.Equal(t, c.wantState, gotState)

			tracefields.Extract(ctx, p, gotParent, gotState)
			if c.wantParent == "" {
				assert.Empty(t, p.extracted, "no trace context: Extract is not called")
				return
			}
			want := map[string]string{toolset.TraceparentField: c.wantParent}
			if c.wantState != "" {
				want[toolset.TracestateField] = c.wantState
			}
			assert.Equal(t, []map[string]string{want}, p.extracted)
		})
	}
}
