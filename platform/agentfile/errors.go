package agentfile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Problem is one thing wrong with an agent file, and where.
type Problem struct {
	// File is the name the file was parsed under.
	File string
	// Line and Column are 1-based; zero when the problem is the whole
	// file's (too big, not UTF-8, ...), or its column is not known.
	Line, Column int
	// Message says what is wrong, quoting at most a bounded piece of the
	// file.
	Message string
}

// String returns "file:line:col: message", leaving out a position part
// that is zero.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	return b.String()
}

// CheckError reports every problem found in an agent file, in the order
// of their positions. [Parse] and [Check] return one.
type CheckError struct {
	Problems []Problem
	// Warnings are what [Parse] would have put in File.Warnings had the
	// document no problems, so that a program can show both; they are
	// not part of Error.
	Warnings []Problem
}

// Error implements error: one problem a line, "file:line:col: message".
func (e *CheckError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// maxProblems bounds the problems reported; the rest are counted.
const maxProblems = 100

// problems collects the problems of one file, and its warnings.
type problems struct {
	file    string
	list    []Problem
	dropped int

	warnings []Problem
	wdropped int
}

// warn adds a warning: something kept but not acted on, or spelled in
// an older way, which never fails a load.
func (ps *problems) warn(pos Position, format string, args ...any) {
	if len(ps.warnings) >= maxProblems {
		ps.wdropped++
		return
	}
	ps.warnings = append(ps.warnings, Problem{File: ps.file, Line: pos.Line, Column: pos.Column, Message: fmt.Sprintf(format, args...)})
}

// warningList returns the warnings sorted by position, or nil.
func (ps *problems) warningList() []Problem {
	if len(ps.warnings) == 0 {
		return nil
	}
	list := sortProblems(ps.warnings)
	if ps.wdropped > 0 {
		list = append(list, Problem{File: ps.file, Message: fmt.Sprintf("and %d more warnings", ps.wdropped)})
	}
	return list
}

// sortProblems returns a copy of list sorted by position.
func sortProblems(list []Problem) []Problem {
	list = slices.Clone(list)
	slices.SortStableFunc(list, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return list
}

func (ps *problems) add(pos Position, format string, args ...any) {
	if len(ps.list) >= maxProblems {
		ps.dropped++
		return
	}
	ps.list = append(ps.list, Problem{File: ps.file, Line: pos.Line, Column: pos.Column, Message: fmt.Sprintf(format, args...)})
}

// err returns the problems as a *CheckError sorted by position, or nil.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	list := sortProblems(ps.list)
	if ps.dropped > 0 {
		list = append(list, Problem{File: ps.file, Message: fmt.Sprintf("and %d more problems", ps.dropped)})
	}
	return &CheckError{Problems: list, Warnings: ps.warningList()}
}
