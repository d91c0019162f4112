package toolpkg

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseManifestValid(t *testing.T) {
	t.Parallel()
	m, err := ParseManifest([]byte(`
version: 1
tools:
  event_correlator_tools:
    runtime: go
    executable: ./event-correlator
    timeout_seconds: 60
    sandbox_profile: restrictive
    resource_limits:
      max_open_files: 256
  helpers:
    runtime: python
    executable: helpers.py
`))
	require.NoError(t, err)
	require.Len(t, m.Executables, 2)
	ec := m.Executables[0]
	assert.Equal(t, Executable{Key: "event_correlator_tools", Runtime: RuntimeGo, Path: "event-correlator",
		TimeoutSeconds: 60, Profile: Restrictive, Limits: ResourceLimits{MaxOpenFiles: 256}}, ec)
	assert.Equal(t, ResourceLimits{MaxCPUSeconds: 60, MaxFileSizeMB: 64, MaxOpenFiles: 256, MaxProcesses: 32, MaxStackSizeMB: 8, MaxWriteMB: 128}, ec.EffectiveLimits())

	h := m.Executables[1]
	assert.Equal(t, DefaultTimeoutSeconds, h.TimeoutSeconds, "default timeout")
	assert.Equal(t, Standard, h.Profile, "default profile")
	assert.Equal(t, []string{"helpers.py", "python/bin/helpers.py"}, h.Candidates())
}

func TestParseManifestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string // every problem, as printed
	}{
		{"unknown top-level field", "version: 1\nname: x\ntools:\n  a: {runtime: go, executable: a}\n",
			[]string{`name: unknown field; allowed fields: version, description, tools (line 2)`}},
		{"unknown tool field names the tool key", "version: 1\ntools:\n  correlate:\n    runtime: go\n    executable: a\n    sandbox_prfile: standard\n",
			[]string{`tools.correlate.sandbox_prfile: unknown field; allowed fields: runtime, executable, timeout_seconds, sandbox_profile, resource_limits, description, tool_dir, schema_refresh_seconds (line 6)`}},
		{"missing executable", "version: 1\ntools:\n  correlate:\n    runtime: go\n",
			[]string{`tools.correlate.executable: required: the executable's path inside the package (line 4)`}},
		{"bad runtime", "version: 1\ntools:\n  correlate:\n    runtime: rust\n    executable: a\n",
			[]string{`tools.correlate.runtime: unknown runtime "rust"; use go or python (line 4)`}},
		{"missing runtime", "version: 1\ntools:\n  c:\n    executable: a\n",
			[]string{`tools.c.runtime: required: go or python (line 4)`}},
		{"bad profile", "version: 1\ntools:\n  c:\n    runtime: go\n    executable: a\n    sandbox_profile: open\n",
			[]string{`tools.c.sandbox_profile: unknown sandbox profile "open"; use restrictive, standard or permissive (line 6)`}},
		{"zero timeout", "version: 1\ntools:\n  c:\n    runtime: go\n    executable: a\n    timeout_seconds: 0\n",
			[]string{`tools.c.timeout_seconds: must be a positive number of seconds, got 0 (line 6)`}},
		{"negative timeout", "version: 1\ntools:\n  c:\n    runtime: go\n    executable: a\n    timeout_seconds: -5\n",
			[]string{`tools.c.timeout_seconds: must be a positive number of seconds, got -5 (line 6)`}},
		{"timeout of the wrong type", "version: 1\ntools:\n  c:\n    runtime: go\n    executable: a\n    timeout_seconds: soon\n",
			[]string{`tools.c.timeout_seconds: expected an integer, got the string "soon" (line 6)`}},
		{"bad limit", "version: 1\ntools:\n  c:\n    runtime: go\n    executable: a\n    resource_limits:\n      max_memory_mb: 5\n      max_processes: 0\n",
			[]string{
				`tools.c.resource_limits.max_memory_mb: unknown field; allowed fields: max_cpu_seconds, max_file_size_mb, max_open_files, max_processes, max_stack_size_mb, max_write_mb (line 7)`,
				`tools.c.resource_limits.max_processes: must be a positive integer, got 0 (line 8)`,
			}},
		{"executable escapes", "version: 1\ntools:\n  c:\n    runtime: go\n    executable: ../../bin/sh\n",
			[]string{`tools.c.executable: "../../bin/sh": ".." escapes the package (line 5)`}},
		{"absolute executable", "version: 1\ntools:\n  c:\n    runtime: go\n    executable: /bin/sh\n",
			[]string{`tools.c.executable: "/bin/sh": absolute path escapes the package (line 5)`}},
		{"wrong version", "version: 2\ntools:\n  c: {runtime: go, executable: a}\n",
			[]string{`version: unsupported version 2; only version 1 exists (line 1)`}},
		{"missing version and tools", "{}\n",
			[]string{`version: required; set "version: 1"`, `tools: required: a map from a key to an executable entry`}},
		{"empty tools", "version: 1\ntools: {}\n", []string{`tools: no tools; declare at least one executable (line 2)`}},
		{"tools is a list", "version: 1\ntools: [a]\n", []string{`tools: expected a map, got a list (line 2)`}},
		{"bad key", "version: 1\ntools:\n  has space: {runtime: go, executable: a}\n",
			[]string{`tools.has space: invalid key; keys must match ^[a-zA-Z0-9_-]{1,64}$ (line 3)`}},
		{"duplicate key", "version: 1\ntools:\n  a: {runtime: go, executable: a}\n  a: {runtime: go, executable: b}\n",
			[]string{`tools.a: duplicate key (line 4)`}},
		{"one executable twice", "version: 1\ntools:\n  a: {runtime: go, executable: x}\n  b: {runtime: go, executable: ./x}\n",
			[]string{`tools.b.executable: "x" is also the executable of tools.a (line 4)`}},
		{"not yaml", "version: [1\n", []string{`not valid YAML: line 1: did not find expected ',' or ']'`}},
		{"empty", "", []string{`the manifest is empty; it needs "version: 1" and a "tools" map`}},
		{"several problems at once", "version: 1\ntools:\n  a:\n    runtime: ruby\n  b:\n    runtime: go\n    executable: b\n    colour: red\n",
			[]string{
				`tools.a.runtime: unknown runtime "ruby"; use go or python (line 4)`,
				`tools.a.executable: required: the executable's path inside the package (line 4)`,
				`tools.b.colour: unknown field; allowed fields: runtime, executable, timeout_seconds, sandbox_profile, resource_limits, description, tool_dir, schema_refresh_seconds (line 8)`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseManifestStrict([]byte(tt.yaml))
			require.Error(t, err)
			assert.Nil(t, m)
			var me *ManifestError
			require.True(t, errors.As(err, &me), "error is %T", err)
			var got []string
			for _, p := range me.Problems {
				got = append(got, p.String())
			}
			assert.Equal(t, tt.want, got)
			assert.Contains(t, err.Error(), "invalid manifest.yaml")
		})
	}
}

