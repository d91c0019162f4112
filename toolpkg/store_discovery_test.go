package toolpkg

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScriptTool(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		info := upload(t, s, "shell", scriptPackage(t, schemaEcho(`{"tools":{"greet":{"description":"Say hello.","parameters":{"type":"object","properties":{"name":{"type":"string"}}}}}}`)))
		require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
		assert.Equal(t, "python/bin/greet.sh", info.Executables[0].File)
		res, err := callTool(context.Background(), t, s.Toolset("shell", nil), "shell__greet", `{"name":"x"}`)
		require.NoError(t, err)
		assert.Equal(t, "hello from sh: greet\n{\"shell\":true}", res.(*Result).ModelText())
	})
}

func TestDiscoveryFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"bad JSON", `echo '{"tools": {'`, `executable "sh": --schema printed invalid JSON (unexpected end of JSON input); output starts "{\"tools\": {"`},
		{"timeout", `sleep 5`, `executable "sh": --schema did not finish within 1s (discovery timeout)`},
		{"exit 1", `echo boom >&2; exit 1`, "executable \"sh\": --schema failed (exit code 1); stderr:\nboom"},
		{"empty description", schemaEcho(`{"tools":{"t":{"description":"  "}}}`), `executable "sh": tool "t": description is empty; the model needs one to know when to use the tool`},
		{"missing description", schemaEcho(`{"tools":{"t":{}}}`), `executable "sh": tool "t": description is empty`},
		{"no tools", schemaEcho(`{"tools":{}}`), `executable "sh": --schema output lists no tools`},
		{"tools not an object", schemaEcho(`{"tools":["t"]}`), `executable "sh": --schema output: "tools" must be an object mapping tool names to their schemas`},
		{"reserved config key", schemaEcho(`{"tools":{"t":{"description":"d","config_schema":[{"key":"hil","type":"boolean"}]}}}`),
			`executable "sh": tool "t": config_schema: key "hil" is reserved (auth, hil, required_scopes are reserved keys)`},
		{"bad config type", schemaEcho(`{"tools":{"t":{"description":"d","config_schema":[{"key":"ratio","type":"number"}]}}}`),
			`executable "sh": tool "t": config_schema: key "ratio": type "number" is not supported; use string, integer or boolean`},
		{"bad config default", schemaEcho(`{"tools":{"t":{"description":"d","config_schema":[{"key":"n","type":"integer","default":"ten"}]}}}`),
			`executable "sh": tool "t": config_schema: key "n": default expected integer, got string "ten"`},
		{"parameters not an object schema", schemaEcho(`{"tools":{"t":{"description":"d","parameters":{"type":"string"}}}}`),
			`executable "sh": tool "t": parameters: the arguments must be an object ("type": "object"), got "type": "string"`},
		{"invalid parameter schema", schemaEcho(`{"tools":{"t":{"description":"d","parameters":{"type":"object","properties":{"a":{"type":"nope"}}}}}}`),
			`executable "sh": tool "t": parameters: invalid parameter schema`},
		{"bad timeout", schemaEcho(`{"tools":{"t":{"description":"d","timeout_seconds":-1}}}`),
			`executable "sh": tool "t": timeout_seconds must be a positive integer, got -1`},
		{"bad tool name", schemaEcho(`{"tools":{"a b":{"description":"d"}}}`),
			`executable "sh": tool "a b": invalid name; tool names must match ^[a-zA-Z0-9_-]{1,64}$`},
		{"name too long for a model", schemaEcho(`{"tools":{"` + strings.Repeat("x", 60) + `":{"description":"d"}}}`),
			`the model would see "shell__` + strings.Repeat("x", 60) + `", 67 characters; names may have at most 64`},
	}
	s := openStore(t, Options{Sandbox: ModeDirect, DiscoveryTimeout: time.Second})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := upload(t, s, "shell", scriptPackage(t, tt.schema))
			assert.Equal(t, StatusFailed, info.Status)
			require.NotEmpty(t, info.Errors)
			assert.Contains(t, strings.Join(info.Errors, "\n"), tt.want)
			errs, err := s.DiscoveryErrors("shell")
			require.NoError(t, err)
			assert.Equal(t, info.Errors, errs)

			_, err = s.Toolset("shell", nil).GetTools(context.Background())
			var nr *NotReadyError
			require.ErrorAs(t, err, &nr)
			assert.Equal(t, StatusFailed, nr.Status)
			assert.Contains(t, err.Error(), `toolset "shell": not ready (status failed): discovery failed:`)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestDiscoveryReportsEveryProblem(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	info := upload(t, s, "shell", scriptPackage(t, schemaEcho(`{"tools":{
		"a":{"description":""},
		"b":{"description":"ok","config_schema":[{"key":"auth","type":"string"},{"key":"x","type":"date"}]},
		"c":{"description":"fine"}}}`)))
	assert.Equal(t, StatusFailed, info.Status)
	assert.Equal(t, []string{
		`executable "sh": tool "a": description is empty; the model needs one to know when to use the tool`,
		`executable "sh": tool "b": config_schema: key "auth" is reserved (auth, hil, required_scopes are reserved keys)`,
		`executable "sh": tool "b": config_schema: key "x": type "date" is not supported; use string, integer or boolean`,
	}, info.Errors)
	assert.Empty(t, info.Tools, "a failed toolset offers no tools")
}
