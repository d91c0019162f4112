package toolpkg

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptTool is a #!/bin/sh tool: schemaCmd is what it runs for --schema;
// a call answers with a greeting naming the tool.
func scriptTool(schemaCmd string) string {
	return `#!/bin/sh
if [ "$1" = "--schema" ]; then
` + schemaCmd + `
exit 0
fi
result=$(sed -n 's/.*"result_file":"\([^"]*\)".*/\1/p' "$1")
name=$(sed -n 's/.*"tool_name":"\([^"]*\)".*/\1/p' "$1")
printf '{"result":{"_schema":"ToolResult","_schema_version":"1.0","status":"success","message":"hello from sh: %s","data":{"shell":true},"data_objects":[]},"error":""}' "$name" > "$result"
`
}

const scriptManifest = "version: 1\ntools:\n  sh:\n    runtime: python\n    executable: greet.sh\n    timeout_seconds: 2\n"

// scriptPackage is a package with one shell tool under python/bin/.
func scriptPackage(t testing.TB, schemaCmd string) []byte {
	return makeZip(t, manifestFile(scriptManifest), zfile{name: "python/bin/greet.sh", data: []byte(scriptTool(schemaCmd)), mode: 0o755})
}

func schemaEcho(doc string) string { return "cat <<'EOF'\n" + doc + "\nEOF" }

func TestInvalidNames(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	for _, name := range []string{"", ".hidden", "a/b", "..", "_x", strings.Repeat("a", 65), "sp ace"} {
		_, err := s.Create(name)
		assert.ErrorContains(t, err, "invalid toolset name", name)
		_, err = s.Upload(context.Background(), name, bytes.NewReader(nil), 0)
		assert.ErrorContains(t, err, "invalid toolset name", name)
	}
}

func TestUnknownToolsetAndClosedStore(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), &Options{Sandbox: ModeDirect})
	require.NoError(t, err)
	_, err = s.Toolset("nope", nil).GetTools(context.Background())
	assert.EqualError(t, err, `toolpkg: toolset "nope": no such toolset`)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = toolset.BuildTools(context.Background(), "a", s.Toolset("nope", nil))
	assert.EqualError(t, err, `toolset: agent "a": Toolset#0 "toolpkg:nope": no such toolset`)
	assert.Equal(t, "toolpkg:nope", s.Toolset("nope", nil).Label())
	require.NoError(t, s.Close())
	_, err = s.Create("x")
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, s.Remove("x"), ErrClosed)
}
