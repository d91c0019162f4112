//go:build !race

package agentfile_test

const raceDetector = false
