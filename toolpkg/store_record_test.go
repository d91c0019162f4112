package toolpkg

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusLifecycle(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ctx := context.Background()
	ts := s.Toolset("life", nil) // an agent may reference it before it exists

	_, err := ts.GetTools(ctx)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Status("life")
	require.ErrorIs(t, err, ErrNotFound)

	info, err := s.Create("life")
	require.NoError(t, err)
	assert.Equal(t, StatusCreated, info.Status)
	_, err = s.Create("life")
	assert.EqualError(t, err, `toolpkg: toolset "life" already exists (status created)`)
	_, err = ts.GetTools(ctx)
	assert.EqualError(t, err, `toolpkg: toolset "life": not ready (status created): no package was uploaded yet`)

	// A slow discovery shows pending.
	slow := scriptPackage(t, "sleep 1\n"+schemaEcho(`{"tools":{"greet":{"description":"Say hello."}}}`))
	done := make(chan Info)
	go func() { done <- upload(t, s, "life", slow) }()
	require.Eventually(t, func() bool { st, _ := s.Status("life"); return st == StatusPending }, 2*time.Second, 5*time.Millisecond)
	_, err = ts.GetTools(ctx)
	assert.EqualError(t, err, `toolpkg: toolset "life": not ready (status pending): discovery is running; its tools are available once it finishes`)
	info = <-done
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 1, info.Version)
	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, "life__greet", tools[0].Name)

	// ready → pending → failed, then back to ready.
	info = upload(t, s, "life", scriptPackage(t, `echo nope`))
	assert.Equal(t, StatusFailed, info.Status)
	assert.Equal(t, 2, info.Version)
	info = upload(t, s, "life", scriptPackage(t, schemaEcho(`{"tools":{"hello":{"description":"Say hello again."}}}`)))
	assert.Equal(t, StatusReady, info.Status)
	tools, err = ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, "life__hello", tools[0].Name, "the re-upload is picked up with no change to the agent")

	names := func() []string {
		var n []string
		for _, i := range s.List() {
			n = append(n, i.Name+":"+string(i.Status))
		}
		return n
	}
	_, err = s.Create("other")
	require.NoError(t, err)
	assert.Equal(t, []string{"life:ready", "other:created"}, names())

	require.NoError(t, s.Remove("life"))
	st, err := s.Status("life")
	require.NoError(t, err)
	assert.Equal(t, StatusRemoved, st)
	_, err = ts.GetTools(ctx)
	assert.EqualError(t, err, `toolpkg: toolset "life": not ready (status removed): it was removed`)
	assert.Equal(t, []string{"other:created"}, names())
	assert.NoDirExists(t, filepath.Join(s.Dir(), "life", "v3"))
	assert.ErrorIs(t, s.Remove("never"), ErrNotFound)

	info = upload(t, s, "life", scriptPackage(t, schemaEcho(`{"tools":{"greet":{"description":"Back."}}}`)))
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 4, info.Version, "version numbers are never reused")
}

// ListAll is List with the removed toolsets, which keep their record.
func TestListAllKeepsRemovedToolsets(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	readyToolset(t, s, "kept", nil)
	readyToolset(t, s, "gone", nil)
	require.NoError(t, s.Remove("gone"))
	names := func(infos []Info) (out []string) {
		for _, i := range infos {
			out = append(out, i.Name+":"+string(i.Status))
		}
		return out
	}
	assert.Equal(t, []string{"kept:ready"}, names(s.List()))
	assert.Equal(t, []string{"gone:removed", "kept:ready"}, names(s.ListAll()))
}
