package platform

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// findBrowser returns the installed Chromium, or skips the test.
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Log("looked for chromium, chromium-browser and google-chrome on PATH")
	t.Skip("chromium not installed (apt-get install chromium): the status page is tested in a headless browser")
	return ""
}

// browserProcesses lists the processes whose command line holds marker.
func browserProcesses(marker string) []string {
	var out []string
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", de.Name(), "stat"))
		if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
			continue
		}
		out = append(out, de.Name())
	}
	return out
}

// browser is a headless Chromium driven by a test, with the steps the
// tests take.
type browser struct {
	t   *testing.T
	e   *testEnv
	ctx context.Context
}

// startBrowser starts Chromium with a profile of its own and opens the
// platform's page; the test's end stops it and checks that no process of
// it is left.
func startBrowser(t *testing.T, e *testEnv) *browser {
	t.Helper()
	exe := findBrowser(t)
	profile := filepath.Join(t.TempDir(), "chromium-profile")
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1200, 760),
	)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = chromedp.Cancel(cctx)
		cancelCtx()
		cancelAlloc()
		assert.Empty(t, browserProcesses(profile), "a browser process outlived the test")
	})
	// The first run starts the browser, with no deadline of its own.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(e.hs.URL+"/")))
	return &browser{t: t, e: e, ctx: ctx}
}

func (b *browser) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	require.NoError(b.t, chromedp.Do(sctx, actions...), what)
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(b.t, err, sel)
	return s
}

func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	a, err := chromedp.Run(sctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	require.NoError(b.t, err, sel)
	return a.Value
}

// html is the page's HTML as the browser has it.
func (b *browser) html() string {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.OuterHTML(chromedp.CSS("html")))
	require.NoError(b.t, err)
	return s
}

// waitStatus reloads page until the element's data-status is want.
func (b *browser) waitStatus(page, sel, want string) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b.step("open "+page, chromedp.Navigate(b.e.hs.URL+page))
		got := b.attr(sel, "data-status")
		if got == want {
			return
		}
		require.True(b.t, time.Now().Before(deadline), "%s on %s is still %q, not %q", sel, page, got, want)
		time.Sleep(200 * time.Millisecond) // between polls
	}
}

// shot keeps a screenshot of the page among the test's artifacts and,
// with TOOLSET_UPDATE_SCREENSHOTS=1, as docs/<doc> for the README ("":
// only the artifact).
func (b *browser) shot(name, doc string) {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(b.t.ArtifactDir(), name), png, 0o644))
	if doc != "" && os.Getenv("TOOLSET_UPDATE_SCREENSHOTS") == "1" {
		p := filepath.Join("..", "docs", doc)
		require.NoError(b.t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b.t, os.WriteFile(p, png, 0o644))
		b.t.Logf("wrote %s", p)
	}
}

// logIn logs in through the form with the secret.
func (b *browser) logIn(secret string) {
	b.t.Helper()
	b.step("log in",
		chromedp.Navigate(b.e.hs.URL+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), secret),
		chromedp.Click(chromedp.CSS(`form.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.logout`)))
}

