//go:build !race

package toolset_test

// raceEnabled reports a build with the race detector, under which
// sync.Pool drops a share of what it is given on purpose: allocation
// counts are then not steady.
const raceEnabled = false
