//go:build !race

package agentfile_test

import "os"

// exitTest ends the test binary with code; see exit_race_test.go.
func exitTest(code int) { os.Exit(code) }
