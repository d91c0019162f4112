package toolpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/proctest"
)

// aliasBomb is a small manifest whose tools all alias one map of many
// unknown keys: walked naively, each use of the alias repeats every
// problem of the map.
func aliasBomb(keys, uses int) string {
	var b strings.Builder
	b.WriteString("version: 1\nx: &a {")
	for i := range keys {
		fmt.Fprintf(&b, "k%d: 1, ", i)
	}
	b.WriteString("}\ntools:\n")
	for i := range uses {
		fmt.Fprintf(&b, "  t%d: *a\n", i)
	}
	return b.String()
}

func TestManifestAliasBombIsBounded(t *testing.T) {
	m := aliasBomb(2000, 2000) // 42 KB
	start := time.Now()
	_, err := ParseManifestStrict([]byte(m))
	elapsed := time.Since(start)
	require.Error(t, err)
	require.Less(t, len(err.Error()), 64<<10, "the error of a %d-byte manifest", len(m))
	require.Less(t, elapsed, 2*time.Second)
	require.Contains(t, err.Error(), "more problems")
}

func TestManifestLongValuesAreNotQuotedWhole(t *testing.T) {
	t.Parallel()
	// Thirty-two times the 2 KB an error may take: an error that quoted
	// one whole would be over it.
	long := strings.Repeat("A", 64<<10)
	for name, m := range map[string]string{
		"string value":    "version: 1\ntools:\n  x: \"" + long + "\"\n",
		"runtime":         "version: 1\ntools:\n  x: {runtime: \"" + long + "\", executable: x}\n",
		"profile":         "version: 1\ntools:\n  x: {runtime: go, executable: x, sandbox_profile: \"" + long + "\"}\n",
		"unknown key":     "version: 1\ntools:\n  x:\n    runtime: go\n    executable: x\n    ? " + long + "\n    : 1\n",
		"tools key":       "version: 1\ntools:\n  ? " + long + "\n  : {runtime: go, executable: x}\n",
		"executable path": "version: 1\ntools:\n  x: {runtime: go, executable: \"a/../" + long + "\"}\n",
		"float":           "version: 1.5" + strings.Repeat("1", 64<<10) + "\ntools: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseManifestStrict([]byte(m))
			require.Error(t, err)
			require.Less(t, len(err.Error()), 2048, "%.300s", err)
			// Leniently parsed, what is said is as short.
			mf, err := ParseManifest([]byte(m))
			if err != nil {
				require.Less(t, len(err.Error()), 2048, "%.300s", err)
				return
			}
			for _, w := range mf.Warnings {
				require.Less(t, len(w.String()), 2048, "%.300s", w)
			}
		})
	}
}

