package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// jetstreamPutRace names the one goroutine nats.go v1.55.0 may leave
// behind after an Object Store Put: the Put starts a reconnect listener and
// clears its channel when it returns, and a listener scheduled only after
// that waits on a nil channel for ever. It is the library's, one per unlucky
// Put (a package publish), and not ours to stop.
var jetstreamPutRace = goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect")

// TestRun runs the demo and checks what it shows: both runtimes synced
// the package, the agent's calls ran with their progress, and once
// runtime-a stopped every call ran on runtime-b.
func TestRun(t *testing.T) {
	defer goleak.VerifyNone(t, jetstreamPutRace)
	var out strings.Builder
	require.NoError(t, run(&out))
	got := out.String()
	t.Log(got)

	assert.Contains(t, got, "published notes version 1\n")
	assert.Contains(t, got, "runtime-a: notes version 1 ready, tools notes__words\n"+
		"runtime-b: notes version 1 ready, tools notes__words\n")
	assert.Contains(t, got, "notes: ready, version 1\n")

	const calls = "-1: call notes__words {\"text\": \"one line of text\"}\n" +
		"  progress: splitting lines\n  progress: counting words\n  result: 4 words on 1 line\n"
	before := between(t, got, "\n5. ", "\n6. ")
	assert.Contains(t, before, "turn"+calls)
	assert.Contains(t, before, "  result: 6 words on 3 lines\n")
	assert.NotContains(t, before, "served by")

	after := between(t, got, "\n6. ", "")
	assert.Contains(t, after, "runtime-a stopped\n")
	assert.Contains(t, after, "after"+calls+"  served by runtime-b\n")
	assert.Equal(t, 3, strings.Count(after, "  served by runtime-b\n"))
	assert.NotContains(t, after, "runtime-a\n")
}

// between returns the part of s from start up to end, or to the end of s
// when end is "".
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, start)
	require.True(t, ok, "no %q in:\n%s", start, s)
	if end == "" {
		return rest
	}
	part, _, ok := strings.Cut(rest, end)
	require.True(t, ok, "no %q in:\n%s", end, s)
	return part
}
