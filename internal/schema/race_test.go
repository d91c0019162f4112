//go:build race

package schema

// raceEnabled reports a build with the race detector.
const raceEnabled = true
