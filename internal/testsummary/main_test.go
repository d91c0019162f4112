package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// summarize runs the summary over a stream and returns what it printed
// and whether it reported success.
func summarize(t *testing.T, stream string) (string, bool) {
	t.Helper()
	s := newSummary()
	var out bytes.Buffer
	require.NoError(t, s.read(strings.NewReader(stream), &out))
	ok := s.report(&out, 10, 6)
	return out.String(), ok
}

func recorded(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return string(b)
}

// The streams in testdata were recorded from go test -json of small
// packages: passing, failing and skipping tests, subtests, parallel
// tests, a package that does not build and one without tests.
func TestMixedRun(t *testing.T) {
	out, ok := summarize(t, recorded(t, "pass_fail_skip.json"))
	assert.False(t, ok)
	lines := strings.Split(out, "\n")
	assert.Regexp(t, `^FAIL  example.com/rec/a +0\.1s$`, lines[0])
	assert.Regexp(t, `^ok    example.com/rec/b +0\.0s$`, lines[1])
	assert.Regexp(t, `^FAIL  example.com/rec/c +0\.0s$`, lines[2])
	assert.Equal(t, "      (1 package without tests)", lines[3], "example.com/rec/e has no tests")
	assert.NotContains(t, out, "example.com/rec/e ")

	// Failures in full: the message and its continuation line, the log
	// before it.
	assert.Contains(t, out, "=== FAIL example.com/rec/a TestFails (0.00s)\n=== RUN   TestFails\n"+
		"    a_test.go:29: about to compare\n    a_test.go:30: got 1, want 2\n        second line of the message\n")
	// The failed subtest, and not its parent, which logged nothing.
	assert.Contains(t, out, "=== FAIL example.com/rec/a TestParentFails/bad (0.00s)\n")
	assert.Contains(t, out, "a_test.go:35: bad subtest")
	assert.NotContains(t, out, "=== FAIL example.com/rec/a TestParentFails (")
	// A package that failed through its tests only is not repeated.
	assert.NotContains(t, out, "example.com/rec/a (outside its tests)")
	// The build error, in full.
	assert.Contains(t, out, "=== FAIL example.com/rec/c (build failed: example.com/rec/c [example.com/rec/c.test])\n")
	assert.Contains(t, out, `c/c.go:3:23: cannot use "not an int" (untyped string constant) as int value in return statement`)
}

func TestSkipsGroupByReason(t *testing.T) {
	out, _ := summarize(t, recorded(t, "pass_fail_skip.json"))
	// Across packages and subtests; the t.Log before the skip is not
	// the reason.
	assert.Contains(t, out, "\nskipped 4 tests: redis-server not installed (apt-get install redis-server)\n"+
		"    example.com/rec/a: TestRedisOne, TestRedisTwo, TestSub/redis\n"+
		"    example.com/rec/b: TestRedis\n"+
		"skipped 1 test: needs a python3 (apt-get install python3)\n"+
		"    example.com/rec/a: TestParallelB\n"+
		"skipped 1 test: (no reason given)\n"+
		"    example.com/rec/a: TestNoReason\n")
	assert.NotContains(t, out, "looking for redis-server")
}

func TestSkippedNamesAreBounded(t *testing.T) {
	var stream strings.Builder
	stream.WriteString(`{"Action":"start","Package":"p"}` + "\n")
	for i := range 9 {
		name := "TestN" + string(rune('0'+i))
		stream.WriteString(`{"Action":"run","Package":"p","Test":"` + name + `"}` + "\n")
		stream.WriteString(`{"Action":"output","Package":"p","Test":"` + name + `","Output":"    x_test.go:3: no widget\n"}` + "\n")
		stream.WriteString(`{"Action":"skip","Package":"p","Test":"` + name + `"}` + "\n")
	}
	stream.WriteString(`{"Action":"pass","Package":"p","Elapsed":0.5}` + "\n")
	out, ok := summarize(t, stream.String())
	assert.True(t, ok)
	assert.Contains(t, out, "skipped 9 tests: no widget\n    p: TestN0, TestN1, TestN2, TestN3, TestN4, TestN5 and 3 more\n")
}

