package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset/toolsettest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// commandName is the name under which the test binary runs as the
// command (see TestMain).
const commandName = "agentloop"

// TestMain runs the command's main when the test binary is started under
// its name, as TestCommand does.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == commandName {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const wantAnswer = "Here is what I found: Lisbon: 24°C, sunny; Porto: 19°C, sunny; 250.00 EUR = 272.50 USD. Enjoy the trip!"

// TestRunScripted runs RunChatLoop in-process against the scripted model.
func TestRunScripted(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the model's cleanup, which closes it
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, script()...)
	client := scriptedClient(model)

	var out strings.Builder
	start := time.Now()
	answer, err := run(t.Context(), &out, client, "scripted")
	took := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, wantAnswer, answer)

	transcript := out.String()
	assert.Contains(t, transcript, "\nassistant: "+wantAnswer+"\n", "the answer is streamed")
	assert.Contains(t, transcript, "what the loop did, in 3 steps:\n")
	assert.Contains(t, transcript, "  <- call_convert invalid arguments for tool \"convert_currency\":\n     - \"amount\": expected number")
	assert.Contains(t, transcript, "  ?? call_convert_2 convert_currency {\"amount\":250,\"from\":\"EUR\",\"to\":\"USD\"} needs the user's approval: approved\n")
	assert.Contains(t, transcript, "  <- call_convert_2 250.00 EUR = 272.50 USD\n")
	// The two weather calls ran at once: two steps of one pause each, not
	// three pauses.
	assert.Less(t, took.Seconds(), 0.85, "the weather calls one after the other would take 0.9s")

	reqs := model.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"get_weather", "convert_currency"}, reqs[0].ToolNames(), "refund_booking is hidden from travellers")
	assert.Equal(t, 0, model.Remaining())
}

// TestRunByHand runs the hand-written loop in-process against the
// scripted model.
func TestRunByHand(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, script()...)
	client := scriptedClient(model)

	var out strings.Builder
	answer, err := runByHand(t.Context(), &out, client, "scripted")
	require.NoError(t, err)
	assert.Equal(t, wantAnswer, answer)

	transcript := out.String()
	assert.Contains(t, transcript, "turn 1: tools offered: get_weather, convert_currency\n", "refund_booking is hidden from travellers")
	assert.Contains(t, transcript, "  <- call_convert invalid arguments for tool \"convert_currency\":\n     - \"amount\": expected number")
	assert.Contains(t, transcript, "  ?? call_convert_2 convert_currency {\"amount\":250,\"from\":\"EUR\",\"to\":\"USD\"} needs the user's approval: approved\n")
	assert.Contains(t, transcript, "  <- call_convert_2 250.00 EUR = 272.50 USD\n")
	// The two weather calls ran at once: the turn took one pause, not two.
	m := regexp.MustCompile(`\(3 calls in ([0-9.]+)s\)`).FindStringSubmatch(transcript)
	require.NotNil(t, m, transcript)
	secs, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.Less(t, secs, 0.6, "two 0.3s calls one after the other would take 0.6s")

	reqs := model.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"get_weather", "convert_currency"}, reqs[0].ToolNames())
	assert.Equal(t, 0, model.Remaining())
}

// TestCommand runs the example as a process of its own, as a user would,
// with no API key.
func TestCommand(t *testing.T) {
	// The command is this test binary, run under the example's name.
	exe, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), commandName)
	require.NoError(t, os.Symlink(exe, bin))

	cmd := exec.CommandContext(t.Context(), bin)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	// A binary built with the race detector otherwise sleeps a second as
	// it exits.
	env = append(env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `^model: scripted, served on http://127\.0\.0\.1:\d+ `, string(out))
	assert.Contains(t, string(out), "\nassistant: "+wantAnswer+"\n")

	byHand := exec.CommandContext(t.Context(), bin, "-by-hand")
	byHand.Env = env
	out, err = byHand.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "turn 1: tools offered: get_weather, convert_currency\n")
	assert.Contains(t, string(out), "\nassistant: "+wantAnswer+"\n")
}
