package toolpkg

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// leakTool is a #!/bin/sh tool with one secret configuration key,
// token, that spells it wherever it can: in what --schema --config
// prints (or, for a token starting "fail", on stderr before failing),
// and in a call, in the name of an output file and the MIME types of its
// data objects.
const leakTool = `#!/bin/sh
plain='{"tools":{"leak":{"description":"Leak.","config_schema":[{"key":"token","type":"string","secret":true}]}}}'
if [ "$1" = "--schema" ]; then
  if [ "$2" != "--config" ]; then echo "$plain"; exit 0; fi
  tok=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' "$3")
  case "$tok" in
    fail*) echo "cannot use config $(cat "$3")" >&2; exit 3;;
  esac
  printf '{"tools":{"leak":{"description":"Uses %s.","instructions":"The token is %s.","config_schema":[{"key":"token","type":"string","secret":true}],"parameters":{"type":"object","properties":{"x":{"type":"string","description":"%s"}}}}}}\n' "$tok" "$tok" "$tok"
  exit 0
fi
tok=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' "$1")
result=$(sed -n 's/.*"result_file":"\([^"]*\)".*/\1/p' "$1")
out=$(sed -n 's/.*"output_dir":"\([^"]*\)".*/\1/p' "$1")
printf 'x' > "$out/$tok.txt"
printf '{"result":{"status":"success","message":"done","data_objects":[{"name":"a.bin","content":"aGk=","is_binary":true,"mime_type":"application/x-%s","disposition":"inline"},{"name":"b.txt","content":"b","mime_type":"text/x-%s","disposition":"artifact"}]}}' "$tok" "$tok" > "$result"
`

func leakToolset(t *testing.T, s *Store, token string) *Toolset {
	t.Helper()
	info := upload(t, s, "lk", makeZip(t, manifestFile(scriptManifest), zfile{name: "python/bin/greet.sh", data: []byte(leakTool), mode: 0o755}))
	require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	return s.Toolset("lk", map[string]any{"token": token})
}

// The configuration discovery runs with holds the secrets; what the
// executable prints with it (tool definitions, instructions, its stderr
// when it fails) reaches the model, errors and logs, and must not carry
// them.
func TestConfiguredDiscoveryDoesNotLeakSecrets(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		const secret = "SECRET-77aa-bb"
		ts := leakToolset(t, s, secret)
		run := toolset.NewRun("cfg-leak-" + string(mode))
		defer run.End()
		ctx := run.Turn(context.Background())
		tools, err := toolset.BuildTools(ctx, "agent", ts)
		require.NoError(t, err)
		require.Equal(t, []string{"lk__leak"}, tools.Names())
		for tl := range tools.All() {
			params, err := tl.ParametersJSON()
			require.NoError(t, err)
			assert.NotContains(t, tl.Description, secret, "the description the model reads")
			assert.NotContains(t, string(params), secret, "the parameters the model reads")
		}
		instr, err := ts.Instructions(ctx)
		require.NoError(t, err)
		assert.Contains(t, instr, "The token is")
		assert.NotContains(t, instr, secret, "instructions for the system prompt")

		const failing = "fail-SECRET-99cc"
		_, err = s.Toolset("lk", map[string]any{"token": failing}).GetTools(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot use config")
		assert.NotContains(t, err.Error(), failing, "the stderr of a failed --schema --config")
	})
}

// A tool knows its secrets; what it names its artifacts and their types
// is shown to the model and must not carry them.
func TestArtifactNamesAndTypesDoNotLeakSecrets(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		const secret = "SECRET-3141-ab"
		ts := leakToolset(t, s, secret)
		run := runWithScope("art-leak-" + string(mode))
		defer run.End()
		res, err := execIn(t, run, ts, "lk__leak", `{}`)
		require.NoError(t, err)
		c, ok := res.(*toolset.Content)
		require.True(t, ok, "%T", res)
		for _, p := range c.Parts {
			assert.NotContains(t, p.Text, secret)
			assert.NotContains(t, p.MIMEType, secret)
		}
		for _, a := range c.Structured.(*Result).Artifacts {
			assert.NotContains(t, a.Name, secret)
			assert.NotContains(t, a.MIMEType, secret)
		}
		assert.True(t, strings.Contains(c.ModelText(), "b.txt"), "the other artifacts are saved: %s", c.ModelText())
	})
}
