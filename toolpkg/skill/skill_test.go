package skill_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/toolpkg/skill"
)

const pdfSkill = "---\nname: pdf-forms\ndescription: Fill PDF forms. Use when the user gives a form.\n---\n# Forms\n\nRead references/fields.md first.\n"

// pdfFS is a skill with references and assets.
func pdfFS() fstest.MapFS {
	return fstest.MapFS{
		"SKILL.md":             {Data: []byte(pdfSkill)},
		"references/fields.md": {Data: []byte("Every field is required.\n")},
		"assets/logo.png":      {Data: []byte("\x89PNG\r\n\x1a\n\x00\x00\xff")},
		"scripts/fill.py":      {Data: []byte("print('fill')\n")},
	}
}

func problems(t *testing.T, err error) []string {
	t.Helper()
	var ve *skill.ValidationError
	require.True(t, errors.As(err, &ve), "want a *ValidationError, got %v", err)
	out := make([]string, len(ve.Problems))
	for i, p := range ve.Problems {
		out[i] = p.String()
	}
	return out
}

func TestFromFS(t *testing.T) {
	sk, err := skill.FromFS(pdfFS(), &skill.Options{Name: "pdf-forms"})
	require.NoError(t, err)
	assert.Equal(t, "pdf-forms", sk.Name())
	assert.Equal(t, "Fill PDF forms. Use when the user gives a form.", sk.Description())
	assert.Equal(t, "# Forms\n\nRead references/fields.md first.\n", sk.Body())
	assert.Equal(t, []skill.File{
		{Path: "SKILL.md", Size: int64(len(pdfSkill))},
		{Path: "assets/logo.png", Size: 11},
		{Path: "references/fields.md", Size: 25},
		{Path: "scripts/fill.py", Size: 14},
	}, sk.Files())
	assert.Equal(t, []skill.File{{Path: "assets/logo.png", Size: 11}, {Path: "references/fields.md", Size: 25}}, sk.Readable())
	assert.False(t, sk.HasPackage())
	assert.Nil(t, sk.Manifest())
	assert.Nil(t, sk.Tools())
	data, err := sk.ReadFile("references/fields.md")
	require.NoError(t, err)
	assert.Equal(t, "Every field is required.\n", string(data))
}

// TestFromFSHostile checks that every problem of a skill is reported at
// once.
func TestFromFSHostile(t *testing.T) {
	fsys := fstest.MapFS{
		"SKILL.md":          {Data: []byte("---\nname: Other_Name\n---\n")},
		"references/a\\b":   {Data: []byte("x")},
		"references/\x01x":  {Data: []byte("x")},
		"pipe":              {Mode: fs.ModeNamedPipe},
		"tools/manifest.md": {Data: []byte("not a manifest")},
		strings.Repeat("d/", skill.MaxPathDepth) + "deep": {Data: []byte("x")},
	}
	probs := problems(t, mustFail(skill.FromFS(fsys, &skill.Options{Name: "pdf-forms"})))
	joined := strings.Join(probs, "\n")
	for _, want := range []string{
		`"references/a\\b": holds a backslash`,
		`holds a control character`,
		`"pipe": is not a regular file or directory`,
		`more than 16 directories deep`,
		`"SKILL.md": name: invalid name "Other_Name"`,
		`"SKILL.md": description: required`,
		`"tools/manifest.yaml": missing`,
	} {
		assert.Contains(t, joined, want)
	}
	assert.Len(t, probs, 7, joined)
}

func mustFail(_ *skill.Skill, err error) error { return err }

func TestFromFSBounds(t *testing.T) {
	t.Run("missing SKILL.md", func(t *testing.T) {
		probs := problems(t, mustFail(skill.FromFS(fstest.MapFS{"skill.md": {Data: []byte(pdfSkill)}}, nil)))
		assert.Equal(t, []string{`"SKILL.md": missing: a skill needs SKILL.md at its root`}, probs)
	})
	t.Run("SKILL.md a directory", func(t *testing.T) {
		probs := problems(t, mustFail(skill.FromFS(fstest.MapFS{"SKILL.md/x": {Data: []byte("x")}}, nil)))
		assert.Contains(t, probs, `"SKILL.md": missing: a skill needs SKILL.md at its root`)
	})
	t.Run("name mismatch", func(t *testing.T) {
		probs := problems(t, mustFail(skill.FromFS(pdfFS(), &skill.Options{Name: "forms"})))
		assert.Equal(t, []string{`"SKILL.md": name: the skill is named "pdf-forms" but must be named "forms" (its directory's, or the name it is uploaded under)`}, probs)
	})
	t.Run("too many files", func(t *testing.T) {
		fsys := pdfFS()
		for i := range 10 {
			fsys["references/f"+string(rune('a'+i))] = &fstest.MapFile{Data: []byte("x")}
		}
		probs := problems(t, mustFail(skill.FromFS(fsys, &skill.Options{MaxFiles: 5})))
		assert.Contains(t, probs, "more than 5 files; checking stopped")
	})
	t.Run("too many directories", func(t *testing.T) {
		fsys := pdfFS()
		for i := range 20 {
			fsys[fmt.Sprintf("references/d%d/e", i)] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
		}
		probs := problems(t, mustFail(skill.FromFS(fsys, &skill.Options{MaxFiles: 10})))
		assert.Contains(t, probs, "more than 20 files and directories; checking stopped")
	})
	t.Run("nil", func(t *testing.T) {
		_, err := skill.FromFS(nil, nil)
		assert.ErrorContains(t, err, "nil fs.FS")
	})
	t.Run("too many bytes", func(t *testing.T) {
		fsys := pdfFS()
		fsys["assets/big.bin"] = &fstest.MapFile{Data: bytes.Repeat([]byte{0}, 5000)}
		probs := problems(t, mustFail(skill.FromFS(fsys, &skill.Options{MaxBytes: 4096})))
		assert.Contains(t, strings.Join(probs, "\n"), `"assets/big.bin": the skill's files exceed 4096 bytes together`)
	})
	t.Run("huge SKILL.md", func(t *testing.T) {
		fsys := pdfFS()
		huge := pdfSkill + strings.Repeat("x", 2000)
		fsys["SKILL.md"] = &fstest.MapFile{Data: []byte(huge)}
		probs := problems(t, mustFail(skill.FromFS(fsys, &skill.Options{MaxSkillFileBytes: 1024})))
		assert.Equal(t, []string{fmt.Sprintf(`"SKILL.md": %d bytes; at most 1024 are allowed: move details to references/`, len(huge))}, probs)
	})
}

