package skill_test

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gotoolset/toolset/toolpkg/skill"
)

// FuzzParseSkillFile checks that no SKILL.md makes the parser panic, and
// that what it accepts keeps the format's rules. Seeds are in
// testdata/fuzz/FuzzParseSkillFile.
func FuzzParseSkillFile(f *testing.F) {
	f.Add([]byte("---\nname: a\ndescription: d\n---\nbody"))
	f.Add([]byte("---\nname: a\ndescription: d\nmetadata: {k: v}\nallowed-tools: [x]\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fm, body, err := skill.ParseSkillFile(data, 4096)
		if err != nil {
			if fm != nil || body != "" {
				t.Fatalf("an error with a result: %v", err)
			}
			return
		}
		if e := skill.CheckName(fm.Name); e != nil {
			t.Fatalf("accepted name: %v", e)
		}
		if strings.TrimSpace(fm.Description) == "" || utf8.RuneCountInString(fm.Description) > skill.MaxDescriptionLen {
			t.Fatalf("accepted description %q", fm.Description)
		}
		if !strings.HasSuffix(string(data), body) {
			t.Fatalf("the body is not the end of the file")
		}
		if len(fm.Metadata) > skill.MaxMetadataEntries || len(fm.AllowedTools) > skill.MaxAllowedTools {
			t.Fatalf("unbounded: %d metadata, %d tools", len(fm.Metadata), len(fm.AllowedTools))
		}
	})
}

// FuzzFromZip checks that no zip makes FromZip panic or read outside its
// bounds, and that a skill it accepts has a valid name and only files
// inside it. Seeds are in testdata/fuzz/FuzzFromZip.
func FuzzFromZip(f *testing.F) {
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, data []byte) {
		sk, err := skill.FromZip(bytes.NewReader(data), int64(len(data)), &skill.Options{MaxBytes: 1 << 20, MaxFiles: 100})
		if err != nil {
			var ve *skill.ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("not a *ValidationError with problems: %v", err)
			}
			return
		}
		if e := skill.CheckName(sk.Name()); e != nil {
			t.Fatalf("accepted name: %v", e)
		}
		for _, f := range sk.Files() {
			if !fs.ValidPath(f.Path) || strings.Contains(f.Path, `\`) {
				t.Fatalf("accepted path %q", f.Path)
			}
		}
	})
}