func TestProfileLimitsMatchTheTable(t *testing.T) {
	t.Parallel()
	assert.Equal(t, ResourceLimits{60, 64, 128, 32, 8, 128}, Restrictive.Limits())
	assert.Equal(t, ResourceLimits{300, 256, 512, 128, 16, 512}, Standard.Limits())
	assert.Equal(t, ResourceLimits{600, 1024, 1024, 512, 32, 2048}, Permissive.Limits())
	assert.False(t, Restrictive.Network())
	assert.True(t, Standard.Network())
}

func TestManifestNumbersAreRangeChecked(t *testing.T) {
	t.Parallel()
	_, err := ParseManifest([]byte(`version: 1
tools:
  a:
    runtime: go
    executable: ./a
    timeout_seconds: 10000000000
    resource_limits:
      max_cpu_seconds: 99999999999
      max_file_size_mb: 9007199254740993
      max_processes: 123456789012345678901234567890
`))
	var me *ManifestError
	require.ErrorAs(t, err, &me)
	var got []string
	for _, p := range me.Problems {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		"tools.a.timeout_seconds: must be at most 2592000 seconds (30 days), got 10000000000 (line 6)",
		"tools.a.resource_limits.max_cpu_seconds: must be at most 2147483647, got 99999999999 (line 8)",
		"tools.a.resource_limits.max_file_size_mb: must be at most 1048576, got 9007199254740993 (line 9)",
		"tools.a.resource_limits.max_processes: the integer 123456789012345678901234567890 is out of range (line 10)",
	}, got)
}

func TestStoreBoundsWhatAPackageAsks(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect, Limits: Limits{MaxTimeoutSeconds: 60, MaxResourceLimits: ResourceLimits{MaxProcesses: 64, MaxFileSizeMB: 100}}})
	man := strings.Replace(demoManifest("    resource_limits:\n      max_processes: 100\n      max_open_files: 64\n"), "timeout_seconds: 2", "timeout_seconds: 61", 1)
	pkg := demoPackage(t, man)
	_, err := s.Upload(context.Background(), "big", bytes.NewReader(pkg), int64(len(pkg)))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, err.Error(), `"manifest.yaml": tools.demo.timeout_seconds: asks for 61 seconds; this store allows at most 60 (line 6)`)
	assert.Contains(t, err.Error(), `"manifest.yaml": tools.demo.resource_limits.max_processes: asks for 100; this store allows at most 64 (line 8)`)
	assert.NotContains(t, err.Error(), "max_open_files", "what the bound allows passes")

	// A profile's default above the bound is lowered to it.
	info := upload(t, s, "ok", demoPackage(t, demoManifest("")))
	require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	l := s.limitsOf(info.Executables[0])
	assert.Equal(t, 64, l.MaxProcesses)
	assert.Equal(t, 100, l.MaxFileSizeMB)
	assert.Equal(t, Standard.Limits().MaxOpenFiles, l.MaxOpenFiles)

	// So is a tool's own timeout from --schema.
	schema := `{"tools":{"t":{"description":"d","timeout_seconds":3600}}}`
	info = upload(t, s, "slow", demoPackage(t, demoManifest(""), zfile{name: "schema.json", data: []byte(schema)}))
	assert.Equal(t, StatusFailed, info.Status)
	assert.Equal(t, []string{`executable "demo": tool "t": timeout_seconds asks for 3600 seconds; this store allows at most 60`}, info.Errors)
}
