package textcut

import (
	"strconv"
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

func TestHeadTail(t *testing.T) {
	mark := func(kept, left int) string { return "[" + strconv.Itoa(kept) + "+" + strconv.Itoa(left) + "]" }
	for _, c := range []struct {
		s                 string
		limit, head, tail int
		want              string
		cut               bool
	}{
		{"short", 10, 2, 2, "short", false},
		{"abcdefghij", 5, 2, 2, "ab[4+6]ij", true},
		{"abcdefghij", 5, 3, 0, "abc[3+7]", true},
		{"héllo wörld", 4, 2, 2, "h[3+10]ld", true}, // é and ö are not split
		{"abc", 1, 10, 10, "abc[3+0]", true},        // a head over s keeps it all
		{"abcdef", 1, 4, 4, "abcd[6+0]ef", true},    // overlapping: the tail takes what the head left
		{"abcdef", 0, -1, -1, "[0+6]", true},
	} {
		got, cut := HeadTail(c.s, c.limit, c.head, c.tail, mark)
		if got != c.want || cut != c.cut {
			t.Errorf("HeadTail(%q, %d, %d, %d) = %q, %v; want %q, %v", c.s, c.limit, c.head, c.tail, got, cut, c.want, c.cut)
		}
	}
}
