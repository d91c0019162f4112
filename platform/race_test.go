//go:build race

package platform

// raceSlowdown is how much slower the race detector makes the code a
// test times: the bounds of those tests are for the code, not for it.
const raceSlowdown = 10
