package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileRunStore is a RunStore in a directory, shared by the processes of a
// test: each run's state is a file holding its version and data, replaced
// under an exclusive flock of the directory's lock file. It ignores TTLs.
type fileRunStore struct {
	dir string
	// loaded, if set, runs after each Load, before it returns.
	loaded func()
}

func (s *fileRunStore) locked(f func() error) error {
	lock, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	return f()
}

func (s *fileRunStore) path(id string) string {
	return filepath.Join(s.dir, "run-"+strconv.Quote(id)+".state")
}

func (s *fileRunStore) read(id string) ([]byte, int64, error) {
	b, err := os.ReadFile(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	head, data, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return nil, 0, fmt.Errorf("%s: no version line", s.path(id))
	}
	v, err := strconv.ParseInt(string(head), 10, 64)
	return data, v, err
}

func (s *fileRunStore) Load(_ context.Context, id string) (data []byte, version int64, err error) {
	err = s.locked(func() error {
		data, version, err = s.read(id)
		return err
	})
	if s.loaded != nil {
		s.loaded()
	}
	return data, version, err
}

func (s *fileRunStore) Save(_ context.Context, id string, data []byte, expect int64, _ time.Duration) (version int64, err error) {
	err = s.locked(func() error {
		_, cur, err := s.read(id)
		if err != nil {
			return err
		}
		if cur != expect {
			return &toolset.RunStateConflictError{ID: id, Expected: expect, Actual: cur}
		}
		version = cur + 1
		tmp := s.path(id) + ".tmp"
		if err := os.WriteFile(tmp, append([]byte(strconv.FormatInt(version, 10)+"\n"), data...), 0o600); err != nil {
			return err
		}
		return os.Rename(tmp, s.path(id))
	})
	return version, err
}

func (s *fileRunStore) Delete(_ context.Context, id string, expect int64) error {
	return s.locked(func() error {
		data, cur, err := s.read(id)
		if err != nil || data == nil {
			return err
		}
		if cur != expect {
			return &toolset.RunStateConflictError{ID: id, Expected: expect, Actual: cur}
		}
		err = os.Remove(s.path(id))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	})
}

// childRole is the part a re-executed test binary plays, or "".
var childRole = os.Getenv("TOOLSET_RUNSTORE_CHILD")

// childEnv is the environment of a re-executed test binary: this
// process's, the variables given, and GORACE with atexit_sleep_ms=0, for
// a binary built with the race detector otherwise sleeps a second as it
// exits (ignored without it).
func childEnv(vars ...string) []string {
	env := append(os.Environ(), vars...)
	return append(env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

// runChild re-executes the test binary to run test in the given role,
// sharing dir, and returns its output; it fails the test if the child
// fails.
func runChild(t *testing.T, test, role, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = childEnv("TOOLSET_RUNSTORE_CHILD="+role, "TOOLSET_RUNSTORE_DIR="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child %s:\n%s", role, out)
	require.Contains(t, string(out), "--- PASS: "+test, "child %s ran the test", role)
	return string(out)
}

// payTool is the tool of the cross-process tests: it pays, needs approval
// for every call, and appends each payment it makes to the file ran.
func payTool(ran string) toolset.Tool {
	return toolset.NewTool("pay", "Pay someone.", func(_ context.Context, in struct {
		To     string `json:"to"`
		Amount int    `json:"amount"`
	}) (string, error) {
		f, err := os.OpenFile(ran, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return "", err
		}
		defer f.Close()
		fmt.Fprintf(f, "%s %d\n", in.To, in.Amount)
		return fmt.Sprintf("paid %s %d", in.To, in.Amount), nil
	}, toolset.WithApprovalRequired(toolset.Always))
}

// A run pauses for approval in process A, is approved in process C, which
// only lists and decides, and resumes in process B, which runs the
// approved call exactly once.
func TestPausedRunResumesInAnotherProcess(t *testing.T) {
	const id = "req-42"
	if childRole != "" {
		dir := os.Getenv("TOOLSET_RUNSTORE_DIR")
		store := &fileRunStore{dir: dir}
		ran := filepath.Join(dir, "ran")
		ctx := context.Background()
		run, err := toolset.ResumeRun(ctx, store, id)
		require.NoError(t, err)
		switch childRole {
		case "A":
			turn := run.Turn(ctx)
			tools, err := toolset.BuildTools(turn, "agent", payTool(ran))
			require.NoError(t, err)
			_, err = tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"bob","amount":500}`)})
			var need *toolset.ApprovalRequiredError
			require.ErrorAs(t, err, &need)
			require.NoError(t, run.Suspend(ctx))
		case "C":
			pending := run.PendingApprovals()
			require.Len(t, pending, 1)
			p := pending[0]
			assert.Equal(t, "pay", p.Tool)
			assert.Equal(t, "c1", p.CallID)
			assert.JSONEq(t, `{"amount":500,"to":"bob"}`, string(p.Args))
			assert.Equal(t, `{"amount":500,"to":"bob"}`, string(p.Args), "canonical")
			assert.True(t, strings.HasPrefix(p.SchemaHash, "sha256:"), p.SchemaHash)
			assert.False(t, p.AskedAt.IsZero())
			run.RecordApproval(p.Call())
			require.NoError(t, run.Suspend(ctx))
		case "B":
			assert.Equal(t, 0, run.Step(), "the step of A's turn")
			assert.Empty(t, run.PendingApprovals())
			turn := run.Turn(ctx)
			tools, err := toolset.BuildTools(turn, "agent", payTool(ran))
			require.NoError(t, err)
			call := toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{ "to": "bob", "amount": 500 }`)}
			got, err := tools.Execute(turn, call)
			require.NoError(t, err)
			assert.Equal(t, "paid bob 500", got)
			_, err = tools.Execute(turn, call)
			var need *toolset.ApprovalRequiredError
			require.ErrorAs(t, err, &need, "the approval is used up by its call")
			run.End()
		}
		return
	}
	dir := t.TempDir()
	for _, role := range []string{"A", "C", "B"} {
		runChild(t, t.Name(), role, dir)
		if role == "A" {
			_, err := os.Stat(filepath.Join(dir, "ran"))
			require.ErrorIs(t, err, os.ErrNotExist, "nothing ran before the approval")
		}
	}
	ran, err := os.ReadFile(filepath.Join(dir, "ran"))
	require.NoError(t, err)
	assert.Equal(t, "bob 500\n", string(ran), "the approved call ran exactly once")
	data, version, err := (&fileRunStore{dir: dir}).Load(context.Background(), id)
	require.NoError(t, err)
	assert.Nil(t, data, "End deleted the state")
	assert.Zero(t, version)
}

