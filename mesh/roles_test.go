package mesh

import (
	"bytes"
	"context"
	"flag"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// violations collects the permission violations the broker reports to a
// connection.
type violations struct {
	mu  sync.Mutex
	got []string
}

func (v *violations) add(err error) {
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
		v.mu.Lock()
		v.got = append(v.got, err.Error())
		v.mu.Unlock()
	}
}

func (v *violations) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.got...)
}

// roleBroker is an embedded server whose users are limited to their roles'
// grants: "platform", "runtime1", "runtime2", "agent1", "agent2".
type roleBroker struct {
	s     *server.Server
	users map[string]Grant
}

func startRoleBroker(t *testing.T) *roleBroker {
	t.Helper()
	rb := &roleBroker{users: map[string]Grant{}}
	var users []*server.User
	for user, role := range map[string]Role{
		"platform": RolePlatform, "runtime1": RoleRuntime, "runtime2": RoleRuntime,
		"agent1": RoleAgent, "agent2": RoleAgent, "demo__echo": RoleAgent,
	} {
		g, err := Permissions(role, "", user)
		require.NoError(t, err)
		rb.users[user] = g
		users = append(users, &server.User{Username: user, Password: "pw-" + user, Permissions: g.Server()})
	}
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, Users: users, MaxPayload: DefaultMaxPayload,
	})
	require.NoError(t, err)
	s.Start()
	require.True(t, s.ReadyForConnections(10*time.Second))
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	rb.s = s
	return rb
}

// conn connects as user, with the inbox prefix of its grant unless inbox
// says otherwise.
func (rb *roleBroker) conn(t *testing.T, user, inbox string) (*nats.Conn, *violations) {
	t.Helper()
	v := &violations{}
	if inbox == "" {
		inbox = rb.users[user].InboxPrefix
	}
	nc, err := nats.Connect(rb.s.ClientURL(), nats.UserInfo(user, "pw-"+user), nats.CustomInboxPrefix(inbox),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { v.add(err) }))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc, v
}

func TestPermissionsRefuseBadInput(t *testing.T) {
	t.Parallel()
	_, err := Permissions("admin", "", "x")
	assert.ErrorContains(t, err, "unknown role")
	_, err = Permissions(RoleAgent, "", "a.b")
	assert.Error(t, err)
	_, err = Permissions(RoleAgent, "", "a>")
	assert.Error(t, err)
	_, err = Permissions(RoleRuntime, "bad ns", "r")
	assert.Error(t, err)
	_, err = AccountConfig("TOOLSET", ConfigUser{User: "a", PasswordVar: "A-B", Grant: Grant{Role: RoleAgent}})
	assert.ErrorContains(t, err, "environment variable")
	_, err = AccountConfig("TOOLSET")
	assert.Error(t, err)
	g, err := Permissions(RoleAgent, "prod.eu", "bot")
	require.NoError(t, err)
	assert.Equal(t, "_INBOX.prod.eu.agent.bot", g.InboxPrefix)
	assert.Contains(t, g.Subscribe, "prod.eu.a2a.v1.sam_remote_tool.response.bot.>")
	assert.Contains(t, g.Publish, "$JS.API.STREAM.INFO.OBJ_prod_eu_artifacts")
	for _, s := range append(g.Publish, g.Subscribe...) {
		assert.NotContains(t, s, "packages", "an agent never reaches the packages bucket")
	}
}

