//go:build race

package oteltoolset_test

const raceEnabled = true
