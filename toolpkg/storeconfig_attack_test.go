package toolpkg

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tokenPackage is a shell package whose one tool declares the
// configuration key token as field (a JSON object's members).
func tokenPackage(t *testing.T, field string) []byte {
	t.Helper()
	return scriptPackage(t, schemaEcho(fmt.Sprintf(`{"tools":{"greet":{"description":"Say hello.","config_schema":[%s]}}}`, field)))
}

// TestSecretStaysHiddenWhenANewVersionNoLongerDeclaresIt: whoever can
// upload must not read back a secret someone else stored, by uploading a
// version that declares its key plain, drops it, or gives it a type
// whose errors quote values.
func TestSecretStaysHiddenWhenANewVersionNoLongerDeclaresIt(t *testing.T) {
	t.Parallel()
	const secret = "sk-sealed-secret-9931"
	for name, field := range map[string]string{
		"declared plain": `{"key":"token","type":"string"}`,
		"dropped":        `{"key":"other","type":"string"}`,
		"now an integer": `{"key":"token","type":"integer"}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := openStore(t, Options{Sandbox: ModeDirect})
			info := upload(t, s, "sec", tokenPackage(t, `{"key":"token","type":"string","secret":true}`))
			require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
			_, err := s.SetConfig("sec", map[string]any{"token": secret})
			require.NoError(t, err)

			// A version the stored value does not fit fails; either way
			// nothing shows the secret.
			info = upload(t, s, "sec", tokenPackage(t, field))
			if name == "declared plain" {
				require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
				require.Equal(t, 2, info.Serving)
			}
			infoJSON, _ := json.Marshal(info)
			assert.NotContains(t, string(infoJSON), secret, "Info")

			got, err := s.Config("sec")
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"token": RedactedValue}, got, "Config")
			shown, err := s.SetConfig("sec", map[string]any{"hil": true})
			if err == nil {
				assert.Equal(t, map[string]any{"token": RedactedValue, "hil": true}, shown, "SetConfig's result")
			} else {
				assert.NotContains(t, err.Error(), secret, "SetConfig's error")
			}
			_, err = s.Toolset("sec", nil).GetTools(context.Background())
			if err != nil {
				assert.NotContains(t, err.Error(), secret, "GetTools' error")
			}
			// Sent back as shown, the value stays what it was.
			_, err = s.SetConfig("sec", map[string]any{"token": RedactedValue})
			if err == nil {
				data, rerr := os.ReadFile(filepath.Join(s.Dir(), "sec", configFile))
				require.NoError(t, rerr)
				assert.Contains(t, string(data), secret)
			}

			// Written anew while plain, it is plain.
			if name == "declared plain" {
				got, err = s.SetConfig("sec", map[string]any{"token": "public"})
				require.NoError(t, err)
				assert.Equal(t, "public", got["token"])
			}
		})
	}
}

// TestSecretSetBeforeAnyVersionStaysHidden: before a version says which
// keys are secret every value counts as secret, so a version that then
// declares the key plain must not show it.
func TestSecretSetBeforeAnyVersionStaysHidden(t *testing.T) {
	t.Parallel()
	const secret = "sk-early-secret-1207"
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	_, err = s.Create("sec")
	require.NoError(t, err)
	_, err = s.SetConfig("sec", map[string]any{"token": secret, "hil": true, "required_scopes": []any{"admin"}})
	require.NoError(t, err)
	upload(t, s, "sec", tokenPackage(t, `{"key":"token","type":"string"}`))
	got, err := s.Config("sec")
	require.NoError(t, err)
	// hil and required_scopes are no secrets: once a version says so,
	// they show.
	assert.Equal(t, map[string]any{"token": RedactedValue, "hil": true, "required_scopes": []any{"admin"}}, got)

	// Sealed across a restart too.
	require.NoError(t, s.Close())
	s, err = Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	got, err = s.Config("sec")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"token": RedactedValue, "hil": true, "required_scopes": []any{"admin"}}, got)
	shown, _ := json.Marshal(got)
	assert.NotContains(t, string(shown), secret)
}

// TestFlatConfigFileIsAllSealed: a config.json of bare values (as an
// earlier release wrote it) says nothing of which were secret, so none
// shows.
func TestFlatConfigFileIsAllSealed(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	upload(t, s, "sec", tokenPackage(t, `{"key":"token","type":"string"}`))
	require.NoError(t, s.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sec", configFile), []byte(`{"token":"sk-flat-1"}`+"\n"), 0o600))
	s, err = Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Config("sec")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"token": RedactedValue}, got)
}

// TestConfigSetRightAfterRemoveAndCreateSurvives: Remove deletes the
// configuration of the toolset it removed, never the one a Create and
// SetConfig racing its last steps stored for the new toolset.
func TestConfigSetRightAfterRemoveAndCreateSurvives(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	pkg := demoPackage(t, demoManifest(""))
	for round := range 3 {
		info := upload(t, s, "demo", pkg)
		// Many files in the version's folder, so that deleting it takes
		// a while: the window a Create and SetConfig land in. They are
		// made here rather than extracted from the package, which costs
		// several times the syscalls (and a zip of thousands of entries
		// to check under the race detector); 1000 of them were enough for
		// every run of 20 to fail when Remove deleted the configuration
		// after releasing its locks.
		bulk := filepath.Join(s.versionDir("demo", info.Version), "data")
		require.NoError(t, os.Mkdir(bulk, 0o755))
		for i := range 1000 {
			f, err := os.Create(filepath.Join(bulk, strconv.Itoa(i)))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
		removed := make(chan error, 1)
		go func() { removed <- s.Remove("demo") }()
		// Create as soon as the record says removed, then store a value.
		for {
			if _, err := s.Create("demo"); err == nil {
				break
			}
			runtime.Gosched()
		}
		want := fmt.Sprintf("round-%d", round)
		_, err = s.SetConfig("demo", map[string]any{"greeting": want})
		require.NoError(t, err)
		require.NoError(t, <-removed)
		data, err := os.ReadFile(filepath.Join(dir, "demo", configFile))
		require.NoError(t, err, "round %d: the new toolset's configuration is on disk", round)
		assert.Contains(t, string(data), want)
	}
	require.NoError(t, s.Close())
}

// TestConfigOfARemovedToolsetLeftByACrashIsDeleted: a process that
// stopped between saving the removed record and deleting the
// configuration leaves secrets on disk; the next Open deletes them.
func TestConfigOfARemovedToolsetLeftByACrashIsDeleted(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	readyToolset(t, s, "demo", nil)
	_, err = s.SetConfig("demo", map[string]any{"api_key": "sk-left-behind"})
	require.NoError(t, err)
	p := filepath.Join(dir, "demo", configFile)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, s.Remove("demo"))
	require.NoError(t, s.Close())
	// What the crash left: the record says removed, the file is there.
	require.NoError(t, os.WriteFile(p, data, 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "demo", "scratch"), 0o755))

	s, err = Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	assert.NoFileExists(t, p)
	assert.NoDirExists(t, filepath.Join(dir, "demo", "scratch"))
}

// TestReuploadThatDoesNotFitTheStoredConfigKeepsServing: a version whose
// tools no longer declare a stored key (or give it another type) would
// fail every agent's GetTools once it served; it fails instead, and the
// previous version serves on.
func TestReuploadThatDoesNotFitTheStoredConfigKeepsServing(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := readyToolset(t, s, "demo", nil)
	_, err := s.SetConfig("demo", map[string]any{"greeting": "stored", "api_key": "sk-fit-check-5521"})
	require.NoError(t, err)

	info := upload(t, s, "demo", tokenPackage(t, `{"key":"api_key","type":"integer"}`))
	assert.Equal(t, StatusFailed, info.Status)
	assert.Equal(t, 1, info.Serving)
	require.Len(t, info.Errors, 2, "%v", info.Errors)
	assert.Contains(t, info.Errors[0], `"api_key": expected integer, got a secret value (not shown)`)
	assert.Contains(t, info.Errors[1], `"greeting" is not a configuration key of any tool`)
	assert.Equal(t, "stored", echoConfig(t, ts)["greeting"], "version 1 serves on")

	// Once the configuration fits, the version is taken.
	_, err = s.SetConfig("demo", map[string]any{"greeting": nil, "api_key": nil})
	require.NoError(t, err)
	info = upload(t, s, "demo", tokenPackage(t, `{"key":"api_key","type":"integer"}`))
	assert.Equal(t, StatusReady, info.Status, "%v", info.Errors)
}

// TestConfigResultDoesNotAliasTheStoredConfiguration: changing a list in
// what Config or SetConfig returned must not change the configuration
// the store applies (here, lift a required scope) behind its checks.
func TestConfigResultDoesNotAliasTheStoredConfiguration(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	readyToolset(t, s, "demo", nil)
	set, err := s.SetConfig("demo", map[string]any{"required_scopes": []any{"admin"}})
	require.NoError(t, err)
	got, err := s.Config("demo")
	require.NoError(t, err)
	set["required_scopes"].([]any)[0] = "changed-by-a-caller"
	got["required_scopes"].([]any)[0] = "changed-by-a-caller"
	again, err := s.Config("demo")
	require.NoError(t, err)
	assert.Equal(t, []any{"admin"}, again["required_scopes"])
}
