package toolpkg

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFailedValidationKeepsThePreviousVersion(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := readyToolset(t, s, "demo", nil)
	bad := makeZip(t, manifestFile(demoManifest("")), zfile{name: "../x", data: []byte("x")})
	_, err := s.Upload(context.Background(), "demo", bytes.NewReader(bad), int64(len(bad)))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	info, err := s.Info("demo")
	require.NoError(t, err)
	assert.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 1, info.Version)
	_, err = callTool(context.Background(), t, ts, "demo__echo", `{"text":"still here"}`)
	require.NoError(t, err)
}
