package toolpkg

import (
	"archive/zip"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(goodManifest))
	f.Add([]byte("version: 1\ntools:\n  a: &x {runtime: go, executable: a}\n  b: *x\n"))
	f.Add([]byte("version: 1\ntools:\n  a:\n    runtime: python\n    executable: ../a\n    resource_limits: {max_cpu_seconds: -1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) || len(me.Problems) == 0 {
				t.Fatalf("error %T without problems: %v", err, err)
			}
			if m != nil {
				t.Fatal("a manifest with an error")
			}
			return
		}
		if m.Version != 1 || len(m.Executables) == 0 {
			t.Fatalf("accepted %+v", m)
		}
		for _, e := range m.Executables {
			if e.Path == "" || strings.HasPrefix(e.Path, "/") || strings.Contains(e.Path, `\`) {
				t.Fatalf("accepted executable path %q", e.Path)
			}
			for _, seg := range strings.Split(e.Path, "/") {
				if seg == ".." {
					t.Fatalf("accepted executable path %q", e.Path)
				}
			}
			if e.TimeoutSeconds <= 0 || e.Profile.Limits() == (ResourceLimits{}) {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}

func FuzzValidateZip(f *testing.F) {
	seed := func(files ...zfile) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, fl := range files {
			h := &zip.FileHeader{Name: fl.name, Method: zip.Deflate}
			h.SetMode(0o644)
			w, _ := zw.CreateHeader(h)
			_, _ = w.Write(fl.data)
		}
		_ = zw.Close()
		return buf.Bytes()
	}
	f.Add(seed(manifestFile(goodManifest), toolFile))
	f.Add(seed(manifestFile(goodManifest), toolFile, zfile{name: "../x"}))
	f.Add(seed(zfile{name: ".venv/x"}, zfile{name: "a.whl"}))
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxUncompressedBytes: 1 << 20, MaxEntries: 100}
		c, err := validateZip(bytes.NewReader(data), int64(len(data)), lim)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("error %T without problems: %v", err, err)
			}
			return
		}
		for name := range c.files {
			if _, msg := cleanPackagePath(name); msg != "" || venvDir(name) != "" {
				t.Fatalf("accepted entry %q", name)
			}
		}
		if _, ok := c.files[ManifestName]; !ok {
			t.Fatal("accepted a zip without a manifest")
		}
		dir := t.TempDir()
		if err := extract(c, dir, lim); err != nil {
			t.Fatalf("a validated zip does not extract: %v", err)
		}
	})
}
