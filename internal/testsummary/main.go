// Command testsummary reads the output of go test -json on its standard
// input and prints what a contributor needs from a run of the suite,
// without -v:
//
//   - one line per package: ok or FAIL and its time;
//   - every failure in full: the output of each failed test, and of a
//     package that failed outside its tests (a build error, a panic, a
//     leak found by TestMain, a timeout);
//   - the skipped tests grouped by the reason they give, so that a
//     machine without a tool some tests need says so in one line:
//     "skipped 19 tests: redis-server not installed ...";
//   - the slowest tests, top-level and subtests, with their package.
//
// It exits 1 when a package or test failed or did not finish, and 0
// otherwise. Lines of the input that are not JSON (the go command's own
// errors, when its standard error is merged in) are printed as they come.
//
// Usage:
//
//	go test -json ./... 2>&1 | go run ./internal/testsummary [-slowest N] [-names N]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

func main() {
	slowest := flag.Int("slowest", 10, "how many of the slowest tests to list (0: none)")
	names := flag.Int("names", 6, "how many names of skipped tests to list per package and reason")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: go test -json ... | testsummary [-slowest N] [-names N]")
		os.Exit(2)
	}
	s := newSummary()
	if err := s.read(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if !s.report(os.Stdout, *slowest, *names) {
		os.Exit(1)
	}
}

// event is one line of go test -json (see go doc cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
	ImportPath  string // of build-output and build-fail events
}

// test is what the stream said of one test (or, with name "", of a
// package as a whole).
type test struct {
	pkg, name string
	output    strings.Builder
	result    string // pass, fail, skip, or "" while it runs
	elapsed   float64
	order     int    // when it ended, for failures in the order they happened
	build     string // of a package: what failed to build, if that is why it failed
}

// pkg is one package of the run.
type pkg struct {
	name    string
	self    *test
	tests   map[string]*test
	order   []string // test names in the order they started
	noTests bool
}

// summary accumulates the stream.
type summary struct {
	pkgs   map[string]*pkg
	order  []string            // package names in the order they started
	builds map[string][]string // build output by import path
	ended  int
}

func newSummary() *summary {
	return &summary{pkgs: map[string]*pkg{}, builds: map[string][]string{}}
}

// maxLine bounds one line of input; longer lines (a test printing a huge
// blob) are an error rather than memory without limit.
const maxLine = 16 << 20

// read consumes the stream, echoing non-JSON lines to w.
func (s *summary) read(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		s.add(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading go test -json: %w", err)
	}
	return nil
}

func (s *summary) pkg(name string) *pkg {
	p := s.pkgs[name]
	if p == nil {
		p = &pkg{name: name, self: &test{pkg: name}, tests: map[string]*test{}}
		s.pkgs[name] = p
		s.order = append(s.order, name)
	}
	return p
}

