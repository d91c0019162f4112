package mesh

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reports collects the sync reports of the namespace.
type reports struct {
	mu  sync.Mutex
	got []SyncReport
}

func watchReports(t *testing.T, nc *nats.Conn) *reports {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pk, err := OpenPackages(ctx, nc, "")
	require.NoError(t, err)
	r := &reports{}
	require.NoError(t, pk.WatchReports(ctx, func(rep SyncReport) {
		r.mu.Lock()
		r.got = append(r.got, rep)
		r.mu.Unlock()
	}))
	return r
}

// waitFor waits until a report matches.
func (r *reports) waitFor(t *testing.T, match func(SyncReport) bool) SyncReport {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, rep := range r.got {
			if match(rep) {
				r.mu.Unlock()
				return rep
			}
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no matching report in %+v", r.got)
	return SyncReport{}
}

func echo(t *testing.T, nc *nats.Conn, corr, subject string) InvokeResult {
	t.Helper()
	c := listen(t, nc, "agent1", corr)
	require.NoError(t, nc.PublishMsg(invokeMsg(t, subject, "agent1", corr, "demo__echo", map[string]any{"text": corr}, nil)))
	resp, statuses := c.wait(t, 20*time.Second)
	res := result(t, resp)
	require.NotEmpty(t, statuses)
	return res
}

func TestTwoRuntimesShareCalls(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	startRuntime(t, nc, "", "rtA", 1)
	startRuntime(t, nc, "", "rtB", 1)
	// Twelve slow calls at once, one slot each: both runtimes serve some
	// (all twelve landing on one by chance is 1 in 2048), and every call
	// is answered.
	var wg sync.WaitGroup
	var mu sync.Mutex
	served := map[string]int{}
	for i := range 12 {
		wg.Go(func() {
			corr := "s" + strconv.Itoa(i)
			c := listen(t, nc, "agent1", corr)
			m := invokeMsg(t, "", "agent1", corr, "demo__slow", map[string]any{"ms": 300}, nil)
			// Only a no-responders answer, which proves nobody took
			// the call, may be retried.
			for {
				resp, none := c.send(t, nc, m, 20*time.Second)
				if none {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				result(t, resp)
				break
			}
			statuses := c.statuses(t)
			mu.Lock()
			if len(statuses) > 0 {
				served[statuses[0].Runtime]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	assert.Positive(t, served["rtA"], "served: %v", served)
	assert.Positive(t, served["rtB"], "served: %v", served)
	assert.Equal(t, 12, served["rtA"]+served["rtB"])
}

func TestLateRuntimeSyncsFirst(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	rep := watchReports(t, nc)
	publish(t, nc, "demo", 1, meshPackage(t, ""), map[string]any{"api_key": "stored"})
	publish(t, nc, "other", 1, meshPackage(t, "other"), nil)
	r := startRuntime(t, nc, "", "late", 2)
	// Serving from the first message: no wait for a sync.
	assert.Contains(t, echo(t, nc, "l1", "").ToolResult.Text, "echo: l1")
	got := rep.waitFor(t, func(r SyncReport) bool { return r.Toolset == "demo" && r.Runtime == "late" })
	assert.Equal(t, SyncReady, got.Status)
	assert.Contains(t, got.Tools, "demo__echo")
	rep.waitFor(t, func(r SyncReport) bool { return r.Toolset == "other" && r.Status == SyncReady })

	// The stored configuration came with the package.
	c := listen(t, nc, "agent1", "k1")
	require.NoError(t, nc.PublishMsg(invokeMsg(t, "", "agent1", "k1", "demo__keyed", map[string]any{}, nil)))
	resp, _ := c.wait(t, 20*time.Second)
	assert.Contains(t, result(t, resp).ToolResult.Text, "key stored")

	// A new version: served on its pinned subject, the old one no more.
	publish(t, nc, "demo", 2, meshPackage(t, "v2"), nil)
	rep.waitFor(t, func(r SyncReport) bool { return r.Toolset == "demo" && r.Version == 2 && r.Status == SyncReady })
	subj, _ := NewSubjects("")
	v2, _ := subj.InvokeVersion("demo__echo", 2)
	probe := listen(t, nc, "agent1", "probe")
	require.Eventually(t, func() bool {
		m := invokeMsg(t, v2, "agent1", "probe", "demo__echo", map[string]any{"text": "x"}, nil)
		resp, none := probe.send(t, nc, m, 20*time.Second)
		return !none && resp.Error == nil
	}, 10*time.Second, 50*time.Millisecond)
	v1, _ := subj.InvokeVersion("demo__echo", 1)
	old := listen(t, nc, "agent1", "old")
	_, none := old.send(t, nc, invokeMsg(t, v1, "agent1", "old", "demo__echo", map[string]any{"text": "x"}, nil), 5*time.Second)
	assert.True(t, none, "version 1 is served no more")

	// Removal: the tools go.
	ctx := context.Background()
	pk, err := OpenPackages(ctx, nc, "")
	require.NoError(t, err)
	require.NoError(t, pk.Remove(ctx, "other"))
	rep.waitFor(t, func(r SyncReport) bool { return r.Toolset == "other" && r.Status == SyncRemoved })
	gone := listen(t, nc, "agent1", "gone")
	require.Eventually(t, func() bool {
		m := invokeMsg(t, "", "agent1", "gone", "other__echo", map[string]any{"text": "x"}, nil)
		_, none := gone.send(t, nc, m, 20*time.Second)
		return none
	}, 10*time.Second, 50*time.Millisecond)
	_ = r
}

func TestRestartRefetchesCorruptedCopy(t *testing.T) {
	s := startServer(t)
	nc := connect(t, s)
	rep := watchReports(t, nc)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	dir := runtimeDir(t)
	r := startRuntime(t, nc, dir, "rt1", 2)
	echo(t, nc, "a1", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, r.Close(ctx))
	e, ok := r.sync.entry("demo")
	require.True(t, ok)

	// A restart with an intact copy fetches nothing.
	r = startRuntime(t, nc, dir, "rt1", 2)
	e2, _ := r.sync.entry("demo")
	assert.Equal(t, e.Local, e2.Local)
	echo(t, nc, "a2", "")
	require.NoError(t, r.Close(ctx))

	// The kept zip damaged: the restart fetches it again.
	zipPath := filepath.Join(dir, "store", "demo", "v1.zip")
	require.FileExists(t, zipPath)
	f, err := os.OpenFile(zipPath, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("garbage!"), 100)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	rep.mu.Lock()
	rep.got = nil
	rep.mu.Unlock()
	r = startRuntime(t, nc, dir, "rt1", 2)
	e3, _ := r.sync.entry("demo")
	assert.Greater(t, e3.Local, e.Local, "fetched again as a new local version")
	assert.Equal(t, SyncReady, e3.Status)
	assert.Contains(t, echo(t, nc, "a3", "").ToolResult.Text, "echo: a3")
	rep.waitFor(t, func(r SyncReport) bool { return r.Toolset == "demo" && r.Status == SyncReady })
}

func TestPublishRefusesOlderVersionAndBadNames(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	ctx := context.Background()
	pk, err := OpenPackages(ctx, nc, "")
	require.NoError(t, err)
	require.NoError(t, pk.Publish(ctx, "demo", 2, bytesReader("zip"), nil))
	assert.Error(t, pk.Publish(ctx, "demo", 1, bytesReader("zip"), nil))
	assert.Error(t, pk.Publish(ctx, "bad.name", 1, bytesReader("zip"), nil))
	assert.Error(t, pk.Publish(ctx, "demo", 0, bytesReader("zip"), nil))
	list, err := pk.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, 2, list[0].Version)
}

func TestRuntimeRefusesInvalidPackage(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	rep := watchReports(t, nc)
	ctx := context.Background()
	pk, err := OpenPackages(ctx, nc, "")
	require.NoError(t, err)
	// The store holds bytes no valid package has: the runtime validates
	// them again and reports the failure.
	require.NoError(t, pk.Publish(ctx, "junk", 1, bytesReader("not a zip at all"), nil))
	startRuntime(t, nc, "", "rt1", 1)
	got := rep.waitFor(t, func(r SyncReport) bool { return r.Toolset == "junk" })
	assert.Equal(t, SyncFailed, got.Status)
	assert.NotEmpty(t, got.Errors)
}

// The platform's configuration change republishes the same version: the
// runtime applies the new configuration to the package it holds, without
// fetching it again.
func TestConfigChangeOfTheSameVersionReachesTheRuntime(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	rep := watchReports(t, nc)
	zipData := meshPackage(t, "")
	publish(t, nc, "demo", 1, zipData, map[string]any{"api_key": "first"})
	r := startRuntime(t, nc, "", "cfg", 2)
	rep.waitFor(t, func(r SyncReport) bool { return r.Toolset == "demo" && r.Status == SyncReady })
	keyed := func(corr string) string {
		c := listen(t, nc, "agent1", corr)
		require.NoError(t, nc.PublishMsg(invokeMsg(t, "", "agent1", corr, "demo__keyed", map[string]any{}, nil)))
		resp, _ := c.wait(t, 20*time.Second)
		return result(t, resp).ToolResult.Text
	}
	assert.Contains(t, keyed("c1"), "key first")
	before, _ := r.sync.entry("demo")

	// The zip is not read for the same version: an empty reader will do.
	publish(t, nc, "demo", 1, nil, map[string]any{"api_key": "second"})
	require.Eventually(t, func() bool {
		return strings.Contains(keyed("c2-"+strconv.Itoa(int(time.Now().UnixNano()%1e9))), "key second")
	},
		20*time.Second, 100*time.Millisecond, "the new configuration reaches the runtime")
	after, _ := r.sync.entry("demo")
	assert.Equal(t, before.Local, after.Local, "the package was not fetched again")
}

// A caller's toolset-level value goes to the tools that declare its key,
// as in process, though the tool_config it sends beside it for SAM's
// runtimes holds it for every tool.
func TestToolsetConfigGoesToTheToolsThatDeclareIt(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	rep := watchReports(t, nc)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	startRuntime(t, nc, "", "tcfg", 2)
	rep.waitFor(t, func(r SyncReport) bool { return r.Toolset == "demo" && r.Status == SyncReady })
	for _, tc := range []struct {
		tool, corr string
		args       map[string]any
		want       string
	}{
		{"demo__echo", "t1", map[string]any{"text": "hi"}, "echo: hi"},
		{"demo__keyed", "t2", map[string]any{}, "key agent"},
	} {
		c := listen(t, nc, "agent1", tc.corr)
		require.NoError(t, nc.PublishMsg(invokeMsg(t, "", "agent1", tc.corr, tc.tool, tc.args, func(p *InvokeParams) {
			p.ToolsetConfig = &WireConfig{Toolset: map[string]any{"api_key": "agent"}}
			p.ToolConfig = map[string]any{"api_key": "agent"}
		})))
		resp, _ := c.wait(t, 20*time.Second)
		require.Nil(t, resp.Error, "%s: %+v", tc.tool, resp.Error)
		assert.Contains(t, result(t, resp).ToolResult.Text, tc.want, tc.tool)
	}
}