func TestSchemaOutputOfHostileSizeIsBounded(t *testing.T) {
	t.Parallel()
	ex := Executable{Key: "demo", TimeoutSeconds: 5}
	var many strings.Builder
	many.WriteString(`{"tools":{`)
	for i := range MaxTools + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"t%d":{"description":"x"}`, i)
	}
	many.WriteString("}}")
	// Four times the 64 KB the problems may take: a problem that quoted
	// one whole would be over it.
	long := strings.Repeat("n", 256<<10)
	var invalid strings.Builder
	invalid.WriteString(`{"tools":{`)
	for i := range 900 {
		if i > 0 {
			invalid.WriteString(",")
		}
		fmt.Fprintf(&invalid, `"t%d":{}`, i)
	}
	invalid.WriteString("}}")
	for name, out := range map[string]string{
		"too many tools":   many.String(),
		"long name":        `{"tools":{"` + long + `":{"description":"x"}}}`,
		"long name twice":  `{"tools":{"` + long + `":{"description":"x"},"` + long + `":{}}}`,
		"long description": `{"tools":{"a":{"description":"` + long + `"}}}`,
		"long config key":  `{"tools":{"a":{"description":"x","config_schema":[{"key":"` + long + `","type":"` + long + `"}]}}}`,
		"long timeout":     `{"tools":{"a":{"description":"x","timeout_seconds":1` + strings.Repeat("0", 256<<10) + `}}}`,
		"long property":    `{"tools":{"a":{"description":"x","parameters":{"type":"object","properties":{"` + long + `":{"type":"nope"}}}}}}`,
		"many bad tools":   invalid.String(),
	} {
		t.Run(name, func(t *testing.T) {
			tools, probs := parseSchemaOutput(ex, []byte(out))
			require.Empty(t, tools)
			require.NotEmpty(t, probs)
			probs = capProblems(probs)
			total := 0
			for _, p := range probs {
				total += len(p)
			}
			require.Less(t, total, 64<<10, "%.300s", probs[0])
		})
	}
}

func TestRedactionOfAHostileTextIsLinear(t *testing.T) {
	// The package knows its secrets (their defaults are its own, and its
	// configuration reaches it) and writes text that almost matches one
	// at every byte.
	sec := &secrets{keys: map[string]bool{"token": true}}
	secret := strings.Repeat("a", 4096) + "b"
	sec.add(secret)
	sec.add(strings.Repeat(`\u0061`, 100) + "c")
	text := strings.Repeat("a", 1<<20) + secret + strings.Repeat(`\u0061`, 1<<16)
	start := time.Now()
	out := sec.text(text)
	require.Less(t, time.Since(start), 2*time.Second)
	require.NotContains(t, out, secret)
	require.Contains(t, out, redacted)
}

// redactionSecrets are the secrets FuzzRedaction plants: no '[' or ']',
// so that the marker cannot complete one.
var redactionSecrets = []string{`sk-"li\ve"`, "aab", "abab", "73912846", "é😀x"}

func FuzzRedaction(f *testing.F) {
	for _, s := range []string{
		`sk-"li\ve"`, `sk-\"li\\ve\"`, `\u0073k-\u0022li\u005cve\u0022`, `sk-\\\"li\\\\ve\\\"`,
		"aaab abab aabab", `\u00e9\ud83d\ude00x`, `\\u0061ab`, "7391284673912846", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sec := &secrets{keys: map[string]bool{}}
		for _, s := range redactionSecrets {
			sec.add(s)
		}
		out := sec.text(text)
		for _, form := range []string{out, decodeView(out).text, decodeView(decodeView(out).text).text} {
			for _, s := range redactionSecrets {
				if strings.Contains(form, s) {
					t.Fatalf("secret %q left in %q (from %q)", s, out, text)
				}
			}
		}
		if !strings.Contains(text, `\`) && !strings.Contains(text, "a") && !strings.Contains(text, "7") &&
			!strings.Contains(text, "s") && !strings.Contains(text, "é") && out != text {
			t.Fatalf("%q changed to %q with no secret in it", text, out)
		}
	})
}

func TestConfigSchemaOfHostileSizeIsRefused(t *testing.T) {
	t.Parallel()
	ex := Executable{Key: "demo", TimeoutSeconds: 5}
	var many strings.Builder
	many.WriteString(`{"tools":{"a":{"description":"x","config_schema":[`)
	for i := range MaxConfigFields + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"key":"k%d","type":"string","secret":true,"default":"v%d"}`, i, i)
	}
	many.WriteString("]}}}")
	for name, out := range map[string]string{
		"too many fields": many.String(),
		"long key":        `{"tools":{"a":{"description":"x","config_schema":[{"key":"` + strings.Repeat("k", MaxConfigKeyBytes+1) + `","type":"string"}]}}}`,
		"long default":    `{"tools":{"a":{"description":"x","config_schema":[{"key":"k","type":"string","secret":true,"default":"` + strings.Repeat("d", MaxConfigDefaultBytes+1) + `"}]}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			tools, probs := parseSchemaOutput(ex, []byte(out))
			require.Empty(t, tools)
			require.Len(t, probs, 1)
			require.Contains(t, probs[0], "at most")
		})
	}
}

func TestRedactionOfManySecretKeysIsLinear(t *testing.T) {
	// Up to MaxConfigFields keys per tool, and MaxTools tools.
	sec := &secrets{keys: map[string]bool{}}
	for i := range 20000 {
		sec.keys[fmt.Sprintf("k%d", i)] = true
	}
	text := strings.Repeat(`"k1`, 1<<19) + `"k7": 12345`
	start := time.Now()
	out := sec.text(text)
	require.Less(t, time.Since(start), 2*time.Second)
	require.True(t, strings.HasSuffix(out, `"k7": [secret]`), "%.40s", out[len(out)-40:])
}

func TestManySecretDefaultsAreCheap(t *testing.T) {
	// 64 secret keys with defaults in each of 1,000 tools.
	var tools []ToolInfo
	for i := range MaxTools {
		ti := ToolInfo{Name: fmt.Sprintf("t%d", i)}
		for j := range MaxConfigFields {
			ti.Config = append(ti.Config, ConfigField{Key: fmt.Sprintf("k%d_%d", i, j), Type: "string", Secret: true, Default: fmt.Sprintf("default-%d-%d", i, j)})
		}
		tools = append(tools, ti)
	}
	start := time.Now()
	rc, err := resolveConfig("ts", tools, Config{}, nil, nil)
	require.NoError(t, err)
	sec := rc.secrets
	require.Len(t, sec.values, MaxTools*MaxConfigFields)
	require.Equal(t, "[secret]", sec.text("default-999-63"))
	require.Less(t, time.Since(start), 3*time.Second)
}

func TestStateNamingFilesOutsideItsPackageFailsOnlyItsToolset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	upload(t, s, "good", demoPackage(t, demoManifest("")))
	upload(t, s, "evil", demoPackage(t, demoManifest("")))
	upload(t, s, "pipe", demoPackage(t, demoManifest("")))
	require.NoError(t, s.Close())

	statePath := filepath.Join(dir, "evil", "state.json")
	data, err := os.ReadFile(statePath)
	require.NoError(t, err)
	// Another toolset's executable, which would get this toolset's
	// configuration and secrets.
	data = bytes.Replace(data, []byte(`"file":"tooldemo"`), []byte(`"file":"../../good/v1/tooldemo"`), 1)
	require.Contains(t, string(data), "../../good/v1/tooldemo")
	require.NoError(t, os.WriteFile(statePath, data, 0o644))
	// A state.json that is a named pipe must not hold Open up.
	pipeState := filepath.Join(dir, "pipe", "state.json")
	require.NoError(t, os.Remove(pipeState))
	require.NoError(t, syscall.Mkfifo(pipeState, 0o644))

	done := make(chan struct{})
	var s2 *Store
	go func() {
		defer close(done)
		s2, err = Open(dir, opts)
	}()
	// Real time, not synctest: Open reads a real FIFO.
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		// Unblock the open so that the goroutine ends.
		f, _ := os.OpenFile(pipeState, os.O_WRONLY, 0)
		f.Close()
		<-done
		t.Fatal("Open hung on a state.json that is a named pipe")
	}
	require.NoError(t, err)
	defer s2.Close()
	for _, name := range []string{"evil", "pipe"} {
		info, err := s2.Info(name)
		require.NoError(t, err)
		assert.Equal(t, StatusFailed, info.Status, name)
		require.Len(t, info.Errors, 1)
		assert.Contains(t, info.Errors[0], "state.json cannot be read")
	}
	assert.Contains(t, s2.mustInfo(t, "evil").Errors[0], "not where the executable is looked up")
	good := s2.mustInfo(t, "good")
	assert.Equal(t, StatusReady, good.Status)
}

func (s *Store) mustInfo(t *testing.T, name string) Info {
	t.Helper()
	info, err := s.Info(name)
	require.NoError(t, err)
	return info
}

func TestDiscoveryChildHoldingStdoutDiesWithIt(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		for _, then := range []string{"exit", "hang"} {
			t.Run(then, func(t *testing.T) {
				marker := uniqueMarker()
				t.Cleanup(func() {
					for _, pid := range proctest.WithArg(marker) {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				})
				// A child in a session of its own keeps stdout and stderr
				// open and ignores SIGTERM, after the schema is printed.
				cmd := schemaEcho(`{"tools":{"greet":{"description":"Say hello."}}}`) + "\n" +
					`setsid sh -c 'trap "" TERM; exec sleep ` + marker + `' &` + "\n"
				if then == "hang" {
					cmd += "trap '' TERM; while :; do sleep 1; done\n"
				}
				// The hanging script ignores SIGTERM too: it is killed
				// once the timeout and the grace are over, both short.
				timeout := 3 * time.Second
				if then == "hang" {
					timeout = 1500 * time.Millisecond
				}
				s := openStore(t, Options{Sandbox: mode, DiscoveryTimeout: timeout, KillGrace: 300 * time.Millisecond})
				seen := make(chan bool, 1)
				stop := make(chan struct{})
				// Real time, not synctest: discovery runs real processes,
				// polled in /proc.
				go func() {
					for {
						select {
						case <-stop:
							seen <- false
							return
						default:
						}
						if len(proctest.WithArg(marker)) > 0 {
							seen <- true
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
				}()
				start := time.Now()
				info := upload(t, s, "d", scriptPackage(t, strings.ReplaceAll(cmd, "sleep "+marker, "sleep 1000 "+marker)))
				elapsed := time.Since(start)
				close(stop)
				if then == "hang" {
					assert.True(t, <-seen, "the child ran")
				} else {
					<-seen
				}
				switch then {
				case "exit":
					require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
					assert.Less(t, elapsed, 3*time.Second, "discovery did not wait for the child")
				case "hang":
					require.Equal(t, StatusFailed, info.Status)
					assert.Contains(t, info.Errors[0], "did not finish within 1.5s")
					assert.Less(t, elapsed, 5*time.Second)
				}
				assert.Eventually(t, func() bool { return len(proctest.WithArg(marker)) == 0 }, 2*time.Second, 10*time.Millisecond,
					"the child in a session of its own ended with discovery")
			})
		}
	})
}

func TestZipOfLongEntryNamesMakesAShortError(t *testing.T) {
	t.Parallel()
	var files []zfile
	for i := range 100 {
		files = append(files, zfile{name: fmt.Sprintf("%d/../%s", i, strings.Repeat("x", 60000)), store: true})
	}
	z := makeZip(t, files...)
	_, err := ValidateZip(bytes.NewReader(z), int64(len(z)), nil)
	require.Error(t, err)
	require.Less(t, len(err.Error()), 64<<10, "the error of a %d-byte zip", len(z))
	require.Contains(t, err.Error(), "escapes the package")
}

func TestStateOfAMissingVersionKeepsTheOthers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	upload(t, s, "ts", demoPackage(t, demoManifest("")))
	require.NoError(t, s.Close())

	statePath := filepath.Join(dir, "ts", "state.json")
	data, err := os.ReadFile(statePath)
	require.NoError(t, err)
	data = bytes.Replace(data, []byte(`"version":1`), []byte(`"version":7`), 1)
	data = bytes.Replace(data, []byte(`"last_version":1`), []byte(`"last_version":7`), 1)
	require.NoError(t, os.WriteFile(statePath, data, 0o644))

	s2, err := Open(dir, opts)
	require.NoError(t, err)
	defer s2.Close()
	info := s2.mustInfo(t, "ts")
	assert.Equal(t, StatusFailed, info.Status)
	assert.Contains(t, info.Errors[0], "version 7 has no folder")
	assert.DirExists(t, filepath.Join(dir, "ts", "v1"), "the version on disk is kept")
}

func TestMatcherFindsWhatANaiveSearchFinds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[rng.IntN(3)]
		}
		return string(b)
	}
	for range 3000 {
		var words []string
		for range 1 + rng.IntN(4) {
			words = append(words, word(1+rng.IntN(5)))
		}
		text := word(rng.IntN(40))
		want := make([]bool, len(text))
		for _, w := range words {
			for i := 0; i+len(w) <= len(text); i++ {
				if text[i:i+len(w)] == w {
					for j := i; j < i+len(w); j++ {
						want[j] = true
					}
				}
			}
		}
		got := make([]bool, len(text))
		for _, sp := range newMatcher(words).find(text, nil, nil) {
			for j := sp.start; j < sp.end; j++ {
				got[j] = true
			}
		}
		require.Equal(t, want, got, "words %q in %q", words, text)
	}
}

func TestStderrTailDoesNotCutASecret(t *testing.T) {
	t.Parallel()
	const secret = "TOPSECRET-0123456789-abcdef"
	// The secret, then enough to push all but its last bytes out of the
	// tail of stderr the host keeps.
	tool := "#!/bin/sh\n" +
		"if [ \"$1\" = \"--schema\" ]; then\n" +
		"echo '{\"tools\":{\"leak\":{\"description\":\"Leak.\",\"config_schema\":[{\"key\":\"token\",\"type\":\"string\",\"secret\":true}]," +
		"\"parameters\":{\"type\":\"object\",\"properties\":{\"pad\":{\"type\":\"integer\"}}}}}}'\n" +
		"exit 0\nfi\n" +
		"pad=$(sed -n 's/.*\"pad\":\\([0-9]*\\).*/\\1/p' \"$1\")\n" +
		"tok=$(sed -n 's/.*\"token\":\"\\([^\"]*\\)\".*/\\1/p' \"$1\")\n" +
		"printf '%s' \"$tok\" >&2\n" +
		"head -c \"$pad\" /dev/zero | tr '\\0' x >&2\n" +
		"exit 1\n"
	s := openStore(t, Options{Sandbox: ModeDirect})
	info := upload(t, s, "st", makeZip(t, manifestFile(scriptManifest), zfile{name: "python/bin/greet.sh", data: []byte(tool), mode: 0o755}))
	require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	tools, err := toolset.BuildTools(context.Background(), "a", s.Toolset("st", map[string]any{"token": secret}))
	require.NoError(t, err)
	for _, keep := range []int{1, 5, len(secret) - 1} {
		pad := maxStderr - keep
		_, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "st__leak", Args: json.RawMessage(fmt.Sprintf(`{"pad":%d}`, pad))})
		var ee *ExecError
		require.ErrorAs(t, err, &ee)
		require.True(t, strings.HasSuffix(ee.Stderr, "xxxx"), "%.100q", ee.Stderr)
		assert.False(t, strings.Contains(ee.Stderr, secret[len(secret)-keep:]+"x"), "the last %d bytes of the secret: %.60q", keep, ee.Stderr)
		assert.LessOrEqual(t, len(ee.Stderr), maxStderr+64)
		assert.True(t, strings.HasPrefix(ee.Stderr, "[secret]x") || strings.HasPrefix(ee.Stderr, "["), "%.60q", ee.Stderr)
	}
}

