package textcut

import (
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"héllo", 2, "h"}, // é is 2 bytes: not split
		{"héllo", 3, "hé"},
		{"日本", 4, "日"},
		{"日本", 2, ""},
	} {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q; want %q", c.s, c.n, got, c.want)
		}
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add("héllo 日本", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Prefix(s, n)
		if len(got) > max(n, 0) && got != s {
			t.Fatalf("Prefix(%q, %d) = %q: longer than %d", s, n, got, n)
		}
		if len(s) > 0 && s[:len(got)] != got {
			t.Fatalf("Prefix(%q, %d) = %q: not a prefix", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Prefix(%q, %d) = %q: splits a character", s, n, got)
		}
	})
}

func TestSuffix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "llo"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"hellé", 1, ""}, // é is 2 bytes: not split
		{"hellé", 2, "é"},
		{"日本", 4, "本"},
		{"日本", 2, ""},
	} {
		if got := Suffix(c.s, c.n); got != c.want {
			t.Errorf("Suffix(%q, %d) = %q; want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 4, "hell…"},
		{"héllo", 2, "h…"},
		{"hello", 0, "…"},
	} {
		if got := Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q; want %q", c.s, c.n, got, c.want)
		}
	}
}

func FuzzSuffix(f *testing.F) {
	f.Add("héllo 日本", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Suffix(s, n)
		if len(got) > max(n, 0) && got != s {
			t.Fatalf("Suffix(%q, %d) = %q: longer than %d", s, n, got, n)
		}
		if s[len(s)-len(got):] != got {
			t.Fatalf("Suffix(%q, %d) = %q: not a suffix", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Suffix(%q, %d) = %q: splits a character", s, n, got)
		}
	})
}