// TestFromFSSymlinks checks a directory on disk: a symlink anywhere, to a
// file inside or outside the skill, is refused, and never followed.
func TestFromFSSymlinks(t *testing.T) {
	dir := writeDir(t, pdfFS())
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "references", "passwd")))
	require.NoError(t, os.Symlink("fields.md", filepath.Join(dir, "references", "alias.md")))
	require.NoError(t, os.Symlink("/etc", filepath.Join(dir, "assets", "etc")))
	probs := problems(t, mustFail(skill.FromFS(os.DirFS(dir), nil)))
	assert.ElementsMatch(t, []string{
		`"assets/etc": is a symlink; skills may not contain symlinks`,
		`"references/alias.md": is a symlink; skills may not contain symlinks`,
		`"references/passwd": is a symlink; skills may not contain symlinks`,
	}, probs)
}

// writeDir writes fsys into a new directory.
func writeDir(t *testing.T, fsys fstest.MapFS) string {
	t.Helper()
	dir := t.TempDir()
	for name, f := range fsys {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		require.NoError(t, os.WriteFile(p, f.Data, mode))
	}
	return dir
}

type zent struct {
	name    string
	data    string
	symlink bool
}

func makeZip(t *testing.T, entries ...zent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.symlink {
			h.SetMode(fs.ModeSymlink | 0o777)
		} else {
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = w.Write([]byte(e.data))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestFromZip(t *testing.T) {
	for name, prefix := range map[string]string{"at the root": "", "in a directory": "pdf-forms/"} {
		t.Run(name, func(t *testing.T) {
			z := makeZip(t, zent{name: prefix + "SKILL.md", data: pdfSkill}, zent{name: prefix + "references/fields.md", data: "f"})
			sk, err := skill.FromZip(bytes.NewReader(z), int64(len(z)), &skill.Options{Name: "pdf-forms"})
			require.NoError(t, err)
			assert.Equal(t, []skill.File{{Path: "SKILL.md", Size: int64(len(pdfSkill))}, {Path: "references/fields.md", Size: 1}}, sk.Files())
			data, err := sk.ReadFile("references/fields.md")
			require.NoError(t, err)
			assert.Equal(t, "f", string(data))
		})
	}
}

// TestFromZipHostile checks zip slip, absolute paths, symlinks,
// duplicates and bombs: every problem at once, nothing read beyond the
// bounds.
func TestFromZipHostile(t *testing.T) {
	z := makeZip(t,
		zent{name: "SKILL.md", data: pdfSkill},
		zent{name: "../../etc/cron.d/x", data: "x"},
		zent{name: "/abs", data: "x"},
		zent{name: "references/link", data: "/etc/passwd", symlink: true},
		zent{name: "references/a.md", data: "1"},
		zent{name: "references/a.md", data: "2"},
		zent{name: `references\win.md`, data: "x"},
	)
	probs := problems(t, mustFail(skill.FromZip(bytes.NewReader(z), int64(len(z)), nil)))
	assert.Len(t, probs, 5, strings.Join(probs, "\n"))
	joined := strings.Join(probs, "\n")
	for _, want := range []string{"../../etc/cron.d/x", "/abs", "symlink", "duplicate", "win.md"} {
		assert.Contains(t, joined, want)
	}

	bomb := makeZip(t, zent{name: "SKILL.md", data: pdfSkill}, zent{name: "assets/zeros", data: strings.Repeat("\x00", 1<<20)})
	probs = problems(t, mustFail(skill.FromZip(bytes.NewReader(bomb), int64(len(bomb)), &skill.Options{MaxBytes: 64 << 10})))
	assert.Contains(t, strings.Join(probs, "\n"), "exceed 65536 bytes uncompressed")

	probs = problems(t, mustFail(skill.FromZip(bytes.NewReader([]byte("PK nope")), 7, nil)))
	assert.Contains(t, strings.Join(probs, "\n"), "not a readable zip archive")

	noSkill := makeZip(t, zent{name: "a/SKILL.md", data: pdfSkill}, zent{name: "b/SKILL.md", data: pdfSkill})
	probs = problems(t, mustFail(skill.FromZip(bytes.NewReader(noSkill), int64(len(noSkill)), nil)))
	assert.Equal(t, []string{`"SKILL.md": missing: a skill needs SKILL.md at its root`}, probs)
}
