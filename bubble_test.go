package toolset_test

import (
	"testing"
	"testing/synctest"
)

// inBubble runs a subtest in a synctest bubble, where time is fake: a sleep
// or a timeout passes as soon as every goroutine of the bubble is blocked.
//
//	t.Run("ttl", inBubble(func(t *testing.T) { ... }))
func inBubble(f func(t *testing.T)) func(t *testing.T) {
	return func(t *testing.T) { synctest.Test(t, f) }
}

// synctestRun runs f in a synctest bubble.
func synctestRun(t *testing.T, f func(t *testing.T)) { synctest.Test(t, f) }