// Platform, runtime and agent do their whole work within their grants: a
// package published, synced and reported, a call with progress and an
// artifact through the shared store, and no permission violation.
func TestRolesAllowTheWholeFlow(t *testing.T) {
	t.Parallel()
	rb := startRoleBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	pnc, pv := rb.conn(t, "platform", "")
	pk, err := OpenPackages(ctx, pnc, "")
	require.NoError(t, err)
	var mu sync.Mutex
	var reps []SyncReport
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	require.NoError(t, pk.WatchReports(wctx, func(r SyncReport) {
		mu.Lock()
		reps = append(reps, r)
		mu.Unlock()
	}))
	require.NoError(t, pk.Publish(ctx, "demo", 1, strings.NewReader(string(meshPackage(t, ""))), nil))

	rnc, rv := rb.conn(t, "runtime1", "")
	startRuntime(t, rnc, "", "runtime1", 2)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range reps {
			if r.Runtime == "runtime1" && r.Status == SyncReady {
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "the platform hears the runtime's report")

	anc, av := rb.conn(t, "agent1", "")
	c, err := NewClient(ctx, anc, &ClientOptions{Agent: "agent1", Logger: quietLogger()})
	require.NoError(t, err)
	defer c.Close()
	info, err := c.Info("demo")
	require.NoError(t, err, "violations: agent %v, runtime %v", av.list(), rv.list())
	assert.Equal(t, toolpkg.StatusReady, info.Status)
	tools, err := toolset.BuildTools(ctx, "agent1", c.Toolset("demo", nil))
	require.NoError(t, err)
	var progress []string
	pctx := toolset.WithProgress(ctx, func(p toolset.Progress) { progress = append(progress, p.Message) })
	out, err := tools.Execute(pctx, toolset.ToolCall{Name: "demo__echo", Args: []byte(`{"text":"hi"}`)})
	require.NoError(t, err)
	assert.Contains(t, toolText(out), "echo: hi", "%T %+v", out, out)
	assert.Contains(t, progress, "echoing")

	// The shared artifact store, from both sides.
	as, err := NewArtifactStore(ctx, anc, nil)
	require.NoError(t, err, "violations: %v", av.list())
	scope := toolpkg.ArtifactScope{AppName: "app", UserID: "u", SessionID: "s"}
	ref, err := as.Save(ctx, scope, toolpkg.ArtifactRef{Name: "notes.txt", MIMEType: "text/plain"}, strings.NewReader("hello"))
	require.NoError(t, err)
	rs, err := NewArtifactStore(ctx, rnc, nil)
	require.NoError(t, err)
	_, rc, err := rs.Load(ctx, scope, "notes.txt", ref.Version)
	require.NoError(t, err)
	rc.Close()

	for who, v := range map[string]*violations{"platform": pv, "runtime": rv, "agent": av} {
		assert.Empty(t, v.list(), "%s's violations", who)
	}
}

// toolText is the text a tool's result shows the model.
func toolText(out any) string {
	switch v := out.(type) {
	case string:
		return v
	case *toolset.Content:
		var b strings.Builder
		for _, p := range v.Parts {
			b.WriteString(p.Text)
		}
		return b.String()
	case *toolpkg.Result:
		return v.Message
	}
	return ""
}

func TestAgentRoleIsConfined(t *testing.T) {
	t.Parallel()
	rb := startRoleBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	subj, _ := NewSubjects("")
	pnc, _ := rb.conn(t, "platform", "")
	pk, err := OpenPackages(ctx, pnc, "")
	require.NoError(t, err)
	require.NoError(t, pk.Publish(ctx, "demo", 1, strings.NewReader(string(meshPackage(t, ""))), map[string]any{"api_key": "secret"}))

	a1, v1 := rb.conn(t, "agent1", "")
	a2, _ := rb.conn(t, "agent2", "")
	rt, _ := rb.conn(t, "runtime1", "")
	resp2, _ := subj.Response("agent2", "c1")
	status2, _ := subj.Status("agent2", "c1")

	// agent1 cannot read agent2's responses or statuses: the subscription
	// is refused, and nothing reaches it.
	stolen := make(chan *nats.Msg, 4)
	for _, s := range []string{resp2, status2, subj.remote + "response.>", subj.remote + "response.*.c1"} {
		_, err := a1.ChanSubscribe(s, stolen)
		require.NoError(t, err)
	}
	require.NoError(t, a1.Flush())
	got := make(chan *nats.Msg, 1)
	_, err = a2.ChanSubscribe(resp2, got)
	require.NoError(t, err)
	require.NoError(t, a2.Flush())
	require.NoError(t, rt.Publish(resp2, []byte(`{"jsonrpc":"2.0","id":"c1","result":{}}`)))
	require.NoError(t, rt.Publish(status2, []byte(`{}`)))
	require.NoError(t, rt.Flush())
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("agent2 did not get its response")
	}
	require.Eventually(t, func() bool { return len(v1.list()) >= 4 }, 5*time.Second, 10*time.Millisecond)
	assert.Empty(t, stolen, "agent1 read another agent's messages")

	// agent1 cannot announce a tool, answer a call, or remove a tool: the
	// broker drops the messages.
	initSubj, _ := subj.Init("demo__echo")
	removed, _ := subj.Removed("demo__echo")
	heard := make(chan *nats.Msg, 8)
	for _, s := range []string{initSubj, removed} {
		_, err := a2.ChanSubscribe(s, heard)
		require.NoError(t, err)
	}
	require.NoError(t, a2.Flush())
	before := len(v1.list())
	for _, s := range []string{initSubj, removed, resp2, status2} {
		require.NoError(t, a1.Publish(s, []byte(`{}`)))
	}
	require.NoError(t, a1.Flush())
	require.Eventually(t, func() bool { return len(v1.list()) >= before+4 }, 5*time.Second, 10*time.Millisecond)
	assert.Empty(t, heard)
	assert.Empty(t, got, "agent1 answered agent2's call")

	// An agent named like a tool, on the one subscription of its
	// responses and statuses, gets those and never another's pinned
	// invoke of that tool.
	named, nv := rb.conn(t, "demo__echo", "")
	mine := make(chan *nats.Msg, 4)
	_, err = named.ChanSubscribe(subj.remote+"*.demo__echo.*", mine)
	require.NoError(t, err)
	require.NoError(t, named.Flush())
	pinned, _ := subj.InvokeVersion("demo__echo", 1)
	ownResp, _ := subj.Response("demo__echo", "c9")
	require.NoError(t, a2.Publish(pinned, []byte(`{"secret":"args"}`)))
	require.NoError(t, rt.Publish(ownResp, []byte(`{}`)))
	require.NoError(t, a2.Flush())
	require.NoError(t, rt.Flush())
	select {
	case m := <-mine:
		assert.Equal(t, ownResp, m.Subject)
	case <-time.After(5 * time.Second):
		t.Fatal("the agent did not get its own response")
	}
	time.Sleep(100 * time.Millisecond)
	assert.Empty(t, mine, "another agent's invoke reached the agent named like the tool")
	assert.Empty(t, nv.list())

	// Nor cancel another agent's calls, nor read the sync reports.
	cancel2, _ := subj.Cancel("agent2", "c1")
	before = len(v1.list())
	require.NoError(t, a1.Publish(cancel2, nil))
	_, err = a1.SubscribeSync(subj.SyncReport())
	require.NoError(t, err)
	require.NoError(t, a1.Flush())
	require.Eventually(t, func() bool { return len(v1.list()) >= before+2 }, 5*time.Second, 10*time.Millisecond)

	// The packages bucket, which holds stored configuration, is out of
	// reach: JetStream's API refuses the agent.
	dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer dcancel()
	_, err = OpenPackages(dctx, a1, "")
	assert.Error(t, err)
	js, err := jetstream.New(a1)
	require.NoError(t, err)
	_, err = js.ObjectStore(dctx, PackagesBucket(""))
	assert.Error(t, err)

	// A connection without its own inbox prefix gets no JetStream answer
	// at all, so it cannot read another process's inbox either.
	plain, pv := rb.conn(t, "agent1", "_INBOX")
	sctx, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer scancel()
	_, err = NewArtifactStore(sctx, plain, nil)
	assert.Error(t, err)
	before = len(pv.list())
	_, err = plain.SubscribeSync("_INBOX.toolset.runtime.runtime1.>")
	require.NoError(t, err)
	require.NoError(t, plain.Flush())
	require.Eventually(t, func() bool { return len(pv.list()) > before }, 5*time.Second, 10*time.Millisecond)
}

