package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// published is one Publish a testDistributor received.
type published struct {
	name    string
	version int
	zip     []byte
	config  map[string]any
}

// testDistributor records what the platform hands it, and lets a test
// send the reports of runtimes.
type testDistributor struct {
	mu        sync.Mutex
	published []published
	removed   []string
	// failures is how many of the next Publish calls fail; panics, how
	// many panic.
	failures, panics int
	report           func(SyncReport)
	watching         chan struct{}
}

func newTestDistributor() *testDistributor {
	return &testDistributor{watching: make(chan struct{})}
}

func (d *testDistributor) Publish(ctx context.Context, name string, version int, pkg io.Reader, config map[string]any) error {
	data, err := io.ReadAll(pkg)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.panics > 0 {
		d.panics--
		panic("the broker's client fell over")
	}
	if d.failures > 0 {
		d.failures--
		return errors.New("the broker is unreachable")
	}
	d.published = append(d.published, published{name: name, version: version, zip: data, config: config})
	return nil
}

func (d *testDistributor) Remove(ctx context.Context, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.removed = append(d.removed, name)
	return nil
}

func (d *testDistributor) WatchReports(ctx context.Context, fn func(SyncReport)) error {
	d.mu.Lock()
	d.report = fn
	d.mu.Unlock()
	close(d.watching)
	<-ctx.Done()
	return nil
}

// send delivers a runtime's report, once the platform watches.
func (d *testDistributor) send(t *testing.T, r SyncReport) {
	t.Helper()
	select {
	case <-d.watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the platform does not watch the reports")
	}
	d.mu.Lock()
	fn := d.report
	d.mu.Unlock()
	fn(r)
}

// publications returns what was published so far.
func (d *testDistributor) publications() []published {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]published(nil), d.published...)
}

func (d *testDistributor) removals() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.removed...)
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "waiting for %s", what)
		time.Sleep(10 * time.Millisecond)
	}
}

// waitPublished waits for the n-th publication and returns it.
func (d *testDistributor) waitPublished(t *testing.T, n int) published {
	t.Helper()
	waitFor(t, fmt.Sprintf("publication %d", n), func() bool { return len(d.publications()) >= n })
	return d.publications()[n-1]
}

func (e *testEnv) status(name string) (string, []any) {
	e.t.Helper()
	m := e.do("GET", "/api/v1/platform/toolsets/"+name, nil).json(e.t)
	errs, _ := m["discoveryErrors"].([]any)
	return m["discoveryStatus"].(string), errs
}

