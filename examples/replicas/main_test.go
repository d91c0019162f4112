package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary be a replica, as the command is.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := serve(role, os.Getenv(addrEnv), os.Stdin, os.Stdout); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRun runs the demo and checks what it shows: 3 quotes admitted
// across both replicas, the fourth refused, and the refund paused in A,
// approved through B and run in A.
func TestRun(t *testing.T) {
	// The replicas are this test binary again: atexit_sleep_ms=0, for a
	// binary built with the race detector otherwise sleeps a second as it
	// exits.
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var out strings.Builder
	err := run(&out, os.Args[0])
	if errors.Is(err, errNoRedis) {
		t.Log(err)
		t.Skip("redis-server not installed (apt-get install redis-server)") // as redistoolset's tests say
	}
	require.NoError(t, err)
	got := out.String()
	t.Log(got)
	assert.Equal(t, 3, strings.Count(got, "result: ACME trades at 101.50"))
	assert.Contains(t, got, "replica B> quote ACME\n  model sees: tool \"quote\" is rate limited; try again in ")
	assert.Contains(t, got, "replica A> refund order-7\n  paused: call call_1 waits for approval; run saved\n")
	assert.Contains(t, got, "replica B> approve order-7\n  approved: call_1 refund {\"amount\":30,\"order\":\"A-7\"}\n")
	assert.Contains(t, got, "replica A> refund order-7\n  result: refunded 30 on A-7 by replica A\n")
	assert.NotContains(t, got, "error:")
}
