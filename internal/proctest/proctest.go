// Package proctest finds processes by their command line, for tests that
// check that the processes a tool started are gone.
//
// Modules of this repository other than the core import this package (the
// tests of toolpkg and cmd/toolset). Each is built against a released
// version of the core module, so the exported API of this package is
// frozen within a major version: it changes only by additions. See README
// "Modules".
package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// WithArg returns the live processes whose command line contains arg,
// leaving out zombies and the go command running the tests.
func WithArg(arg string) []int {
	var pids []int
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), arg) || strings.Contains(string(b), "go test") {
			continue
		}
		if zombie(de.Name()) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// zombie reports whether the process is a zombie, or already gone. The
// state follows the command name in /proc/PID/stat, which is in
// parentheses and may itself hold spaces.
func zombie(pid string) bool {
	st, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(st), ')')
	fields := strings.Fields(string(st[i+1:]))
	return len(fields) == 0 || fields[0] == "Z"
}
