package toolpkg

import (
	"context"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// traceTool answers the TRACEPARENT and TRACESTATE of its environment,
// and whether each is set at all.
const traceTool = `#!/bin/sh
if [ "$1" = "--schema" ]; then
  echo '{"tools":{"trace":{"description":"Answers its trace context.","parameters":{"type":"object","properties":{}}}}}'
  exit 0
fi
result=$(sed -n 's/.*"result_file":"\([^"]*\)".*/\1/p' "$1")
printf '{"result":{"status":"success","message":"%s|%s|%s"}}' "${TRACEPARENT-unset}" "${TRACESTATE-unset}" "${OTHER_TRACE_FIELD-unset}" > "$result"
`

// fieldsKey is the context key of the fields a fieldsPropagator injects.
type fieldsKey struct{}

// fieldsPropagator injects the fields its context holds, as they are.
type fieldsPropagator struct{}

func (fieldsPropagator) Inject(ctx context.Context) map[string]string {
	f, _ := ctx.Value(fieldsKey{}).(map[string]string)
	return f
}

func (fieldsPropagator) Extract(ctx context.Context, _ map[string]string) context.Context {
	return ctx
}

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// A packaged tool, a real executable, sees the trace context of its call
// in TRACEPARENT and TRACESTATE, under every sandbox (bwrap clears the
// environment); fields that are too long or hold control bytes, which
// could smuggle more into the environment, are left out, and without a
// trace context neither variable is set.
func TestPackagedToolSeesTheCallersTraceContext(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode, Trace: fieldsPropagator{}})
		info := upload(t, s, "tr", makeZip(t, manifestFile(scriptManifest), zfile{name: "python/bin/greet.sh", data: []byte(traceTool), mode: 0o755}))
		require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
		call := func(fields map[string]string) string {
			t.Helper()
			ctx := context.Background()
			if fields != nil {
				ctx = context.WithValue(ctx, fieldsKey{}, fields)
			}
			res, err := callTool(ctx, t, s.Toolset("tr", nil), "tr__trace", `{}`)
			require.NoError(t, err)
			return res.(*Result).Message
		}
		assert.Equal(t, testTraceparent+"|rojo=1,congo=2|unset",
			call(map[string]string{"traceparent": testTraceparent, "tracestate": "rojo=1,congo=2", "OTHER_TRACE_FIELD": "x"}))
		assert.Equal(t, testTraceparent+"|unset|unset", call(map[string]string{"traceparent": testTraceparent}))
		assert.Equal(t, "unset|unset|unset", call(nil))
		assert.Equal(t, "unset|unset|unset", call(map[string]string{"tracestate": "a=1"}), "a tracestate alone means nothing")
		assert.Equal(t, "unset|unset|unset", call(map[string]string{"traceparent": testTraceparent + "\nOTHER_TRACE_FIELD=x"}))
		assert.Equal(t, "unset|unset|unset", call(map[string]string{"traceparent": strings.Repeat("0", toolset.MaxTraceparentBytes+1)}))
		assert.Equal(t, testTraceparent+"|unset|unset",
			call(map[string]string{"traceparent": testTraceparent, "tracestate": strings.Repeat("a", toolset.MaxTracestateBytes+1)}))
	})
}

// Without Options.Trace, a tool gets no trace variables, even when the
// host process has some.
func TestPackagedToolGetsNoTraceWithoutAPropagator(t *testing.T) {
	t.Setenv(TraceparentEnv, testTraceparent)
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		info := upload(t, s, "tr", makeZip(t, manifestFile(scriptManifest), zfile{name: "python/bin/greet.sh", data: []byte(traceTool), mode: 0o755}))
		require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
		ctx := context.WithValue(context.Background(), fieldsKey{}, map[string]string{"traceparent": testTraceparent})
		res, err := callTool(ctx, t, s.Toolset("tr", nil), "tr__trace", `{}`)
		require.NoError(t, err)
		assert.Equal(t, "unset|unset|unset", res.(*Result).Message)
	})
}
