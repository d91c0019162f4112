package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/toolpkg"
)

// The embedded broker, as "toolset platform --store DIR" starts it (no
// --broker-listen, no token file), listens on a loopback TCP port with no
// authentication, although the platform itself only uses an in-process
// connection. Any local user of the machine can connect and read the
// packages bucket, where every toolset's stored configuration is kept with
// its secrets in clear.
func TestReviewEmbeddedBrokerRefusesUnauthenticatedClients(t *testing.T) {
	t.Parallel()
	s, err := StartServer(&ServerOptions{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	platform, err := s.InProcessConn(ctx)
	require.NoError(t, err)
	t.Cleanup(platform.Close)
	pk, err := OpenPackages(ctx, platform, "")
	require.NoError(t, err)
	require.NoError(t, pk.Publish(ctx, "crm", 1, bytes.NewReader([]byte("zip bytes")), map[string]any{"api_key": "s3cret-of-crm"}))

	// Another user on this machine: no credentials at all.
	stranger, err := nats.Connect(s.ClientURL(), nats.Timeout(2*time.Second), nats.NoReconnect())
	if err != nil {
		return // refused: what should happen
	}
	defer stranger.Close()
	spk, err := OpenPackages(ctx, stranger, "")
	require.NoError(t, err)
	list, err := spk.List(ctx)
	require.NoError(t, err)
	t.Errorf("a client with no credentials connected to %s and read the stored configurations: %v", s.ClientURL(), list)
}

// The client drops a status from another runtime than the one that took
// the call, but takes one that names no runtime at all: a forger (or a
// SAM peer) keeps a call whose runtime died alive until its deadline,
// although the heartbeat should end it within HeartbeatTimeout.
func TestReviewForgedStatusWithoutRuntimeDoesNotKeepADeadCallAlive(t *testing.T) {
	s := startServer(t)
	stop := make(chan struct{})
	var forging sync.WaitGroup
	t.Cleanup(func() { close(stop); forging.Wait() })
	p := newPeer(t, s, []string{"dead"}, func(p *peer, m *nats.Msg, req *Request, ip *InvokeParams) {
		// The runtime takes the call and dies (no heartbeat, ever).
		p.status(m, p.id, StateAccepted, "")
		// Someone else keeps sending heartbeats that name no runtime.
		forging.Go(func() {
			for range 60 {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				p.status(m, "", StateRunning, "")
			}
		})
	})
	_, tools := fakeTools(t, s, p, &ClientOptions{HeartbeatTimeout: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := callTool(ctx, tools["fake__dead"], `{}`)
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.Less(t, time.Since(start), 1500*time.Millisecond,
		"the dead runtime's call lasted as long as a forger sent heartbeats without a runtime ID")
}

// Init announcements are bounded per toolset and per version's tools, but
// not in versions nor in the runtimes that announce one: a flood of init
// messages with distinct versions, or distinct runtime IDs, grows the
// client's catalog without bound.
func TestReviewInitFloodOfVersionsIsBounded(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, err := NewClient(context.Background(), connect(t, s), &ClientOptions{Logger: quietLogger(), RequestTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	flood := connect(t, s)
	subj, _ := NewSubjects("")
	subject, _ := subj.Init("flood__t")
	obj := json.RawMessage(`{"type":"object"}`)
	const n = 600 // more than twice either bound
	for i := 1; i <= n; i++ {
		data, err := encodeRequest("", MethodInit, InitParams{ToolName: "flood__t", Description: "d", Parameters: obj, Toolset: "flood", Tool: "t",
			Version: i, Runtime: fmt.Sprintf("rt-%d", i)})
		require.NoError(t, err)
		require.NoError(t, flood.Publish(subject, data))
	}
	// Same version, ever new runtime IDs.
	for i := 1; i <= n; i++ {
		data, err := encodeRequest("", MethodInit, InitParams{ToolName: "flood__t", Description: "d", Parameters: obj, Toolset: "flood", Tool: "t",
			Version: 1, Runtime: fmt.Sprintf("other-%d", i)})
		require.NoError(t, err)
		require.NoError(t, flood.Publish(subject, data))
	}
	// A sentinel on the same subscription: once it is in, the flood is.
	sentinel, _ := subj.Init("zz__t")
	data, _ := encodeRequest("", MethodInit, InitParams{ToolName: "zz__t", Description: "d", Parameters: obj, Toolset: "zz", Tool: "t", Version: 1, Runtime: "x"})
	require.NoError(t, flood.Publish(sentinel, data))
	require.NoError(t, flood.Flush())
	require.Eventually(t, func() bool {
		c.mu.RLock()
		defer c.mu.RUnlock()
		return c.catalog["zz"] != nil
	}, 10*time.Second, 5*time.Millisecond)

	c.mu.RLock()
	versions, runtimes := 0, 0
	if e := c.catalog["flood"]; e != nil {
		versions = len(e.versions)
		for _, v := range e.versions {
			runtimes = max(runtimes, len(v.runtimes))
		}
	}
	c.mu.RUnlock()
	assert.LessOrEqual(t, versions, 64, "versions kept of one toolset")
	assert.LessOrEqual(t, runtimes, 256, "runtimes kept of one version")
}

// A runtime answers each init_request on a goroutine of its own, with no
// bound, and an init_request with a configuration it has not seen runs
// the package's "--schema --config" discovery: a flood of init_requests,
// each with another configuration, starts as many sandboxed processes at
// once as there are messages, whatever MaxCalls (2 here) or the store's
// MaxParallelDiscovery (4) say.
func TestReviewInitRequestFloodIsBounded(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	dir := runtimeDir(t)
	startRuntime(t, nc, dir, "rt1", 2)

	agent := connect(t, s)
	subj, _ := NewSubjects("")
	subject, _ := subj.InitRequest("demo__keyed")
	inbox := nats.NewInbox()
	var answers atomic.Int32
	sub, err := agent.Subscribe(inbox, func(*nats.Msg) { answers.Add(1) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	peak := 0
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			peak = max(peak, schemaProcesses(dir))
		}
	}()
	// Four times the bound: enough to see it hold.
	const n = 4 * toolpkg.DefaultMaxParallelDiscovery
	for i := range n {
		cfg := &WireConfig{Tools: map[string]map[string]any{"keyed": {"api_key": fmt.Sprintf("k%d", i)}}}
		data, err := encodeRequest(fmt.Sprintf("r%d", i), MethodInitRequest, InitRequestParams{ToolName: "demo__keyed", ToolsetConfig: cfg})
		require.NoError(t, err)
		require.NoError(t, agent.PublishMsg(&nats.Msg{Subject: subject, Reply: inbox, Data: data}))
	}
	require.NoError(t, agent.Flush())
	require.Eventually(t, func() bool { return answers.Load() == n }, 60*time.Second, 10*time.Millisecond)
	close(stop)
	<-sampled
	assert.LessOrEqual(t, peak, toolpkg.DefaultMaxParallelDiscovery,
		"discovery processes running at once for one agent's init_requests (MaxCalls 2)")
}

// schemaProcesses counts the processes whose command line runs an
// executable under dir with --schema, the tool itself and not the sandbox
// that wraps it (bwrap, prlimit).
func schemaProcesses(dir string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte("--schema")) && bytes.Contains(b, []byte("--config")) && bytes.Contains(b, []byte(dir)) {
			if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && filepath.Base(exe) == "meshtool" {
				n++
			}
		}
	}
	return n
}

// Only the server's "no responders" proves nobody received an invoke, but
// the client takes any empty message with a Status 503 header on the
// call's response subject for it, even after a runtime accepted the call:
// whoever learns the correlation ID (any subscriber to invoke.>) makes the
// client send the call again, and a tool that is not idempotent runs
// twice.
func TestReviewForgedNoRespondersAfterAcceptDoesNotRunTheCallTwice(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	forger := connect(t, s)
	var invokes atomic.Int32
	p := newPeer(t, s, []string{"pay"}, func(p *peer, m *nats.Msg, req *Request, ip *InvokeParams) {
		if invokes.Add(1) == 1 {
			p.status(m, p.id, StateAccepted, "")
			_ = p.nc.Flush() // the broker has the acceptance first
			// The call runs here; meanwhile a forged no-responders.
			fake := nats.NewMsg(replySubject(m))
			fake.Header.Set("Status", "503")
			_ = forger.PublishMsg(fake)
			_ = forger.Flush()
			time.Sleep(50 * time.Millisecond)
		}
		p.result(m, req.ID, "paid")
	})
	_, tools := fakeTools(t, s, p, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = callTool(ctx, tools["fake__pay"], `{}`)
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, int32(1), invokes.Load(), "the invoke was sent again after a runtime accepted it")
}

// A tool is <toolset>__<tool>, and a tool's own name may hold "__": so a
// toolset may not be named with "__" (or end with '_'), or "a__b__echo"
// would be tool "b__echo" of toolset "a" as well as tool "echo" of
// toolset "a__b", and a call (with its tool_config) for one be served by
// the other. The name is refused wherever a toolset is named.
func TestReviewToolsetNamedWithSeparatorIsRefused(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a__b", "a_", "a___b"} {
		err := toolpkg.CheckName(name)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "__", name)
	}
	require.NoError(t, toolpkg.CheckName("a_b-c"))
	s := startServer(t)
	nc := connect(t, s)
	pk, err := OpenPackages(context.Background(), nc, "")
	require.NoError(t, err)
	err = pk.Publish(context.Background(), "a__b", 1, bytes.NewReader(meshPackage(t, "")), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "separates")
}
