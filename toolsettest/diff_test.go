package toolsettest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLineDiff(t *testing.T) {
	tests := []struct {
		name, a, b, want string
	}{
		{"equal", "x\ny\n", "x\ny\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"from nothing", "", "a\nb\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"to nothing", "a\n", "", "--- a\n+++ b\n@@ -1 +0,0 @@\n-a\n"},
		{"two hunks far apart", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			"--- a\n+++ b\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
		{"close changes share a hunk", "1\n2\n3\n4\n5\n", "X\n2\n3\n4\nY\n", "--- a\n+++ b\n@@ -1,5 +1,5 @@\n-1\n+X\n 2\n 3\n 4\n-5\n+Y\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, lineDiff("a", tt.a, "b", tt.b))
		})
	}
}

func TestLineDiffFarApartTexts(t *testing.T) {
	a := strings.Repeat("a\n", maxEdits)
	b := strings.Repeat("b\n", maxEdits)
	lines := strings.Split(lineDiff("a", a, "b", b), "\n")
	assert.Equal(t, []string{"--- a", "+++ b", "@@ -1,2000 +1,2000 @@"}, lines[:3])
	assert.Equal(t, strings.Repeat("-a ", maxEdits)+strings.Repeat("+b ", maxEdits), strings.Join(lines[3:len(lines)-1], " ")+" ",
		"shown as wholly replaced")
}

// FuzzDiffOps checks that an edit script turns one text into the other.
func FuzzDiffOps(f *testing.F) {
	f.Add("a\nb\nc", "a\nc\nd")
	f.Add("", "x")
	f.Add("x\nx\nx", "x")
	f.Fuzz(func(t *testing.T, x, y string) {
		a, b := splitLines(x), splitLines(y)
		var gotA, gotB []string
		for _, o := range diffOps(a, b) {
			if o.kind != '+' {
				gotA = append(gotA, o.text)
			}
			if o.kind != '-' {
				gotB = append(gotB, o.text)
			}
		}
		assert.Equal(t, a, gotA)
		assert.Equal(t, b, gotB)
	})
}