// With a distributor, a toolset its discovery found ready is published
// with its zip and stored configuration, and is ready only once a
// runtime confirmed every tool; until then an agent naming it may be
// created but not deployed.
func TestDistributedToolsetIsReadyOnceARuntimeConfirms(t *testing.T) {
	t.Parallel()
	d := newTestDistributor()
	e := newEnv(t, &Options{Distributor: d})
	zip := goodPackage(t, "greet", "Greets someone.", 0)
	e.upload("greeter", zip)

	p := d.waitPublished(t, 1)
	assert.Equal(t, "greeter", p.name)
	assert.Equal(t, 1, p.version)
	assert.Equal(t, zip, p.zip, "the zip as uploaded")
	assert.Equal(t, map[string]any{}, p.config)
	st, errs := e.status("greeter")
	assert.Equal(t, "pending", st, "its own discovery is done, no runtime confirmed yet")
	assert.Empty(t, errs)
	list := e.do("GET", "/api/v1/platform/toolsets", nil).json(t)
	assert.Equal(t, "pending", list["data"].([]any)[0].(map[string]any)["discoveryStatus"])
	r := e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "greeter")))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	assert.Equal(t, "pending", r.json(t)["toolsets"].([]any)[0].(map[string]any)["status"])
	r = e.do("POST", "/api/v1/platform/agents/support/deploy", nil)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	assert.Equal(t, "NotDeployable", r.errCode(t))
	assert.Contains(t, string(r.body), `toolset \"greeter\" is pending`)

	d.send(t, SyncReport{Runtime: "r1", Toolset: "greeter", Version: 1, Status: SyncReady, Tools: []string{"greet"}})
	st, _ = e.status("greeter")
	assert.Equal(t, "ready", st)
	r = e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "greeter")))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = e.do("POST", "/api/v1/platform/agents/support/deploy", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	// The configuration goes to the runtimes, the secret in clear.
	r = e.do("PATCH", "/api/v1/platform/toolsets/greeter/config", []byte(`{"greeting":"hi","api_key":"s3cr3t"}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	p = d.waitPublished(t, 2)
	assert.Equal(t, 1, p.version)
	assert.Equal(t, map[string]any{"greeting": "hi", "api_key": "s3cr3t"}, p.config)
	st, _ = e.status("greeter")
	assert.Equal(t, "ready", st, "the version is confirmed already")

	// A re-upload is pending again until confirmed, and its removal
	// withdraws it.
	r = e.do("PUT", "/api/v1/platform/toolsets/greeter/package?force=true", goodPackage(t, "greet", "Greets someone warmly.", 0), "Content-Type", "application/zip")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	p = d.waitPublished(t, 3)
	assert.Equal(t, 2, p.version)
	assert.Equal(t, "hi", p.config["greeting"], "with the stored configuration")
	st, _ = e.status("greeter")
	assert.Equal(t, "pending", st)
	d.send(t, SyncReport{Runtime: "r1", Toolset: "greeter", Version: 2, Status: SyncReady, Tools: []string{"greet"}})
	st, _ = e.status("greeter")
	assert.Equal(t, "ready", st)
	r = e.do("DELETE", "/api/v1/platform/toolsets/greeter?force=true", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	waitFor(t, "the removal", func() bool { return len(d.removals()) == 1 })
	assert.Equal(t, []string{"greeter"}, d.removals())
	assert.Len(t, d.publications(), 3, "nothing published twice")
}

// A runtime's failure shows as the toolset's, with its errors, until a
// runtime confirms; a failed discovery of the platform's own is never
// published, and the runtimes keep the version that serves.
func TestFailedReportShowsTheRuntimesErrors(t *testing.T) {
	t.Parallel()
	d := newTestDistributor()
	e := newEnv(t, &Options{Distributor: d})
	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	d.waitPublished(t, 1)

	d.send(t, SyncReport{Runtime: "r1", Toolset: "greeter", Version: 1, Status: SyncFailed,
		Errors: []string{"python3 not found", strings.Repeat("x", 5000)}})
	st, errs := e.status("greeter")
	assert.Equal(t, "failed", st)
	require.Len(t, errs, 2)
	assert.Equal(t, `runtime "r1": python3 not found`, errs[0])
	assert.Less(t, len(errs[1].(string)), MaxReportErrorBytes+64, "cut")
	m := e.do("GET", "/api/v1/platform/toolsets/greeter", nil).json(t)
	assert.Equal(t, "failed", m["versions"].([]any)[0].(map[string]any)["discoveryStatus"])

	// Another runtime that can serve it makes it ready.
	d.send(t, SyncReport{Runtime: "r2", Toolset: "greeter", Version: 1, Status: SyncReady, Tools: []string{"greet"}})
	st, _ = e.status("greeter")
	assert.Equal(t, "ready", st)

	// A re-upload whose discovery fails here is not published.
	e.upload("greeter", brokenPackage(t))
	m = e.settle("greeter")
	assert.Equal(t, "failed", m["discoveryStatus"])
	time.Sleep(50 * time.Millisecond)
	assert.Len(t, d.publications(), 1)
}

// Reports from elsewhere are untrusted: one on a toolset the platform
// lacks, an old version, a malformed one is ignored; a ready one that
// lacks a tool is a failure; the runtimes kept per toolset are bounded.
func TestHostileReportsAreIgnoredOrBounded(t *testing.T) {
	t.Parallel()
	d := newTestDistributor()
	e := newEnv(t, &Options{Distributor: d})
	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	d.waitPublished(t, 1)
	e.upload("greeter", goodPackage(t, "greet", "Greets again.", 0))
	d.waitPublished(t, 2)

	for _, r := range []SyncReport{
		{Runtime: "r1", Toolset: "nosuch", Version: 2, Status: SyncReady, Tools: []string{"greet"}},
		{Runtime: "r1", Toolset: "greeter", Version: 1, Status: SyncReady, Tools: []string{"greet"}},
		{Runtime: "r1", Toolset: "greeter", Version: 3, Status: SyncReady, Tools: []string{"greet"}},
		{Runtime: "r1", Toolset: "greeter", Version: 2, Status: "splendid", Tools: []string{"greet"}},
		{Runtime: "", Toolset: "greeter", Version: 2, Status: SyncReady, Tools: []string{"greet"}},
		{Runtime: "r\x1b[2J", Toolset: "greeter", Version: 2, Status: SyncReady, Tools: []string{"greet"}},
		{Runtime: strings.Repeat("r", MaxRuntimeIDBytes+1), Toolset: "greeter", Version: 2, Status: SyncReady, Tools: []string{"greet"}},
		{Runtime: "r1", Toolset: "../greeter", Version: 2, Status: SyncReady, Tools: []string{"greet"}},
	} {
		d.send(t, r)
		st, errs := e.status("greeter")
		require.Equal(t, "pending", st, "ignored: %+v", r)
		require.Empty(t, errs)
	}
	e.srv.dist.mu.Lock()
	assert.Len(t, e.srv.dist.confirmed, 0, "nothing kept of the ignored reports")
	e.srv.dist.mu.Unlock()

	d.send(t, SyncReport{Runtime: "r1", Toolset: "greeter", Version: 2, Status: SyncReady, Tools: []string{"other"}})
	st, errs := e.status("greeter")
	assert.Equal(t, "failed", st)
	assert.Equal(t, []any{`runtime "r1" discovered version 2 without the tools greet`}, errs)
	d.send(t, SyncReport{Runtime: "r1", Toolset: "greeter", Version: 2, Status: SyncFailed})
	_, errs = e.status("greeter")
	assert.Equal(t, []any{`runtime "r1" could not serve version 2, and said not why`}, errs, "a runtime's later report replaces its earlier")

	for i := range MaxRuntimesPerToolset + 50 {
		d.send(t, SyncReport{Runtime: fmt.Sprintf("flood-%d", i), Toolset: "greeter", Version: 2, Status: SyncFailed, Errors: []string{"e1", "e2", "e3", "e4", "e5", "e6", "e7"}})
	}
	e.srv.dist.mu.Lock()
	kept := len(e.srv.dist.confirmed["greeter"].byRuntime)
	e.srv.dist.mu.Unlock()
	assert.Equal(t, MaxRuntimesPerToolset, kept)
	_, errs = e.status("greeter")
	assert.Len(t, errs, maxGateErrors+1, "bounded, with a count of the rest")
	list := e.do("GET", "/api/v1/platform/toolsets", nil).json(t)
	assert.Len(t, list["data"].([]any)[0].(map[string]any)["discoveryErrors"], MaxListedErrors+1)
	// A flood of other runtimes does not hide the one that confirms.
	d.send(t, SyncReport{Runtime: "r1", Toolset: "greeter", Version: 2, Status: SyncReady, Tools: []string{"greet", "extra"}})
	st, _ = e.status("greeter")
	assert.Equal(t, "ready", st)
}

// A distributor that fails or panics is tried again; the platform goes
// on serving.
func TestFailingDistributorIsTriedAgain(t *testing.T) {
	t.Parallel()
	d := newTestDistributor()
	d.failures, d.panics = 1, 1
	e := newEnv(t, &Options{Distributor: d})
	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	p := d.waitPublished(t, 1)
	assert.Equal(t, 1, p.version)
	logs := e.logs.String()
	assert.Contains(t, logs, "the distributor panicked")
	assert.Contains(t, logs, "trying again")
	st, _ := e.status("greeter")
	assert.Equal(t, "pending", st)
}

// A platform that starts hands the runtimes what it serves, withdraws
// what was removed, and publishes what was pending once discovered.
func TestStartPublishesWhatTheStoreServes(t *testing.T) {
	dir := storeDir(t)
	e := openEnv(t, dir, nil)
	e.upload("kept", goodPackage(t, "greet", "Greets someone.", 0))
	require.Equal(t, "ready", e.settle("kept")["discoveryStatus"])
	e.upload("gone", goodPackage(t, "greet", "Greets someone.", 0))
	e.settle("gone")
	require.Equal(t, http.StatusOK, e.do("DELETE", "/api/v1/platform/toolsets/gone", nil).status)
	g := newGate(t)
	e.upload("slow", gatedPackage(t, "slowtool", "Takes its time.", g))
	e.close()
	g.open(t)

	d := newTestDistributor()
	e = openEnv(t, dir, &Options{Distributor: d})
	waitFor(t, "two publications", func() bool { return len(d.publications()) == 2 })
	names := map[string]int{}
	for _, p := range d.publications() {
		names[p.name] = p.version
	}
	assert.Equal(t, map[string]int{"kept": 1, "slow": 1}, names)
	waitFor(t, "the removal", func() bool { return len(d.removals()) == 1 })
	assert.Equal(t, []string{"gone"}, d.removals())
	st, _ := e.status("kept")
	assert.Equal(t, "pending", st, "until a runtime reports again")
}

// Closing the server ends a Publish under way and the watch.
func TestCloseEndsTheDistribution(t *testing.T) {
	t.Parallel()
	blocked := &blockingDistributor{entered: make(chan struct{})}
	e := newEnv(t, &Options{Distributor: blocked})
	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	select {
	case <-blocked.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("no Publish")
	}
	done := make(chan struct{})
	go func() {
		e.close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for ever")
	}
}

// blockingDistributor's Publish waits for its context; its watch fails.
type blockingDistributor struct {
	entered chan struct{}
	once    sync.Once
}

func (b *blockingDistributor) Publish(ctx context.Context, name string, version int, pkg io.Reader, config map[string]any) error {
	b.once.Do(func() { close(b.entered) })
	<-ctx.Done()
	return ctx.Err()
}

func (b *blockingDistributor) Remove(ctx context.Context, name string) error { return nil }

func (b *blockingDistributor) WatchReports(ctx context.Context, fn func(SyncReport)) error {
	return errors.New("no broker")
}
