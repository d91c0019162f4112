package toolset_test

import (
	"context"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two tools that share a window under one key with different limits must
// still be limited: calling them in turn must not give each call a fresh
// window.
func TestMemoryRateLimiterKeyWithTwoLimitsStillLimits(t *testing.T) {
	ctx := context.Background()
	l := toolset.NewMemoryRateLimiter()
	a := toolset.RateLimit{Requests: 2, Interval: time.Hour, Burst: 2}
	b := toolset.RateLimit{Requests: 3, Interval: time.Hour, Burst: 3}
	admitted := 0
	for i := range 20 {
		lim := a
		if i%2 == 1 {
			lim = b
		}
		_, ok, err := l.Reserve(ctx, "billing", lim, 0)
		require.NoError(t, err)
		if ok {
			admitted++
		}
	}
	assert.LessOrEqual(t, admitted, 3, "one window: at most the larger burst in an hour")
}
