package toolset_test

import (
	"context"
	"testing"
	"time"
)

// policyDeadline bounds every wait a policy can cause in a test that runs
// on the real clock (a rate limit's turn, an identical call in flight): a
// broken policy fails the test in seconds instead of hanging it until go
// test's timeout. Tests in a synctest bubble need no bound: their waits
// pass at once, and a wait that never ends is a deadlock the bubble
// reports.
const policyDeadline = 5 * time.Second

// bounded returns a context that ends policyDeadline from now, or when
// the test ends.
func bounded(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), policyDeadline)
	t.Cleanup(cancel)
	return ctx
}
