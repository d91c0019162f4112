package toolset

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DirResultStore is a [ResultStore] in a directory: each run's results
// are files of a directory of its own, named by a hash of the run's ID,
// so that no run ID or result name can reach outside it. Processes that
// share the directory share the results. Nothing is removed but by
// [DirResultStore.DeleteRun]: delete a run's results when it ends.
type DirResultStore struct {
	// Dir is the directory; it is made when first needed.
	Dir string
}

// Save implements [ResultStore].
func (s *DirResultStore) Save(ctx context.Context, run, name string, text []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !validResultName(name) {
		return fmt.Errorf("toolset: result store: %q is not a result name", boundName(name))
	}
	dir := s.runDir(run)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("toolset: result store: %w", err)
	}
	var b [8]byte
	rand.Read(b[:])
	tmp := filepath.Join(dir, ".tmp-"+hex.EncodeToString(b[:]))
	if err := os.WriteFile(tmp, text, 0o600); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("toolset: result store: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("toolset: result store: %w", err)
	}
	return nil
}

// Read implements [ResultStore].
func (s *DirResultStore) Read(ctx context.Context, run, name string, off, n int64) ([]byte, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if !validResultName(name) || off < 0 || n <= 0 {
		return nil, 0, fmt.Errorf("toolset: result store: %q: %w", boundName(name), ErrResultNotFound)
	}
	f, err := os.Open(filepath.Join(s.runDir(run), name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("toolset: result store: %q: %w", boundName(name), ErrResultNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("toolset: result store: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("toolset: result store: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("toolset: result store: %q is not a regular file", boundName(name))
	}
	size := st.Size()
	if off >= size {
		return nil, size, nil
	}
	buf := make([]byte, min(n, size-off))
	k, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("toolset: result store: %w", err)
	}
	return buf[:k], size, nil
}

// DeleteRun removes the results of run.
func (s *DirResultStore) DeleteRun(run string) error {
	if err := os.RemoveAll(s.runDir(run)); err != nil {
		return fmt.Errorf("toolset: result store: %w", err)
	}
	return nil
}

func (s *DirResultStore) runDir(run string) string {
	sum := sha256.Sum256([]byte(run))
	return filepath.Join(s.Dir, hex.EncodeToString(sum[:16]))
}

// validResultName reports whether name is a name a [ResultArchive] gives:
// "result-" and 24 hex digits.
func validResultName(name string) bool {
	rest, ok := strings.CutPrefix(name, "result-")
	if !ok || len(rest) != 24 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil && strings.ToLower(rest) == rest
}