func (s *summary) add(e event) {
	switch e.Action {
	case "build-output":
		s.builds[e.ImportPath] = append(s.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package)
	t := p.self
	if e.Test != "" {
		t = p.tests[e.Test]
		if t == nil {
			t = &test{pkg: e.Package, name: e.Test}
			p.tests[e.Test] = t
			p.order = append(p.order, e.Test)
		}
	}
	switch e.Action {
	case "output":
		t.output.WriteString(e.Output)
	case "pass", "fail", "skip":
		t.result, t.elapsed = e.Action, e.Elapsed
		s.ended++
		t.order = s.ended
		if e.Test == "" && e.Action == "skip" {
			p.noTests = true
		}
		if e.Test == "" && e.FailedBuild != "" {
			t.build = e.FailedBuild
			for _, o := range s.builds[e.FailedBuild] {
				t.output.WriteString(o)
			}
		}
	}
}

// report prints the summary and reports whether everything passed.
func (s *summary) report(w io.Writer, slowest, names int) bool {
	ok := true
	var failed []*test
	width := 0
	for _, name := range s.order {
		width = max(width, len(name))
	}
	noTests := 0
	for _, name := range s.order {
		p := s.pkgs[name]
		if p.noTests && len(p.tests) == 0 {
			noTests++
			continue
		}
		status := strings.ToUpper(p.self.result)
		switch p.self.result {
		case "pass":
			status = "ok"
		case "":
			status = "FAIL"
			ok = false
		case "fail":
			ok = false
		}
		fmt.Fprintf(w, "%-4s  %-*s  %6.1fs\n", status, width, name, p.self.elapsed)
		failed = append(failed, p.failures()...)
	}
	if noTests > 0 {
		fmt.Fprintf(w, "      (%d %s without tests)\n", noTests, plural(noTests, "package", "packages"))
	}
	sort.SliceStable(failed, func(i, j int) bool { return failed[i].order < failed[j].order })
	for _, t := range failed {
		ok = false
		fmt.Fprintf(w, "\n%s\n", failureHeading(t))
		out := strings.TrimRight(t.output.String(), "\n")
		if out == "" {
			out = "(no output)"
		}
		fmt.Fprintln(w, out)
	}
	s.reportSkips(w, names)
	s.reportSlowest(w, slowest)
	return ok
}

func failureHeading(t *test) string {
	switch {
	case t.name == "" && t.result == "":
		return fmt.Sprintf("=== %s did not finish", t.pkg)
	case t.name == "" && t.build != "":
		return fmt.Sprintf("=== FAIL %s (build failed: %s)", t.pkg, t.build)
	case t.name == "":
		return fmt.Sprintf("=== FAIL %s (outside its tests)", t.pkg)
	case t.result == "":
		return fmt.Sprintf("=== %s %s did not finish", t.pkg, t.name)
	default:
		return fmt.Sprintf("=== FAIL %s %s (%.2fs)", t.pkg, t.name, t.elapsed)
	}
}

// failures lists what to print in full for p: each failed test with no
// failed subtest, a failed parent only when it logged something of its
// own, the tests that never ended (a timeout or a crash), and the
// package's own output when it failed for a reason beside its tests.
func (p *pkg) failures() []*test {
	var out []*test
	for _, name := range p.order {
		t := p.tests[name]
		switch {
		case t.result == "":
			// No result: the binary died or timed out while it ran.
			out = append(out, t)
		case t.result == "fail" && (!p.hasFailedChild(name) || ownLines(t.output.String()) > 0):
			out = append(out, t)
		}
	}
	if p.self.result == "" || (p.self.result == "fail" && (len(out) == 0 || ownLines(p.self.output.String()) > 0)) {
		p.self.order = 1 << 30
		out = append(out, p.self)
	}
	return out
}

func (p *pkg) hasFailedChild(name string) bool {
	for other, t := range p.tests {
		if t.result == "fail" && strings.HasPrefix(other, name+"/") {
			return true
		}
	}
	return false
}

// framing matches the lines go test writes around a test's own output,
// and the package's closing lines.
var framing = regexp.MustCompile(`^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP):|PASS$|FAIL$|FAIL\t|ok  |exit status \d+$|testing: warning: no tests to run)`)

// ownLines counts the lines of out that are not framing.
func ownLines(out string) int {
	n := 0
	for l := range strings.Lines(out) {
		l = strings.TrimRight(l, "\n")
		if strings.TrimSpace(l) != "" && !framing.MatchString(l) {
			n++
		}
	}
	return n
}

// logLine matches the start of a line written by t.Log, t.Skip and
// their kin: the file and line of the call.
var logLine = regexp.MustCompile(`^\s*[\w.\-]+\.go:\d+: `)

// skipReason is the message a skipped test gave: the last thing it
// logged (t.Skip's own message), continuation lines joined with spaces.
func skipReason(out string) string {
	var reason []string
	for l := range strings.Lines(out) {
		l = strings.TrimRight(l, "\n")
		switch {
		case framing.MatchString(l):
		case logLine.MatchString(l):
			reason = []string{strings.TrimSpace(l[len(logLine.FindString(l)):])}
		case len(reason) > 0 && strings.TrimSpace(l) != "":
			reason = append(reason, strings.TrimSpace(l))
		}
	}
	if len(reason) == 0 {
		return "(no reason given)"
	}
	return strings.Join(reason, " ")
}

func (s *summary) reportSkips(w io.Writer, names int) {
	type group struct {
		reason string
		n      int
		byPkg  map[string][]string
		pkgs   []string
	}
	groups := map[string]*group{}
	var reasons []string
	for _, pname := range s.order {
		p := s.pkgs[pname]
		for _, tname := range p.order {
			t := p.tests[tname]
			if t.result != "skip" {
				continue
			}
			r := skipReason(t.output.String())
			g := groups[r]
			if g == nil {
				g = &group{reason: r, byPkg: map[string][]string{}}
				groups[r] = g
				reasons = append(reasons, r)
			}
			g.n++
			if g.byPkg[pname] == nil {
				g.pkgs = append(g.pkgs, pname)
			}
			g.byPkg[pname] = append(g.byPkg[pname], tname)
		}
	}
	if len(reasons) == 0 {
		return
	}
	sort.SliceStable(reasons, func(i, j int) bool { return groups[reasons[i]].n > groups[reasons[j]].n })
	fmt.Fprintln(w)
	for _, r := range reasons {
		g := groups[r]
		fmt.Fprintf(w, "skipped %d %s: %s\n", g.n, plural(g.n, "test", "tests"), r)
		for _, pname := range g.pkgs {
			list := g.byPkg[pname]
			shown := list
			if len(shown) > names {
				shown = shown[:names]
			}
			more := ""
			if len(list) > len(shown) {
				more = fmt.Sprintf(" and %d more", len(list)-len(shown))
			}
			fmt.Fprintf(w, "    %s: %s%s\n", pname, strings.Join(shown, ", "), more)
		}
	}
}

func (s *summary) reportSlowest(w io.Writer, n int) {
	if n <= 0 {
		return
	}
	var all []*test
	for _, p := range s.pkgs {
		for _, t := range p.tests {
			if (t.result == "pass" || t.result == "fail") && t.elapsed > 0 {
				all = append(all, t)
			}
		}
	}
	if len(all) == 0 {
		return
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].elapsed != all[j].elapsed {
			return all[i].elapsed > all[j].elapsed
		}
		if all[i].pkg != all[j].pkg {
			return all[i].pkg < all[j].pkg
		}
		return all[i].name < all[j].name
	})
	all = all[:min(n, len(all))]
	fmt.Fprintf(w, "\nslowest %d %s:\n", len(all), plural(len(all), "test", "tests"))
	for _, t := range all {
		fmt.Fprintf(w, "  %7.2fs  %s  %s\n", t.elapsed, t.pkg, t.name)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
