package atomicfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotoolset/toolset/internal/atomicfile"
)

func TestWriteReplacesTheFileWithItsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(dir, ".state-*", "state.json", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "new" {
		t.Fatalf("read %q, %v; want new", got, err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".state-*"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

// A symlink where the file goes is replaced by the file; what it pointed
// to is not written.
func TestWriteReplacesALinkInsteadOfFollowingIt(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "state.json")); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(dir, ".state-*", "state.json", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Fatalf("the link's target was written: %q", got)
	}
	fi, err := os.Lstat(filepath.Join(dir, "state.json"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("state.json is %v, %v; want a regular file", fi.Mode(), err)
	}
}

// A failure leaves the old file and no temporary file, and its error
// names no path.
func TestWriteFailureKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	// A directory in the file's place: the rename fails.
	if err := os.Mkdir(filepath.Join(dir, "state.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json", "inner"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := atomicfile.Write(dir, ".state-*", "state.json", []byte("new"), 0o600)
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), dir) {
		t.Fatalf("the error names the directory: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".state-*"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}