func TestSlowestTests(t *testing.T) {
	out, _ := summarize(t, recorded(t, "pass_fail_skip.json"))
	_, slow, found := strings.Cut(out, "\nslowest ")
	require.True(t, found, out)
	lines := strings.Split(strings.TrimSpace(slow), "\n")
	require.Greater(t, len(lines), 3)
	// Subtests count, with their package; slowest first.
	assert.Regexp(t, `^ +0\.06s  example.com/rec/a  TestSub(/slow)?$`, lines[1])
	assert.Regexp(t, `^ +0\.06s  example.com/rec/a  TestSub(/slow)?$`, lines[2])
	assert.NotEqual(t, lines[1], lines[2])
	assert.Regexp(t, `^ +0\.05s  example.com/rec/a  TestPass$`, lines[3])
	assert.NotContains(t, slow, "0.00s", "instant tests are not listed")
}

func TestAllPassing(t *testing.T) {
	out, ok := summarize(t, recorded(t, "all_ok.json"))
	assert.True(t, ok)
	assert.NotContains(t, out, "FAIL")
	assert.Contains(t, out, "skipped 1 test: redis-server not installed (apt-get install redis-server)")
}

// A package whose tests pass and whose TestMain then fails (as goleak
// does) fails, with what TestMain printed.
func TestFailureOutsideTests(t *testing.T) {
	out, ok := summarize(t, recorded(t, "testmain_fail.json"))
	assert.False(t, ok)
	assert.Contains(t, out, "=== FAIL example.com/rec/d (outside its tests)\n")
	assert.Contains(t, out, "leak: found unexpected goroutines")
}

// A test running when the binary timed out has no result: it is named,
// with the panic that says where it was.
func TestTimeout(t *testing.T) {
	out, ok := summarize(t, recorded(t, "timeout.json"))
	assert.False(t, ok)
	assert.Contains(t, out, "=== example.com/rec/d TestHangs did not finish\n")
	assert.Contains(t, out, "panic: test timed out after 2s")
	assert.Contains(t, out, "example.com/rec/d.TestHangs(")
}

// A stream cut short (go test killed) fails, naming what was running.
func TestTruncatedStream(t *testing.T) {
	stream := recorded(t, "all_ok.json")
	i := strings.Index(stream, `"Action":"pass","Package":"example.com/rec/b","Test":"TestOK"`)
	require.Positive(t, i)
	out, ok := summarize(t, stream[:strings.LastIndex(stream[:i], "\n")+1])
	assert.False(t, ok)
	assert.Contains(t, out, "FAIL  example.com/rec/b")
	assert.Contains(t, out, "=== example.com/rec/b TestOK did not finish")
	assert.Contains(t, out, "=== example.com/rec/b did not finish")
}

// Lines that are not events (the go command's own errors on a merged
// standard error) are passed through; junk and events of unknown kinds do
// not crash the summary. An empty stream reports nothing and fails
// nothing: the go command's own exit status says why it printed nothing.
func TestHostileInput(t *testing.T) {
	stream := "go: downloading example.com/x v1.0.0\n" +
		"{not json\n" +
		`{"Action":"output"}` + "\n" +
		`{"Action":"attr","Package":"p","Test":"TestA","Key":"k","Value":"v"}` + "\n" +
		`{"Action":"run","Package":"p","Test":"TestA"}` + "\n" +
		`{"Action":"output","Package":"p","Test":"TestA","Output":"partial line without newline"}` + "\n" +
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":-3}` + "\n" +
		`{"Action":"pass","Package":"p","Elapsed":1e308}` + "\n" +
		`[1,2,3]` + "\n" + "\n"
	out, ok := summarize(t, stream)
	assert.True(t, ok)
	assert.Contains(t, out, "go: downloading example.com/x v1.0.0\n{not json\n")
	assert.Contains(t, out, "[1,2,3]\n")
	assert.Contains(t, out, "ok    p")

	_, ok = summarize(t, "")
	assert.True(t, ok)

	// One line longer than the bound is an error, not memory without end.
	s := newSummary()
	err := s.read(strings.NewReader(`{"Action":"output","Output":"`+strings.Repeat("x", maxLine)+`"}`), &bytes.Buffer{})
	assert.ErrorContains(t, err, "reading go test -json")
}

// The command exits 1 on a failure and 0 on success, so that a pipeline
// under pipefail fails with it.
func TestExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := t.TempDir() + "/testsummary"
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for name, want := range map[string]int{"all_ok.json": 0, "pass_fail_skip.json": 1, "timeout.json": 1} {
		f, err := os.Open("testdata/" + name)
		require.NoError(t, err)
		cmd := exec.Command(bin)
		cmd.Stdin = f
		err = cmd.Run()
		f.Close()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, want, code, name)
	}
	err = exec.Command(bin, "extra").Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode())
}