func TestSecretKeysOfHostileSizeAreRefused(t *testing.T) {
	t.Parallel()
	// Each key is small and each tool within MaxConfigFields; together
	// they are more than MaxSecretBytes to search every output for.
	tools := map[string]any{}
	for i := range 40 {
		var cfg []any
		for j := range MaxConfigFields {
			cfg = append(cfg, map[string]any{"key": fmt.Sprintf("%0120d", i*MaxConfigFields+j), "type": "string", "secret": true})
		}
		tools[fmt.Sprintf("t%d", i)] = map[string]any{"description": "x", "config_schema": cfg}
	}
	doc, err := json.Marshal(map[string]any{"tools": tools})
	require.NoError(t, err)
	s := openStore(t, Options{Sandbox: ModeDirect})
	info := upload(t, s, "sk", scriptPackage(t, schemaEcho(string(doc))))
	require.Equal(t, StatusFailed, info.Status)
	require.Len(t, info.Errors, 1)
	assert.Contains(t, info.Errors[0], "secret configuration keys and their defaults add up to")
}

func TestRunnerArgsAreReadableByTheToolAlone(t *testing.T) {
	t.Parallel()
	// The tool reports the mode of its runner_args.json, which it read.
	tool := "#!/bin/sh\n" +
		"if [ \"$1\" = \"--schema\" ]; then\n" +
		"echo '{\"tools\":{\"mode\":{\"description\":\"Mode.\"}}}'\n" +
		"exit 0\nfi\n" +
		"result=$(sed -n 's/.*\"result_file\":\"\\([^\"]*\\)\".*/\\1/p' \"$1\")\n" +
		"printf '{\"result\":{\"status\":\"success\",\"message\":\"mode %s\"}}' \"$(stat -c %a \"$1\")\" > \"$result\"\n"
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		info := upload(t, s, "ra", makeZip(t, manifestFile(scriptManifest), zfile{name: "python/bin/greet.sh", data: []byte(tool), mode: 0o755}))
		require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
		res, err := callTool(context.Background(), t, s.Toolset("ra", nil), "ra__mode", `{}`)
		require.NoError(t, err)
		assert.Equal(t, "mode 600", res.(*Result).Message)
	})
}