func TestRuntimeRoleCannotInvoke(t *testing.T) {
	t.Parallel()
	rb := startRoleBroker(t)
	subj, _ := NewSubjects("")
	rt, rv := rb.conn(t, "runtime1", "")
	rt2, _ := rb.conn(t, "runtime2", "")
	inv, _ := subj.Invoke("demo__echo")
	heard := make(chan *nats.Msg, 4)
	_, err := rt2.ChanQueueSubscribe(inv, QueueGroup, heard)
	require.NoError(t, err)
	require.NoError(t, rt2.Flush())
	require.NoError(t, rt.Publish(inv, []byte(`{}`)))
	// Nor publish a package, nor pose as the platform's sync.
	require.NoError(t, rt.Publish("$O."+PackagesBucket("")+".M.x", []byte(`{}`)))
	require.NoError(t, rt.Publish(subj.Sync(), []byte(`{}`)))
	// Nor read an agent's cancel... it may: every runtime hears cancels.
	require.NoError(t, rt.Flush())
	require.Eventually(t, func() bool { return len(rv.list()) >= 3 }, 5*time.Second, 10*time.Millisecond)
	assert.Empty(t, heard)
}

var updateRoles = flag.Bool("update-roles", false, "rewrite the configuration ROLES.md shows")

// ROLES.md holds the configuration AccountConfig generates.
func TestRolesDocMatchesPermissions(t *testing.T) {
	doc, err := os.ReadFile("ROLES.md")
	require.NoError(t, err)
	conf := exampleAccountConfig(t)
	const begin, end = "<!-- AccountConfig -->\n```\n", "```\n<!-- end -->"
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	require.True(t, i >= 0 && j > i, "ROLES.md has no generated block")
	block := "jetstream {\n  store_dir: \"/var/lib/nats\"\n}\n\n" + conf
	if *updateRoles {
		doc = []byte(string(doc[:i+len(begin)]) + block + string(doc[j:]))
		require.NoError(t, os.WriteFile("ROLES.md", doc, 0o644))
		return
	}
	assert.True(t, string(doc[i+len(begin):j]) == block, "ROLES.md is out of date: go test -run TestRolesDocMatchesPermissions -update-roles")
	// The block is a valid nats-server configuration.
	dir := t.TempDir()
	path := dir + "/nats.conf"
	require.NoError(t, os.WriteFile(path, []byte("jetstream {store_dir: \""+dir+"\"}\n"+conf), 0o600))
	for _, v := range []string{"PLATFORM_PASSWORD", "RUNTIME_PASSWORD", "AGENT_PASSWORD"} {
		t.Setenv(v, "x")
	}
	opts, err := server.ProcessConfigFile(path)
	require.NoError(t, err)
	require.Len(t, opts.Users, 3)
	for _, u := range opts.Users {
		assert.NotEmpty(t, u.Permissions.Publish.Allow, u.Username)
	}
	assert.Regexp(t, regexp.MustCompile(`(?s)allow_responses`), conf)
}