// The status page in a real browser: log in, upload a package through
// the form, watch its dot turn ready, read its tools, upload a broken
// package and read its errors.
func TestStatusPageInABrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{RefreshInterval: time.Second})
	dir := t.TempDir()
	good := filepath.Join(dir, "weather.zip")
	require.NoError(t, os.WriteFile(good, goodPackage(t, "forecast", "Tells the weather of a city for the coming days.", 500*time.Millisecond), 0o644))
	broken := filepath.Join(dir, "billing.zip")
	require.NoError(t, os.WriteFile(broken, brokenPackage(t), 0o644))
	b := startBrowser(t, e)

	// Not logged in: the login form.
	b.step("login page", chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	b.step("wrong token",
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), "not-the-token-0123456789"),
		chromedp.Click(chromedp.CSS(`form.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#error`)))
	assert.Contains(t, b.text("#error"), "not the platform")
	b.step("log in",
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), testToken),
		chromedp.Click(chromedp.CSS(`form.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.upload`)))
	assert.Equal(t, "Toolsets", b.text("h1"))
	b.shot("01-empty.png", "")

	// A good package through the form: its page, then its dot turns ready.
	b.step("upload weather",
		chromedp.SendKeys(chromedp.CSS(`form.upload input[name="name"]`), "weather"),
		chromedp.SetUploadFiles(chromedp.CSS(`form.upload input[name="package"]`), []string{good}),
		chromedp.Click(chromedp.CSS(`form.upload button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#toolset`)))
	assert.Contains(t, b.text("#toolset"), "weather")
	b.waitStatus("/", `tr[data-toolset="weather"]`, "ready")
	assert.Contains(t, b.attr(`tr[data-toolset="weather"] .dot`, "class"), "dot-ready")

	b.step("open weather", chromedp.Click(chromedp.CSS(`tr[data-toolset="weather"] a`)), chromedp.WaitVisible(chromedp.CSS(`#tools`)))
	assert.Equal(t, "ready", b.attr("#toolset", "data-status"))
	assert.Equal(t, "forecast", b.text(`article.tool h3`))
	assert.Contains(t, b.text(`article.tool .description`), "Tells the weather")
	assert.Contains(t, b.text(`article.tool table.params`), "whom to greet")
	b.shot("02-detail.png", "")

	// A broken package: failed, and why.
	b.step("back to the list", chromedp.Navigate(e.hs.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`form.upload`)))
	b.step("upload billing",
		chromedp.SendKeys(chromedp.CSS(`form.upload input[name="name"]`), "billing"),
		chromedp.SetUploadFiles(chromedp.CSS(`form.upload input[name="package"]`), []string{broken}),
		chromedp.Click(chromedp.CSS(`form.upload button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#toolset`)))
	b.waitStatus("/toolsets/billing", "#toolset", "failed")
	assert.Contains(t, b.text("#discovery-errors"), "the database is unreachable")
	b.shot("03-failed.png", "")

	// The list, for the README: an agent using one, one created, one
	// pending.
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "weather"))).status)
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"crm"}`)).status)
	e.upload("search", goodPackage(t, "query", "Searches the documents.", 30*time.Second))
	b.step("the list", chromedp.Navigate(e.hs.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-toolset="search"]`)))
	assert.Equal(t, "failed", b.attr(`tr[data-toolset="billing"]`, "data-status"))
	assert.Equal(t, "pending", b.attr(`tr[data-toolset="search"]`, "data-status"))
	assert.Equal(t, "created", b.attr(`tr[data-toolset="crm"]`, "data-status"))
	b.shot("04-list.png", "platform-status.png")
}

