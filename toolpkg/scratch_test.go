package toolpkg

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ledger(t *testing.T, ts *Toolset, args string) (any, error) {
	t.Helper()
	return callTool(context.Background(), t, ts, "pyt__ledger", args)
}

func TestScratchDirPersistsBetweenCalls(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s, ts := pyStore(t, mode, Options{})
		_, err := ledger(t, ts, `{"entry":"one"}`)
		require.NoError(t, err)
		res, err := ledger(t, ts, `{"entry":"two"}`)
		require.NoError(t, err)
		assert.Equal(t, []any{"one", "two"}, resultData(t, res)["entries"], "kept between calls")
		res, err = callTool(context.Background(), t, ts, "pyt__where", `{}`)
		require.NoError(t, err)
		if mode == ModeBwrap {
			assert.Equal(t, "/tmp/sam-str/pyt", resultData(t, res)["scratch"])
		} else {
			assert.Equal(t, s.scratchDir("pyt"), resultData(t, res)["scratch"])
		}

		// A new version keeps it; removing the toolset deletes it.
		info := upload(t, s, "pyt", pyPackage(t))
		require.Equal(t, StatusReady, info.Status)
		res, err = ledger(t, s.Toolset("pyt", nil), `{"entry":"three"}`)
		require.NoError(t, err)
		assert.Equal(t, []any{"one", "two", "three"}, resultData(t, res)["entries"])
		require.NoError(t, s.Remove("pyt"))
		_, err = os.Lstat(s.scratchDir("pyt"))
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
}

func TestScratchDirIsOffUnderRestrictiveByDefault(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		for _, tt := range []struct {
			policy ScratchPolicy
			want   bool
		}{{ScratchDefault, false}, {ScratchAll, true}} {
			opts := pyOptions(t, mode)
			opts.Scratch = tt.policy
			s := openStore(t, opts)
			info := upload(t, s, "pyt", pyRestrictivePackage(t))
			require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
			res, err := callTool(context.Background(), t, s.Toolset("pyt", nil), "pyt__where", `{}`)
			require.NoError(t, err)
			assert.Equal(t, tt.want, resultData(t, res)["scratch"] != nil, "policy %q", tt.policy)
		}
		s, ts := pyStore(t, mode, Options{Scratch: ScratchOff})
		_, err := ledger(t, ts, `{"entry":"one"}`)
		var tf *ToolFailure
		require.ErrorAs(t, err, &tf)
		assert.Contains(t, tf.Message, "no scratch directory")
		_, err = os.Lstat(s.scratchDir("pyt"))
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
}

func TestScratchDirReplacedByASymlinkIsRefused(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s, ts := pyStore(t, mode, Options{})
		_, err := ledger(t, ts, `{"entry":"one"}`)
		require.NoError(t, err)
		elsewhere := t.TempDir()
		dir := s.scratchDir("pyt")
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, os.Symlink(elsewhere, dir))
		_, err = ledger(t, ts, `{"entry":"two"}`)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "is not the directory the store made")
		entries, _ := os.ReadDir(elsewhere)
		assert.Empty(t, entries, "nothing was written through the link")
	})
}

func TestSymlinkInScratchDirIsNotFollowedByTheHost(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s, ts := pyStore(t, mode, Options{})
		secretDir := t.TempDir()
		require.NoError(t, os.Chmod(secretDir, 0o755))
		secret := filepath.Join(secretDir, "host-secret.txt")
		require.NoError(t, os.WriteFile(secret, []byte("host secret\n"), 0o644))
		_, err := ledger(t, ts, `{"entry":"x","link":"`+secret+`"}`)
		require.NoError(t, err)
		_, err = ledger(t, ts, `{"entry":"appended"}`)
		if mode == ModeBwrap {
			require.Error(t, err, "inside the sandbox the link leads nowhere")
			b, rerr := os.ReadFile(secret)
			require.NoError(t, rerr)
			assert.Equal(t, "host secret\n", string(b), "the host's file is untouched")
		}
		// Removing the toolset deletes the link, not what it points to.
		require.NoError(t, s.Remove("pyt"))
		_, err = os.Stat(secret)
		assert.NoError(t, err)
	})
}