// exampleAccountConfig is the configuration ROLES.md shows.
func exampleAccountConfig(t *testing.T) string {
	t.Helper()
	var users []ConfigUser
	for _, u := range []struct {
		user string
		role Role
		env  string
	}{
		{"platform", RolePlatform, "PLATFORM_PASSWORD"},
		{"runtime-1", RoleRuntime, "RUNTIME_PASSWORD"},
		{"support-bot", RoleAgent, "AGENT_PASSWORD"},
	} {
		g, err := Permissions(u.role, "", u.user)
		require.NoError(t, err)
		users = append(users, ConfigUser{User: u.user, PasswordVar: u.env, Grant: g})
	}
	conf, err := AccountConfig("TOOLSET", users...)
	require.NoError(t, err)
	return conf
}

// Connect, given a role user's inbox prefix (as the command's
// $TOOLSET_BROKER_INBOX_PREFIX gives it), reads its JetStream replies:
// the platform's user publishes and lists packages.
func TestConnectWithARolesInboxPrefix(t *testing.T) {
	t.Parallel()
	rb := startRoleBroker(t)
	g := rb.users["platform"]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o := ConnOptions{URL: rb.s.ClientURL(), User: "platform", Password: "pw-platform", Logger: quietLogger()}.
		WithEnv(func(k string) (string, bool) { return g.InboxPrefix, k == EnvBrokerInboxPrefix })
	nc, err := Connect(ctx, &o)
	require.NoError(t, err)
	defer nc.Close()
	pk, err := OpenPackages(ctx, nc, "")
	require.NoError(t, err)
	require.NoError(t, pk.Publish(ctx, "crm", 1, bytes.NewReader(meshPackage(t, "")), nil))
	list, err := pk.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
}