// Agents and skills in a real browser: the agents page, an agent whose
// toolset is not ready and why, its Deploy button once it is, the attach
// form with its password field never filled back, a session without the
// agents scope that sees no button, and the skills page.
func TestAgentPagesInABrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{RefreshInterval: time.Second})
	e.upload("crm", configPackage(t, 0, attachTools()...))
	require.Equal(t, "ready", e.settle("crm")["discoveryStatus"])
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"billing"}`)).status)
	doc := "kind: agent\nname: support\nspec:\n  systemPrompt: Answer the customers.\n  toolsets: [billing]\n"
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/support", []byte(doc)).status)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/idle", []byte("name: idle\n")).status)
	b := startBrowser(t, e)
	b.logIn(testToken)

	b.step("agents", chromedp.Navigate(e.hs.URL+"/agents"), chromedp.WaitVisible(chromedp.CSS(`#agents`)))
	assert.Equal(t, "false", b.attr(`tr[data-agent="support"]`, "data-deployed"))
	assert.Contains(t, b.text(`tr[data-agent="support"] .deploy-state`), "not deployed")
	b.shot("10-agents.png", "")

	// Not ready: the toolset's dot and the deploy's reasons.
	b.step("open support", chromedp.Click(chromedp.CSS(`tr[data-agent="support"] a`)), chromedp.WaitVisible(chromedp.CSS(`#agent`)))
	assert.Equal(t, "created", b.attr(`tr[data-toolset="billing"]`, "data-status"))
	assert.Contains(t, b.attr(`tr[data-toolset="billing"] .dot`, "class"), "dot-created")
	assert.Contains(t, b.text("#reasons"), `toolset "billing" is created`)
	assert.Contains(t, b.text("#reasons"), "no package was uploaded yet")
	b.shot("11-agent-not-ready.png", "")

	// Attach crm: pick it, then its fields; the secret is typed.
	b.step("choose crm",
		chromedp.SetValue(chromedp.CSS(`form.attach select[name="toolset"]`), "crm"),
		chromedp.Click(chromedp.CSS(`form.attach button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#attach`)))
	assert.Equal(t, "password", b.attr(`input[name="v:lookup:api_key"]`, "type"))
	b.step("fill the fields",
		chromedp.SendKeys(chromedp.CSS(`input[name="v:lookup:region"]`), "eu"),
		chromedp.SendKeys(chromedp.CSS(`input[name="v:lookup:limit"]`), "25"),
		chromedp.SetValue(chromedp.CSS(`select[name="v:lookup:verbose"]`), "true"),
		chromedp.SendKeys(chromedp.CSS(`input[name="v:lookup:api_key"]`), distinctSecret))
	b.shot("12-attach.png", "platform-attach.png")
	b.step("attach",
		chromedp.Click(chromedp.CSS(`#attach button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#agent`)))
	assert.Equal(t, "ready", b.attr(`tr[data-toolset="crm"]`, "data-status"))
	assert.Contains(t, b.text("#source"), "region: eu")
	assert.Contains(t, b.text("#source"), "<REDACTED>")
	assert.NotContains(t, b.html(), distinctSecret)

	// Back to the form: the password field is empty.
	b.step("the form again", chromedp.Navigate(e.hs.URL+"/agents/support/attach?toolset=crm"), chromedp.WaitVisible(chromedp.CSS(`#attach`)))
	assert.Equal(t, "", b.attr(`input[name="v:lookup:api_key"]`, "value"))
	assert.Contains(t, b.attr(`input[name="v:lookup:api_key"]`, "placeholder"), "a value is stored")
	assert.Equal(t, "eu", b.attr(`input[name="v:lookup:region"]`, "value"))
	assert.NotContains(t, b.html(), distinctSecret)

	// billing gets a package: Deploy, from the button.
	r := e.do("PUT", "/api/v1/platform/toolsets/billing/package?force=true", configPackage(t, 0, configTool{name: "charge", description: "Charges."}), "Content-Type", "application/zip")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.Equal(t, "ready", e.settle("billing")["discoveryStatus"])
	b.step("deployable", chromedp.Navigate(e.hs.URL+"/agents/support"), chromedp.WaitVisible(chromedp.CSS(`#deployable`)))
	b.step("deploy", chromedp.Click(chromedp.CSS(`#deploy`)), chromedp.WaitVisible(chromedp.CSS(`#agent[data-deployed="true"]`)))
	assert.Equal(t, "true", b.attr("#agent", "data-deployed"))
	assert.Equal(t, "false", b.attr("#agent", "data-needs-redeploy"))
	assert.Contains(t, b.text("#deploy-state"), "deployed")
	b.shot("13-agent-deployed.png", "platform-agent.png")
	b.step("agents again", chromedp.Navigate(e.hs.URL+"/agents"), chromedp.WaitVisible(chromedp.CSS(`#agents`)))
	assert.Equal(t, "true", b.attr(`tr[data-agent="support"]`, "data-deployed"))

	// Skills.
	require.Equal(t, http.StatusAccepted, e.putSkill("notes", skillZip(t, "", toolFiles(schemaDoc("greet", "Say hello."))...)).status)
	require.Equal(t, "ready", e.settleSkill("notes")["status"])
	b.step("skills", chromedp.Navigate(e.hs.URL+"/skills"), chromedp.WaitVisible(chromedp.CSS(`#skills`)))
	assert.Equal(t, "ready", b.attr(`tr[data-skill="notes"]`, "data-status"))
	assert.Contains(t, b.attr(`tr[data-skill="notes"] .dot`, "class"), "dot-ready")
	b.step("open notes", chromedp.Click(chromedp.CSS(`tr[data-skill="notes"] a`)), chromedp.WaitVisible(chromedp.CSS(`#skill`)))
	assert.Equal(t, "Write release notes.", b.text("#skill-description"))
	assert.Contains(t, b.text("#files"), "references/style.md")
	assert.Equal(t, "notes__greet", b.text(`article.tool h3`))
	b.shot("14-skill.png", "")

	// A session that may only read: no button, no form.
	b.step("log out", chromedp.Click(chromedp.CSS(`form.logout button`)), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	b.logIn(e.createToken("viewer", ScopeRead).Secret)
	b.step("support, read only", chromedp.Navigate(e.hs.URL+"/agents/support"), chromedp.WaitVisible(chromedp.CSS(`#agent`)))
	assert.NotContains(t, b.html(), `id="deploy"`)
	assert.NotContains(t, b.html(), `class="attach"`)
}
