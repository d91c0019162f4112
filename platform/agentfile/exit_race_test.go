//go:build race

package agentfile_test

import (
	"os"
	"syscall"
	"testing"
)

// exitTest ends the test binary with code. A binary built with the race
// detector sleeps a second at a clean exit (GORACE atexit_sleep_ms), for
// goroutines still running to report their races: testing.M.Run has
// already failed on any race found, and no goroutine of the tests is
// left, so a clean exit skips the sleep. A run that measures coverage
// exits as usual: the coverage files are written on exit.
func exitTest(code int) {
	if code == 0 && testing.CoverMode() == "" {
		syscall.Exit(0)
	}
	os.Exit(code)
}
