package toolsettest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// BackendOption configures a backend suite: [TestRunStore],
// [TestRateLimiter], [TestResultCache].
type BackendOption func(*backendConfig)

type backendConfig struct {
	bubble     bool
	unit       time.Duration
	maxEntries int
}

// InBubble runs each check of a suite in a [testing/synctest] bubble, and
// makes the backend inside it: for a backend in the test's own process
// whose clock is the process's (time.Now, timers), time then passes at
// once, and exactly, so that an expiry is checked at the very instant it
// is due. A backend with a clock of its own (a server's) or that waits on
// the network cannot run in a bubble; leave it out for those. In a bubble,
// a call to the backend that never returns fails the check, and then
// ends the test binary with synctest's deadlock panic.
func InBubble() BackendOption { return func(c *backendConfig) { c.bubble = true } }

// TimeUnit sets the unit of time of a suite's time-dependent checks: the
// TTLs, windows and waits it uses are small multiples of it, and it is the
// slack allowed between the suite's clock and the backend's. The default
// is 100ms, and a second in a bubble (see [InBubble]). Give a backend with
// a coarse clock (whole seconds) or slow round trips a larger unit; a
// suite waits about 15 units in all. Whatever the unit, a call to the
// backend that does not return in 5 seconds fails the check.
func TimeUnit(d time.Duration) BackendOption {
	return func(c *backendConfig) {
		if d > 0 {
			c.unit = d
		}
	}
}

// MaxEntries says the backend keeps at most n entries (a result cache's
// bound), so that [TestResultCache] checks that bound: after more than n
// writes, at most n entries are found.
func MaxEntries(n int) BackendOption { return func(c *backendConfig) { c.maxEntries = n } }

func newBackendConfig(opts []BackendOption) backendConfig {
	var c backendConfig
	for _, o := range opts {
		o(&c)
	}
	if c.unit <= 0 {
		c.unit = 100 * time.Millisecond
		if c.bubble {
			c.unit = time.Second
		}
	}
	return c
}

// callTimeout bounds every call a suite makes to a backend, and every
// wait of its own: a backend that hangs fails the check instead of the
// whole test binary's timeout.
const callTimeout = 5 * time.Second

// run runs check as a subtest named name, in a bubble if the suite runs
// in one.
func (c *backendConfig) run(t *testing.T, name string, check func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		if c.bubble {
			synctest.Test(t, check)
			return
		}
		check(t)
	})
}

// sleep waits d, on the bubble's clock in a bubble.
func (c *backendConfig) sleep(d time.Duration) {
	time.Sleep(d)
	if c.bubble {
		synctest.Wait()
	}
}

// within runs f, which calls the backend, and fails t if it does not
// return in callTimeout. Its context ends then too.
func within[V any](t *testing.T, what string, f func(ctx context.Context) V) V {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	done := make(chan V, 1)
	go func() { done <- f(ctx) }()
	timer := time.NewTimer(callTimeout + time.Second)
	defer timer.Stop()
	select {
	case v := <-done:
		return v
	case <-timer.C:
		t.Fatalf("%s did not return in %v", what, callTimeout)
		panic("unreachable")
	}
}

// withDone runs f, which calls the backend, with a context that has
// already ended, and fails t if it does not return in callTimeout.
func withDone(t *testing.T, what string, f func(ctx context.Context) error) error {
	t.Helper()
	return within(t, what+" with a cancelled context", func(context.Context) error {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return f(ctx)
	})
}

// waitAll waits for wg, and fails t if that takes more than callTimeout.
func waitAll(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	within(t, "the concurrent calls", func(context.Context) struct{} { wg.Wait(); return struct{}{} })
}

// hostileKey is a key or ID a model or a client could make: empty, huge,
// binary, or one that shares a prefix with another, up to a separator a
// store might use or for hundreds of bytes.
type hostileKey struct {
	name string
	key  string
}

// hostileKeys returns keys that must each name their own entry.
func hostileKeys() []hostileKey {
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	return []hostileKey{
		{"empty", ""},
		{"plain", "a"},
		{"nul suffix", "a\x00"},
		{"nul inside", "a\x00b"},
		{"colon", "a:b"},
		{"slash", "a/b"},
		{"star", "a*"},
		{"space", "a "},
		{"newline", "a\nb"},
		{"percent", "a%00b"},
		{"invalid utf8", "a\xff\xfe"},
		{"all bytes", string(bin)},
		{"unicode", "ключ-键-🔑"},
		{"long, ends in 1", strings.Repeat("p", 512) + "1"},
		{"long, ends in 2", strings.Repeat("p", 512) + "2"},
		{"huge", strings.Repeat("k", 64<<10)},
		{"huge, other end", strings.Repeat("k", 64<<10-1) + "K"},
	}
}

// binaryValue returns n bytes that are not text: every byte value, NULs
// and invalid UTF-8 included.
func binaryValue(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/256)
	}
	return b
}

// quote shortens s for a failure message.
func quote(s string) string {
	const n = 40
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "?") + "…"
	}
	return s
}
