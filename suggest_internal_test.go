package toolset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNearestIsTheBruteForceNearest checks the pruned scan of nearest
// against scoring every name, on sets small enough that the scan is not
// capped.
func TestNearestIsTheBruteForceNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	word := func() string {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = "abc_"[r.IntN(4)]
		}
		return string(b)
	}
	for round := range 500 {
		seen := map[string]bool{}
		var tools []Tool
		for range 1 + r.IntN(maxScoredNames/4) {
			if w := word(); !seen[w] {
				seen[w] = true
				tools = append(tools, Tool{Name: w})
			}
		}
		ts := newTools("a", newSnapshot(tools), nil)
		f := ts.unknownFacts()
		want := word()
		k := 1 + r.IntN(maxListedNames)
		got, _ := f.nearest(want, min(k, len(f.sorted)))

		d := newDistance(want)
		all := make([]scoredName, len(f.sorted))
		for i, n := range f.sorted {
			all[i] = scoredName{rank: int32(i), score: d.to(n)}
		}
		slices.SortFunc(all, func(a, b scoredName) int {
			if a.score != b.score {
				return a.score - b.score
			}
			return int(a.rank - b.rank)
		})
		if exp := all[:min(k, len(all))]; !slices.Equal(got, exp) {
			t.Fatalf("round %d: nearest(%q, %d) = %v, want %v", round, want, k, got, exp)
		}
	}
}

func TestNearestScoresABoundedNumberOfNames(t *testing.T) {
	var tools []Tool
	for i := range 50_000 {
		tools = append(tools, Tool{Name: fmt.Sprintf("n%063d", i)})
	}
	f := newTools("a", newSnapshot(tools), nil).unknownFacts()
	_, scored := f.nearest("n", maxListedNames)
	if scored > maxScoredNames {
		t.Fatalf("scored %d names, at most %d allowed", scored, maxScoredNames)
	}
}
