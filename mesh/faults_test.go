package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// The fault tests run the broker (a nats-server process) and the runtimes
// as processes of their own, and kill them the way a crash does.

// faultAgent is an agent's side of a fault test: its client and its
// connection, on a broker that may restart.
type faultAgent struct {
	nc     *nats.Conn
	client *Client
	ts     *Toolset // one for the agent's life, as a program keeps it
	tools  *toolset.ToolList
	// served counts the calls each runtime took, from the statuses.
	mu     sync.Mutex
	served map[string]int
	byTask map[string]string
}

// newFaultAgent connects an agent to url, waits until the runtimes serve
// toolset "fault" and watches which runtime takes each call.
func newFaultAgent(t *testing.T, url string) *faultAgent {
	t.Helper()
	return newFaultAgentWait(t, url, time.Second)
}

// newFaultAgentWait is newFaultAgent with the client's BusyWait: how long
// a call waits for a free runtime.
func newFaultAgentWait(t *testing.T, url string, busyWait time.Duration) *faultAgent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, err := Connect(ctx, &ConnOptions{URL: url, Name: "agent", Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	c, err := NewClient(ctx, nc, &ClientOptions{
		Agent: "agent", Logger: quietLogger(),
		HeartbeatTimeout: 700 * time.Millisecond, AcceptTimeout: 3 * time.Second, BusyWait: busyWait,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	a := &faultAgent{nc: nc, client: c, ts: c.Toolset("fault", nil), served: map[string]int{}, byTask: map[string]string{}}
	statusAll, _ := c.subj.StatusAll("agent")
	sub, err := nc.Subscribe(statusAll, func(m *nats.Msg) {
		req, err := DecodeRequest(m.Data, MethodStatus, false)
		if err != nil {
			return
		}
		var p StatusParams
		if Decode(req.Params, 0, &p) != nil || p.State != StateAccepted {
			return
		}
		a.mu.Lock()
		a.served[p.Runtime]++
		a.byTask[p.TaskID] = p.Runtime
		a.mu.Unlock()
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	a.waitTools(t)
	return a
}

func (a *faultAgent) waitTools(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		tools, err := toolset.BuildTools(context.Background(), "agent", a.ts)
		if err != nil || tools.Len() != 2 {
			return false
		}
		a.tools = tools
		return true
	}, 20*time.Second, 20*time.Millisecond, "the agent learns the tools")
}

// call calls tool in a run of its own, named task.
func (a *faultAgent) call(ctx context.Context, task, tool string, args any) (any, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	tl, ok := a.tools.Lookup("fault__" + tool)
	if !ok {
		return nil, fmt.Errorf("no tool %s in %v", tool, a.tools.Names())
	}
	run := toolset.NewRun(task)
	defer run.End()
	ctx = toolset.NewContext(ctx, run)
	return tl.Execute(ctx, toolset.ToolCall{ID: task, Name: tl.Name, Args: b})
}

func (a *faultAgent) servedBy() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.served {
		out[k] = v
	}
	return out
}

func (a *faultAgent) runtimeOf(task string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byTask[task]
}

// publishFault publishes the fault package as toolset "fault" on url.
func publishFault(t *testing.T, url string, version int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, err := Connect(ctx, &ConnOptions{URL: url, Name: "platform", Logger: quietLogger()})
	require.NoError(t, err)
	defer nc.Close()
	pk, err := OpenPackages(ctx, nc, "")
	require.NoError(t, err)
	require.NoError(t, pk.Publish(ctx, "fault", version, bytes.NewReader(faultPackage(t)), nil))
}

// ledger is a file the append tool writes to, which the sandboxed tool
// user may write.
func ledger(t *testing.T) string {
	t.Helper()
	dir := runtimeDir(t)
	require.NoError(t, os.Chmod(dir, 0o777))
	path := filepath.Join(dir, "ledger")
	require.NoError(t, os.WriteFile(path, nil, 0o666))
	require.NoError(t, os.Chmod(path, 0o666))
	return path
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Fields(string(b))
}

// A burst of calls is shared by three runtime processes, and every call
// is answered.
func TestFaultsBurstSharedByRuntimeProcesses(t *testing.T) {
	needProcesses(t)
	broker := startNATS(t)
	publishFault(t, broker.url, 1)
	for i := range 3 {
		startRuntimeProc(t, broker.url, fmt.Sprintf("rt%d", i), 2)
	}
	a := newFaultAgent(t, broker.url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 18)
	for i := range 18 {
		wg.Go(func() {
			out, err := a.call(ctx, fmt.Sprintf("burst-%d", i), "work", map[string]any{"ms": 300})
			if err == nil && !strings.Contains(toolText(out), "worked") {
				err = fmt.Errorf("call %d: %v", i, out)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	served := a.servedBy()
	t.Logf("calls served: %v", served)
	for i := range 3 {
		assert.Positive(t, served[fmt.Sprintf("rt%d", i)], "every runtime serves some: %v", served)
	}
}

// A runtime killed during a call: the caller hears of it within a few
// heartbeats, long before its deadline, and the call, which is not
// idempotent, is never sent again; the next call runs on a runtime alive.
func TestFaultsKilledRuntimeNeverRunsACallTwice(t *testing.T) {
	needProcesses(t)
	broker := startNATS(t)
	publishFault(t, broker.url, 1)
	procs := map[string]*runtimeProc{}
	for i := range 3 {
		id := fmt.Sprintf("rt%d", i)
		procs[id] = startRuntimeProc(t, broker.url, id, 2)
	}
	a := newFaultAgent(t, broker.url)
	path := ledger(t)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	type outcome struct {
		err  error
		took time.Duration
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		_, err := a.call(ctx, "once", "append", map[string]any{"path": path, "line": "once", "ms": 10000})
		done <- outcome{err, time.Since(start)}
	}()
	ran := assert.Eventually(t, func() bool { return len(lines(t, path)) == 1 && a.runtimeOf("once") != "" },
		10*time.Second, 10*time.Millisecond, "the call runs")
	if !ran {
		select {
		case o := <-done:
			t.Fatalf("the call ended: %v (lines %v, runtime %q)", o.err, lines(t, path), a.runtimeOf("once"))
		default:
			t.Fatalf("lines %v, runtime %q", lines(t, path), a.runtimeOf("once"))
		}
	}
	victim := a.runtimeOf("once")
	procs[victim].kill()
	killed := time.Since(start)

	var o outcome
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call hangs after its runtime died")
	}
	t.Logf("runtime %s killed at %s; the call failed at %s: %v", victim, killed.Round(time.Millisecond), o.took.Round(time.Millisecond), o.err)
	var ue *UnavailableError
	require.ErrorAs(t, o.err, &ue)
	assert.True(t, ue.MayHaveRun)
	assert.Contains(t, ue.Error(), victim)
	assert.Less(t, o.took-killed, 3*time.Second, "within a few heartbeats")

	// Never again, on any runtime: the line is there once.
	time.Sleep(500 * time.Millisecond)
	assert.Equal(t, []string{"once"}, lines(t, path))

	// The next call runs on a runtime alive.
	out, err := a.call(ctx, "next", "append", map[string]any{"path": path, "line": "next", "ms": 100})
	require.NoError(t, err)
	assert.Contains(t, toolText(out), "appended next")
	next := a.runtimeOf("next")
	assert.NotEmpty(t, next)
	assert.NotEqual(t, victim, next)
	assert.Equal(t, []string{"once", "next"}, lines(t, path))
}

// A runtime that joins late syncs every current version before it serves:
// with no runtime the call is unavailable at once; a late one serves the
// version published while it was away as soon as it says it is ready.
func TestFaultsLateRuntimeServesAfterSync(t *testing.T) {
	needProcesses(t)
	broker := startNATS(t)
	publishFault(t, broker.url, 1)
	first := startRuntimeProc(t, broker.url, "first", 2)
	a := newFaultAgent(t, broker.url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := a.call(ctx, "v1", "work", map[string]any{"ms": 0})
	require.NoError(t, err)

	// Version 2 published; the only runtime then goes away.
	publishFault(t, broker.url, 2)
	require.Eventually(t, func() bool {
		info, err := a.client.Info("fault")
		return err == nil && info.Version == 2
	}, 20*time.Second, 20*time.Millisecond, "version 2 is announced")
	first.stop(t)
	a.waitTools(t)
	begin := time.Now()
	_, err = a.call(ctx, "none", "work", map[string]any{"ms": 0})
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue, "no runtime: %v", err)
	assert.False(t, ue.MayHaveRun)
	t.Logf("with no runtime the call failed in %s: %v", time.Since(begin).Round(time.Millisecond), err)

	// A runtime that never saw version 2 starts: it serves it as soon as
	// it is ready.
	startRuntimeProc(t, broker.url, "late", 2)
	require.Eventually(t, func() bool {
		info, err := a.client.Info("fault")
		return err == nil && info.Version == 2
	}, 10*time.Second, 10*time.Millisecond, "the late runtime announces version 2")
	a.waitTools(t)
	// Long enough that the runtime says it took the call (a quicker
	// one is answered with its result alone), so the test knows which.
	out, err := a.call(ctx, "late", "work", map[string]any{"ms": 100})
	require.NoError(t, err)
	assert.Contains(t, toolText(out), "worked")
	assert.Equal(t, "late", a.runtimeOf("late"))
	info, err := a.client.Info("fault")
	require.NoError(t, err)
	assert.Equal(t, 2, info.Version)
}

// The broker killed and restarted mid-run, on the same port and storage:
// the clients reconnect, the next calls work, and nothing in the object
// store is lost.
func TestFaultsBrokerRestart(t *testing.T) {
	needProcesses(t)
	broker := startNATS(t)
	publishFault(t, broker.url, 1)
	startRuntimeProc(t, broker.url, "rtA", 2)
	startRuntimeProc(t, broker.url, "rtB", 2)
	a := newFaultAgent(t, broker.url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := a.call(ctx, "before", "work", map[string]any{"ms": 0})
	require.NoError(t, err)
	store, err := NewArtifactStore(ctx, a.nc, nil)
	require.NoError(t, err)
	scope := toolpkg.ArtifactScope{AppName: "app", UserID: "u", SessionID: "s"}
	ref, err := store.Save(ctx, scope, toolpkg.ArtifactRef{Name: "kept.txt", MIMEType: "text/plain"}, strings.NewReader("still here"))
	require.NoError(t, err)

	broker.restart(t)
	begin := time.Now()
	var calls atomic.Int32
	require.Eventually(t, func() bool {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		defer ccancel()
		_, err := a.call(cctx, fmt.Sprintf("after-%d", calls.Add(1)), "work", map[string]any{"ms": 0})
		return err == nil
	}, 15*time.Second, 50*time.Millisecond, "a call works after the restart")
	t.Logf("first call after the restart worked %s after it, on try %d", time.Since(begin).Round(time.Millisecond), calls.Load())
	for i := range 5 {
		_, err := a.call(ctx, fmt.Sprintf("steady-%d", i), "work", map[string]any{"ms": 0})
		require.NoError(t, err)
	}

	// The package and the artifact survived.
	pk, err := OpenPackages(ctx, a.nc, "")
	require.NoError(t, err)
	list, err := pk.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "fault", list[0].Name)
	assert.Equal(t, 1, list[0].Version)
	got, rc, err := store.Load(ctx, scope, "kept.txt", ref.Version)
	require.NoError(t, err)
	b, err := io.ReadAll(rc)
	rc.Close()
	require.NoError(t, err)
	assert.Equal(t, "still here", string(b))
	assert.Equal(t, ref.Version, got.Version)
}

// Calls a second with one, two and three runtime processes (logged: the
// machine is shared, so the figures are not asserted).
func TestFaultsThroughput(t *testing.T) {
	needProcesses(t)
	broker := startNATS(t)
	publishFault(t, broker.url, 1)
	var a *faultAgent
	// Enough calls that eight at once keep every slot busy a while; the
	// figures are a sample, not a benchmark.
	const calls, workers = 24, 8
	for n := 1; n <= 3; n++ {
		startRuntimeProc(t, broker.url, fmt.Sprintf("rt%d", n), 4)
		if a == nil {
			// Eight calls at once on four slots: the others wait for one.
			a = newFaultAgentWait(t, broker.url, 10*time.Second)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var next atomic.Int32
		var failed atomic.Int32
		var wg sync.WaitGroup
		begin := time.Now()
		for range workers {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > calls {
						return
					}
					if _, err := a.call(ctx, fmt.Sprintf("tp%d-%d", n, i), "work", map[string]any{"ms": 20}); err != nil {
						failed.Add(1)
						t.Log(err)
					}
				}
			})
		}
		wg.Wait()
		cancel()
		took := time.Since(begin)
		t.Logf("%d runtime(s): %d calls of 20 ms, %d at once: %.1f calls/s (%d failed)", n, calls, workers, float64(calls)/took.Seconds(), failed.Load())
		assert.Zero(t, failed.Load())
	}
	t.Logf("served: %v", a.servedBy())
}
