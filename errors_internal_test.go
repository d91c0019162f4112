package toolset

import (
	"math/rand/v2"
	"testing"
)

// levenshtein is the textbook dynamic programme, to check distance.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func TestDistanceIsLevenshtein(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = "abc_\xff"[r.IntN(5)]
		}
		return string(b)
	}
	cases := [][2]string{{"", ""}, {"", "abc"}, {"abc", ""}, {"kitten", "sitting"}, {"get_weather", "get_wether"}}
	for range 20000 {
		cases = append(cases, [2]string{word(64), word(100)})
	}
	for _, c := range cases {
		if got, want := newDistance(c[0]).to(c[1]), levenshtein(c[0], c[1]); got != want {
			t.Fatalf("distance(%q, %q) = %d, want %d", c[0], c[1], got, want)
		}
	}
}
