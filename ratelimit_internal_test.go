package toolset

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"golang.org/x/time/rate"
)

// The windows of one rate-limit option do not grow with every name an
// origin ever announced: the idle ones (their bucket full) are dropped as
// they grow, the ones in use kept.
func TestRateWindowsDropIdleWindows(t *testing.T) {
	var w rateWindows
	busy := w.limiter("busy", rate.NewLimiter(rate.Every(time.Hour), 1))
	busy.Allow()
	for i := range 10_000 {
		w.limiter("idle"+strconv.Itoa(i), rate.NewLimiter(rate.Every(time.Hour), 1))
	}
	assert.LessOrEqual(t, len(w.byID), minPruneWindows+1)
	assert.Same(t, busy, w.limiter("busy", rate.NewLimiter(rate.Every(time.Hour), 1)), "the window in use is kept")
}