// Two processes resume one run at the same moment: both load its state,
// one claims it, and the other gets a RunStateConflictError.
func TestResumeRunTwiceAtOnceOneWins(t *testing.T) {
	const id = "req-7"
	if childRole != "" {
		dir := os.Getenv("TOOLSET_RUNSTORE_DIR")
		// Each process waits, once it has loaded the state, until the other
		// has loaded it too, so that both claim the same version.
		store := &fileRunStore{dir: dir, loaded: func() {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "loaded-"+childRole), nil, 0o600))
			other := map[string]string{"1": "2", "2": "1"}[childRole]
			deadline := time.Now().Add(20 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(dir, "loaded-"+other)); err == nil {
					return
				}
				require.True(t, time.Now().Before(deadline), "the other process never loaded the state")
				time.Sleep(5 * time.Millisecond)
			}
		}}
		run, err := toolset.ResumeRun(context.Background(), store, id)
		if err != nil {
			require.ErrorIs(t, err, toolset.ErrRunStateConflict)
			var ce *toolset.RunStateConflictError
			require.ErrorAs(t, err, &ce)
			fmt.Printf("RESULT conflict: %v\n", err)
			return
		}
		fmt.Println("RESULT won")
		require.NoError(t, run.Suspend(context.Background()))
		return
	}
	dir := t.TempDir()
	results := make(chan string, 2)
	for _, role := range []string{"1", "2"} {
		go func() {
			cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
			cmd.Env = childEnv("TOOLSET_RUNSTORE_CHILD="+role, "TOOLSET_RUNSTORE_DIR="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				results <- fmt.Sprintf("child %s failed: %v\n%s", role, err, out)
				return
			}
			for line := range strings.Lines(string(out)) {
				if r, ok := strings.CutPrefix(line, "RESULT "); ok {
					results <- strings.TrimSpace(r)
					return
				}
			}
			results <- "no result:\n" + string(out)
		}()
	}
	got := []string{<-results, <-results}
	won, lost := 0, 0
	for _, r := range got {
		switch {
		case r == "won":
			won++
		case strings.HasPrefix(r, "conflict: "):
			lost++
			assert.Contains(t, r, `toolset: run "req-7": its saved state changed`)
		}
	}
	assert.Equal(t, []int{1, 1}, []int{won, lost}, "one wins, one gets the conflict: %q", got)
}
