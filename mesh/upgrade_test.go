package mesh

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A runtime that moves to a new version of a toolset withdraws the old
// one: once it stops, no client still believes the old version is served.
func TestUpgradedRuntimeWithdrawsOldVersion(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	r := startRuntime(t, nc, "", "rt1", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := NewClient(ctx, connect(t, s), &ClientOptions{Agent: "agent1", Logger: quietLogger()})
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool {
		info, err := c.Info("demo")
		return err == nil && info.Version == 1
	}, 10*time.Second, 10*time.Millisecond)

	publish(t, nc, "demo", 2, meshPackage(t, "v2"), nil)
	require.Eventually(t, func() bool {
		info, err := c.Info("demo")
		return err == nil && info.Version == 2
	}, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, r.Close(ctx))

	// The only runtime is gone: neither version is served. Nothing but
	// the runtime's withdrawals makes a client forget a version, so the
	// wait is as long as a loaded machine may need to deliver them.
	assert.Eventually(t, func() bool {
		_, err := c.Info("demo")
		return err != nil
	}, 20*time.Second, 10*time.Millisecond)
	info, err := c.Info("demo")
	assert.Error(t, err, "Info still reports %+v", info)
}
