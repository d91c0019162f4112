package toolpkg

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCheckArtifactName: a name that passes never leaves the directory
// it is joined to, and is never a path.
func FuzzCheckArtifactName(f *testing.F) {
	for _, s := range []string{"report.csv", "..", "../x", "a/b", `a\b`, ".x", "-x", "a..b", "ok name.txt", "x\x00", "é.txt"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if CheckArtifactName(name) != nil {
			return
		}
		if strings.ContainsAny(name, "/\\\x00") || strings.Contains(name, "..") || name == "." {
			t.Fatalf("accepted %q", name)
		}
		base := "/base"
		if j := filepath.Join(base, name); filepath.Dir(j) != base {
			t.Fatalf("%q escapes: %s", name, j)
		}
	})
}

// FuzzReadOutputTar: whatever archive a tool makes, reading it ends, and
// only regular files with valid names come out, within the bounds.
func FuzzReadOutputTar(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.WriteHeader(&tar.Header{Name: "./a.txt", Typeflag: tar.TypeReg, Size: 2, Mode: 0o644})
	_, _ = tw.Write([]byte("hi"))
	_ = tw.WriteHeader(&tar.Header{Name: "./l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
	_ = tw.WriteHeader(&tar.Header{Name: "./../x", Typeflag: tar.TypeReg, Size: 1})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("not a tar"))
	dir := f.TempDir()
	ao := ArtifactOptions{MaxArtifactBytes: 1 << 10, MaxArtifacts: 4}.withDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "stdout")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		files, _ := readOutputTar(p, ao)
		if len(files) > ao.MaxArtifacts*4 {
			t.Fatalf("%d files", len(files))
		}
		for _, fl := range files {
			if err := CheckArtifactName(fl.name); err != nil {
				t.Fatalf("file %q: %v", fl.name, err)
			}
			if int64(len(fl.data)) > ao.MaxArtifactBytes {
				t.Fatalf("file %q of %d bytes", fl.name, len(fl.data))
			}
		}
	})
}
