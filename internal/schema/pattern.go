package schema

import (
	"fmt"
	"regexp"
	"regexp/syntax"
)

// maxPatternSize bounds the program a regular expression from a schema may
// compile to, in instructions. Compiling costs time that grows faster than
// the program (1 KB of "x{1000}" is 140,000 instructions and takes half a
// second), and matching costs time proportional to it per byte; a pattern
// of ten thousand instructions compiles in about a millisecond. Real
// patterns are far smaller: ^[a-z0-9]{1,255}$ is about 500.
const maxPatternSize = 10000

// patternSize parses expr as a Go regular expression and reports an error
// if it is invalid or would compile to a program of more than
// maxPatternSize instructions; otherwise it returns an estimate from above
// of the instructions expr compiles to. It costs time linear in len(expr).
func patternSize(expr string) (int, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0, err
	}
	n := programSize(re)
	if n > maxPatternSize {
		return 0, fmt.Errorf("regular expression of %d bytes would compile to more than %d instructions; simplify it (fewer or smaller repetition counts)", len(expr), maxPatternSize)
	}
	return n, nil
}

// maxMatchCost bounds the work of matching one string against a pattern:
// matching costs up to the pattern's size per byte of the string
// ("[ab]{1000}c", eleven bytes, takes 0.8 s on 100 KB), so a string whose
// length times the pattern's size exceeds it is not matched but taken as
// not matching, which refuses it. Real patterns are small: one of 20
// instructions still matches 400 KB strings.
const maxMatchCost = 1 << 23

// matchAffordable reports whether a string of n bytes may be matched
// against a pattern of the given size (from patternSize).
func matchAffordable(size, n int) bool {
	return n <= maxMatchCost/max(size, 1)
}

// pattern is a compiled pattern and its size.
type pattern struct {
	re   *regexp.Regexp
	size int
}

// compilePattern compiles expr after patternSize.
func compilePattern(expr string) (*pattern, error) {
	size, err := patternSize(expr)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	return &pattern{re: re, size: size}, nil
}

// programSize estimates, from above, the instructions the compiled program
// of re has, saturating just past maxPatternSize.
func programSize(re *syntax.Regexp) int {
	const limit = maxPatternSize + 1
	sat := func(n int) int { return min(n, limit) }
	switch re.Op {
	case syntax.OpLiteral:
		return sat(len(re.Rune) + 1)
	case syntax.OpConcat, syntax.OpAlternate:
		n := 1
		for _, sub := range re.Sub {
			n = sat(n + programSize(sub) + 1)
		}
		return n
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return sat(programSize(re.Sub[0]) + 2)
	case syntax.OpRepeat:
		times := re.Max
		if times < 0 {
			times = re.Min + 1
		}
		times = max(times, 1)
		sub := programSize(re.Sub[0]) + 2
		if sub > limit/times {
			return limit
		}
		return sat(times * sub)
	default:
		return 2
	}
}
