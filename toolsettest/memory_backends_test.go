package toolsettest_test

import (
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolsettest"
)

// The root's in-memory backends keep the contracts a third-party backend
// is held to. Their clock is the process's, so the suites run in a
// bubble, where an expiry is checked at its very instant.

func TestMemoryRunStoreConformance(t *testing.T) {
	toolsettest.TestRunStore(t, func(*testing.T) toolset.RunStore { return toolset.NewMemoryRunStore() }, toolsettest.InBubble())
}

func TestMemoryRateLimiterConformance(t *testing.T) {
	toolsettest.TestRateLimiter(t, func(*testing.T) toolset.RateLimiter { return toolset.NewMemoryRateLimiter() }, toolsettest.InBubble())
}
