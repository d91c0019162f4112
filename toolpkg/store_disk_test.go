package toolpkg

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStorePersistsAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	readyToolset(t, s, "demo", nil)
	before, err := s.Info("demo")
	require.NoError(t, err)

	_, err = Open(dir, opts)
	assert.ErrorIs(t, err, ErrStoreInUse, "one owner at a time")
	assert.ErrorContains(t, err, dir)
	require.NoError(t, s.Close())

	// A crash left a half-extracted upload and a work directory behind.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".tmp", "junk"), []byte("x"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".calls", "call-1", "work"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "demo", "v9"), 0o755))

	s2, err := Open(dir, opts)
	require.NoError(t, err)
	after, err := s2.Info("demo")
	require.NoError(t, err)
	assert.Equal(t, before.Status, after.Status)
	assert.Equal(t, before.Tools, after.Tools)
	assert.Equal(t, before.Executables, after.Executables)
	assert.NoFileExists(t, filepath.Join(dir, ".tmp", "junk"))
	assert.NoDirExists(t, filepath.Join(dir, ".calls", "call-1"))
	assert.NoDirExists(t, filepath.Join(dir, "demo", "v9"), "a version that never became current is deleted")
	_, err = callTool(context.Background(), t, s2.Toolset("demo", nil), "demo__echo", `{"text":"again"}`)
	require.NoError(t, err)
	require.NoError(t, s2.Close())

	// A process that stopped during discovery left the toolset pending,
	// in the state.json of an earlier release (no serving version, no
	// history): it is discovered again, not failed.
	statePath := filepath.Join(dir, "demo", "state.json")
	data, err := os.ReadFile(statePath)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(data, &rec))
	rec["status"] = "pending"
	delete(rec, "tools")
	delete(rec, "serving")
	delete(rec, "versions")
	delete(rec, "uploaded")
	data, _ = json.Marshal(rec)
	require.NoError(t, os.WriteFile(statePath, data, 0o644))
	s3, err := Open(dir, opts)
	require.NoError(t, err)
	defer s3.Close()
	info, err := s3.Wait(context.Background(), "demo")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	assert.Equal(t, 1, info.Serving)
	assert.Equal(t, before.Tools, info.Tools)
}

func TestDamagedStateFailsOnlyItsToolset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	upload(t, s, "good", demoPackage(t, demoManifest("")))
	upload(t, s, "bad", demoPackage(t, demoManifest("")))
	upload(t, s, "bad", demoPackage(t, demoManifest(""))) // version 2
	require.NoError(t, s.Close())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad", "state.json"), []byte(`{"name":"bad","status":"ready","vers`), 0o644))
	s2, err := Open(dir, opts)
	require.NoError(t, err, "one damaged record does not take the store down")
	defer s2.Close()

	info, err := s2.Info("bad")
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, info.Status)
	require.Len(t, info.Errors, 1)
	assert.Contains(t, info.Errors[0], "state.json cannot be read (unexpected end of JSON input)")
	_, err = s2.Toolset("bad", nil).GetTools(context.Background())
	var nr *NotReadyError
	require.ErrorAs(t, err, &nr)
	assert.DirExists(t, filepath.Join(dir, "bad", "v2"), "the damaged toolset's files are kept")

	good, err := s2.Info("good")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, good.Status)
	_, err = callTool(context.Background(), t, s2.Toolset("good", nil), "good__echo", `{"text":"x"}`)
	require.NoError(t, err)

	// A new upload replaces the record, with a version never used before.
	info = upload(t, s2, "bad", demoPackage(t, demoManifest("")))
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 3, info.Version)
}

// TestCloseReleasesTheStoreThoughAForkedChildHoldsItsDescriptor: a
// process forked by another goroutine holds a copy of the lock's
// descriptor until it executes its program; Close still releases the
// store at once, for the next Open.
func TestCloseReleasesTheStoreThoughAForkedChildHoldsItsDescriptor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	// The copy a forked child holds: the same open file description.
	held, err := syscall.Dup(int(s.lock.Fd()))
	require.NoError(t, err)
	defer syscall.Close(held)
	require.NoError(t, s.Close())
	s, err = Open(dir, opts)
	require.NoError(t, err, "the store is free once closed")
	require.NoError(t, s.Close())
}
