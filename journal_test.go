package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type journalArgs struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

// A journaled call made again with the same ID and arguments returns what
// it returned, without running the tool; another ID runs it.
func TestCallJournalReplaysACallMadeAgain(t *testing.T) {
	var runs atomic.Int32
	pay := toolset.NewTool("pay", "Pays.", func(_ context.Context, a journalArgs) (string, error) {
		n := runs.Add(1)
		if a.Amount > 100 {
			return "", toolset.NewModelError("over the limit")
		}
		return fmt.Sprintf("paid %d to %s (#%d)", a.Amount, a.To, n), nil
	})
	run := testRun(t, "journal", toolset.WithCallJournal(toolset.JournalOptions{}))
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "a", pay)
	require.NoError(t, err)
	call := func(id, args string) (any, error) {
		return tools.Execute(turn, toolset.ToolCall{ID: id, Name: "pay", Args: json.RawMessage(args)})
	}
	first, err := call("c1", `{"to":"bob","amount":5}`)
	require.NoError(t, err)
	again, err := call("c1", `{ "amount": 5, "to": "bob" }`)
	require.NoError(t, err)
	assert.Equal(t, first, again, "the same call in another JSON form is replayed")
	assert.Equal(t, int32(1), runs.Load())

	_, err = call("c2", `{"to":"bob","amount":500}`)
	msg, forModel := toolset.ErrorText(err)
	require.True(t, forModel)
	_, err = call("c2", `{"to":"bob","amount":500}`)
	replayed, forModel := toolset.ErrorText(err)
	require.True(t, forModel)
	assert.Equal(t, msg, replayed, "the model sees the same error again")
	assert.Equal(t, int32(2), runs.Load())

	res, err := call("c3", `{"to":"bob","amount":5}`)
	require.NoError(t, err)
	assert.Equal(t, "paid 5 to bob (#3)", res, "another call ID is another call")
	_, err = call("", `{"to":"bob","amount":5}`)
	require.NoError(t, err)
	_, err = call("", `{"to":"bob","amount":5}`)
	require.NoError(t, err)
	assert.Equal(t, int32(5), runs.Load(), "calls without an ID are not journaled")
}

