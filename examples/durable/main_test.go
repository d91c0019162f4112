package main

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset/redistoolset"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startRedis starts a redis-server of the test's own on a free port, as
// redistoolset's tests do, and returns its address.
func startRedis(t *testing.T) string {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (apt-get install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + port
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	require.Eventually(t, func() bool { return c.Ping(context.Background()).Err() == nil },
		10*time.Second, 10*time.Millisecond, "redis-server did not answer")
	return addr
}

// TestRun: the run pauses in replica 1, is approved and runs in replica
// 2, once, and leaves nothing in Redis.
func TestRun(t *testing.T) {
	addr := startRedis(t)
	var out strings.Builder
	refunds := 0
	require.NoError(t, run(context.Background(), addr, "req-42", &refunds, &out))
	t.Log(out.String())
	assert.Equal(t, "replica 1: paused, call_1 waits for approval\n"+
		"replica 2: approving call_1 refund {\"order\":\"A-7\"}\n"+
		"replica 2: refunded A-7\n", out.String())
	assert.Equal(t, 1, refunds)

	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	keys, err := c.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "the ended run's state is deleted")
}

// TestRunCorruptState: state in Redis that is not a run's is refused
// with an error, and no refund runs.
func TestRunCorruptState(t *testing.T) {
	addr := startRedis(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	key := redistoolset.DefaultPrefix + "run:req-9" // where run req-9 is kept
	require.NoError(t, c.HSet(ctx, key, "d", "{not json", "v", 1).Err())

	refunds := 0
	err := run(ctx, addr, "req-9", &refunds, new(strings.Builder))
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "resuming run req-9")
	assert.Zero(t, refunds)
}
