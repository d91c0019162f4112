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
	t.Skip("no browser installed (looked for chromium, chromium-browser, google-chrome on PATH): " +
		"install Debian's chromium package (apt-get install -y chromium) to run the status page's browser test")
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

// The status page in a real browser: log in, upload a package through
// the form, watch its dot turn ready, read its tools, upload a broken
// package and read its errors.
func TestStatusPageInABrowser(t *testing.T) {
	browser := findBrowser(t)
	e := newEnv(t, &Options{RefreshInterval: time.Second})
	dir := t.TempDir()
	good := filepath.Join(dir, "weather.zip")
	require.NoError(t, os.WriteFile(good, goodPackage(t, "forecast", "Tells the weather of a city for the coming days.", 500*time.Millisecond), 0o644))
	broken := filepath.Join(dir, "billing.zip")
	require.NoError(t, os.WriteFile(broken, brokenPackage(t), 0o644))
	profile := filepath.Join(dir, "chromium-profile")

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser),
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
	defer func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = chromedp.Cancel(cctx)
		cancelCtx()
		cancelAlloc()
		assert.Empty(t, browserProcesses(profile), "a browser process outlived the test")
	}()
	// The first run starts the browser, with no deadline of its own.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(e.hs.URL+"/")))

	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		require.NoError(t, chromedp.Do(sctx, actions...), what)
	}
	text := func(sel string) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return s
	}
	attr := func(sel, name string) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		a, err := chromedp.Run(sctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
		require.NoError(t, err, sel)
		return a.Value
	}
	// waitStatus reloads page until the element's data-status is want.
	waitStatus := func(page, sel, want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			step("open "+page, chromedp.Navigate(e.hs.URL+page))
			got := attr(sel, "data-status")
			if got == want {
				return
			}
			require.True(t, time.Now().Before(deadline), "%s on %s is still %q, not %q", sel, page, got, want)
			time.Sleep(200 * time.Millisecond) // between polls
		}
	}
	shot := func(name string) []byte {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(t.ArtifactDir(), name), png, 0o644))
		return png
	}

	// Not logged in: the login form.
	step("login page", chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	step("wrong token",
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), "not-the-token-0123456789"),
		chromedp.Click(chromedp.CSS(`form.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#error`)))
	assert.Contains(t, text("#error"), "not the platform")
	step("log in",
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), testToken),
		chromedp.Click(chromedp.CSS(`form.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.upload`)))
	assert.Equal(t, "Toolsets", text("h1"))
	shot("01-empty.png")

	// A good package through the form: its page, then its dot turns ready.
	step("upload weather",
		chromedp.SendKeys(chromedp.CSS(`form.upload input[name="name"]`), "weather"),
		chromedp.SetUploadFiles(chromedp.CSS(`form.upload input[name="package"]`), []string{good}),
		chromedp.Click(chromedp.CSS(`form.upload button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#toolset`)))
	assert.Contains(t, text("#toolset"), "weather")
	waitStatus("/", `tr[data-toolset="weather"]`, "ready")
	assert.Contains(t, attr(`tr[data-toolset="weather"] .dot`, "class"), "dot-ready")

	step("open weather", chromedp.Click(chromedp.CSS(`tr[data-toolset="weather"] a`)), chromedp.WaitVisible(chromedp.CSS(`#tools`)))
	assert.Equal(t, "ready", attr("#toolset", "data-status"))
	assert.Equal(t, "forecast", text(`article.tool h3`))
	assert.Contains(t, text(`article.tool .description`), "Tells the weather")
	assert.Contains(t, text(`article.tool table.params`), "whom to greet")
	shot("02-detail.png")

	// A broken package: failed, and why.
	step("back to the list", chromedp.Navigate(e.hs.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`form.upload`)))
	step("upload billing",
		chromedp.SendKeys(chromedp.CSS(`form.upload input[name="name"]`), "billing"),
		chromedp.SetUploadFiles(chromedp.CSS(`form.upload input[name="package"]`), []string{broken}),
		chromedp.Click(chromedp.CSS(`form.upload button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#toolset`)))
	waitStatus("/toolsets/billing", "#toolset", "failed")
	assert.Contains(t, text("#discovery-errors"), "the database is unreachable")
	shot("03-failed.png")

	// The list, for the README: an agent using one, one created, one
	// pending.
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "weather"))).status)
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"crm"}`)).status)
	e.upload("search", goodPackage(t, "query", "Searches the documents.", 30*time.Second))
	step("the list", chromedp.Navigate(e.hs.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-toolset="search"]`)))
	assert.Equal(t, "failed", attr(`tr[data-toolset="billing"]`, "data-status"))
	assert.Equal(t, "pending", attr(`tr[data-toolset="search"]`, "data-status"))
	assert.Equal(t, "created", attr(`tr[data-toolset="crm"]`, "data-status"))
	png := shot("04-list.png")
	if os.Getenv("TOOLSET_UPDATE_SCREENSHOTS") == "1" {
		p := filepath.Join("..", "docs", "platform-status.png")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, png, 0o644))
		t.Logf("wrote %s", p)
	}
}