// A call ID reused for another call stops the run; a call that failed
// with an error that stops the run is not kept, and runs when made again.
func TestCallJournalRefusesAReusedID(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	tool := toolset.NewTool("pay", "Pays.", func(_ context.Context, a journalArgs) (string, error) {
		if fail.Load() {
			return "", errors.New("bank unreachable")
		}
		return "paid", nil
	})
	run := testRun(t, "reuse", toolset.WithCallJournal(toolset.JournalOptions{}))
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "a", tool, echoTool("other"))
	require.NoError(t, err)
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"bob","amount":5}`)})
	require.Error(t, err)
	fail.Store(false)
	res, err := tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"bob","amount":5}`)})
	require.NoError(t, err, "a call whose error stopped the run is not replayed")
	assert.Equal(t, "paid", res)

	_, err = tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"eve","amount":5}`)})
	var reused *toolset.CallIDReusedError
	require.ErrorAs(t, err, &reused)
	assert.Equal(t, toolset.CallIDReusedError{CallID: "c1", Tool: "pay", Earlier: "pay"}, *reused)
	_, forModel := toolset.ErrorText(err)
	assert.False(t, forModel)
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "other", Args: json.RawMessage(`{}`)})
	require.ErrorAs(t, err, &reused)
	assert.Contains(t, err.Error(), `was used for tool "pay" and now for tool "other"`)
}

// The journal keeps its bounds: the oldest calls are forgotten, and a
// large result is kept as its text, cut.
func TestCallJournalBounds(t *testing.T) {
	var runs atomic.Int32
	big := toolset.NewTool("big", "Big.", func(_ context.Context, a journalArgs) (string, error) {
		runs.Add(1)
		return strings.Repeat("x", a.Amount), nil
	})
	run := testRun(t, "bounds", toolset.WithCallJournal(toolset.JournalOptions{MaxEntries: 2, MaxResultBytes: 1000}))
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "a", big)
	require.NoError(t, err)
	call := func(id string, n int) any {
		res, err := tools.Execute(turn, toolset.ToolCall{ID: id, Name: "big", Args: json.RawMessage(fmt.Sprintf(`{"to":"x","amount":%d}`, n))})
		require.NoError(t, err)
		return res
	}
	for _, id := range []string{"a", "b", "c"} {
		call(id, 1)
	}
	call("a", 1)
	assert.Equal(t, int32(4), runs.Load(), "the oldest call was forgotten, and ran again")
	call("c", 1)
	assert.Equal(t, int32(4), runs.Load())

	res := call("huge", 5000)
	assert.Len(t, res, 5000, "the caller gets the whole result")
	again := call("huge", 5000)
	text, ok := again.(string)
	require.True(t, ok, "%T", again)
	assert.Less(t, len(text), 1000, "kept cut")
	assert.True(t, strings.HasPrefix(text, "xxx"), text)
	assert.Equal(t, int32(5), runs.Load())
}

// TestCallJournalAcrossACrash runs a journaled run in a child process
// that dies in the middle of a call; the run resumed here replays the
// call that finished, asks before running again the one that was cut
// short, and runs it once approved.
func TestCallJournalAcrossACrash(t *testing.T) {
	const test = "TestCallJournalAcrossACrash"
	dir := os.Getenv("TOOLSET_RUNSTORE_DIR")
	if childRole == "crash" {
		store := &fileRunStore{dir: dir}
		ctx := context.Background()
		// A short lease: the process that resumes the run after the crash
		// need not wait for it.
		run, err := toolset.ResumeRun(ctx, store, "journal-crash", toolset.WithCallJournal(toolset.JournalOptions{}), toolset.WithRunLease(time.Millisecond))
		require.NoError(t, err)
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "a", journalPay(filepath.Join(dir, "ran"), true))
		require.NoError(t, err)
		_, err = tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"bob","amount":5}`)})
		require.NoError(t, err)
		_, _ = tools.Execute(turn, toolset.ToolCall{ID: "c2", Name: "pay", Args: json.RawMessage(`{"to":"ann","amount":7}`)})
		t.Fatal("the crash did not happen")
	}
	if childRole != "" {
		t.Skip("another child's test")
	}
	dir = t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = childEnv("TOOLSET_RUNSTORE_CHILD=crash", "TOOLSET_RUNSTORE_DIR="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.Equal(t, 3, exit.ExitCode(), "the child died in the call: %s", out)

	ran := filepath.Join(dir, "ran")
	store := &fileRunStore{dir: dir}
	ctx := context.Background()
	// The child's last save, just before it died, holds the run for its
	// lease of a millisecond: a resume within it is refused, rightly.
	time.Sleep(10 * time.Millisecond)
	run, err := toolset.ResumeRun(ctx, store, "journal-crash", toolset.WithCallJournal(toolset.JournalOptions{}))
	require.NoError(t, err)
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", journalPay(ran, false))
	require.NoError(t, err)
	res, err := tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"bob","amount":5}`)})
	require.NoError(t, err)
	assert.Equal(t, "paid 5 to bob", res, "the finished call is replayed from the journal")

	c2 := toolset.ToolCall{ID: "c2", Name: "pay", Args: json.RawMessage(`{"to":"ann","amount":7}`)}
	_, err = tools.Execute(turn, c2)
	var asked *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &asked)
	assert.True(t, asked.Interrupted)
	assert.Contains(t, err.Error(), "began before and never finished")
	run.RecordApproval(asked.Call)
	res, err = tools.Execute(turn, c2)
	require.NoError(t, err)
	assert.Equal(t, "paid 7 to ann", res)

	b, err := os.ReadFile(ran)
	require.NoError(t, err)
	assert.Equal(t, "bob 5\nann 7 (started)\nann 7\n", string(b), "each payment ran once, the cut one once more when approved")
}

// journalPay pays and appends each payment to the file ran; with crash, a
// payment to ann kills the process once it has begun.
func journalPay(ran string, crash bool) toolset.Tool {
	return toolset.NewTool("pay", "Pays.", func(_ context.Context, a journalArgs) (string, error) {
		f, err := os.OpenFile(ran, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if crash && a.To == "ann" {
			fmt.Fprintf(f, "%s %d (started)\n", a.To, a.Amount)
			f.Close()
			os.Exit(3)
		}
		fmt.Fprintf(f, "%s %d\n", a.To, a.Amount)
		return fmt.Sprintf("paid %d to %s", a.Amount, a.To), nil
	})
}

// The journal of a forged or damaged state is refused.
func TestResumeRefusesABadJournal(t *testing.T) {
	ctx := context.Background()
	hash := "sha256:" + strings.Repeat("0", 64)
	for name, journal := range map[string]any{
		"no call ID":         []map[string]any{{"call_id": "", "tool": "pay", "args": hash}},
		"no tool":            []map[string]any{{"call_id": "c", "tool": "", "args": hash}},
		"bad hash":           []map[string]any{{"call_id": "c", "tool": "pay", "args": "md5:00"}},
		"twice":              []map[string]any{{"call_id": "c", "tool": "pay", "args": hash}, {"call_id": "c", "tool": "pay", "args": hash}},
		"outcome unfinished": []map[string]any{{"call_id": "c", "tool": "pay", "args": hash, "result": 1}},
		"result and error":   []map[string]any{{"call_id": "c", "tool": "pay", "args": hash, "done": true, "result": 1, "error": "x"}},
		"huge result":        []map[string]any{{"call_id": "c", "tool": "pay", "args": hash, "done": true, "result": strings.Repeat("x", 1<<20+1)}},
		"not a list":         map[string]any{"c": 1},
	} {
		t.Run(name, func(t *testing.T) {
			store := toolset.NewMemoryRunStore()
			data, err := json.Marshal(map[string]any{"version": 1, "id": "forged", "step": 0, "journal": journal})
			require.NoError(t, err)
			_, err = store.Save(ctx, "forged", data, 0, 0)
			require.NoError(t, err)
			_, err = toolset.ResumeRun(ctx, store, "forged")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "journal")
		})
	}
}
