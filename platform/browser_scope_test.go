package platform

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In a real browser: a person logged in with a read token sees the
// toolsets and no upload form; once the token is revoked, the next page
// sends them to the login form. A publish token's session has the form.
func TestReadOnlySessionInABrowser(t *testing.T) {
	t.Parallel()
	browser := findBrowser(t)
	e := newEnv(t, nil)
	e.upload("weather", goodPackage(t, "forecast", "Tells the weather.", 0))
	e.settle("weather")
	viewer := e.createToken("viewer", ScopeRead)
	publisher := e.createToken("publisher", ScopePublish)
	profile := filepath.Join(t.TempDir(), "chromium-profile")

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
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
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(e.hs.URL+"/login")))
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		require.NoError(t, chromedp.Do(sctx, actions...), what)
	}
	count := func(sel string) int {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n, err := chromedp.Run(sctx, chromedp.Evaluate[int](`document.querySelectorAll(`+"`"+sel+"`"+`).length`))
		require.NoError(t, err, sel)
		return n
	}
	login := func(secret string) {
		t.Helper()
		step("log in",
			chromedp.Navigate(e.hs.URL+"/login"),
			chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), secret),
			chromedp.Click(chromedp.CSS(`form.login button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-toolset="weather"]`)))
	}

	login(viewer.Secret)
	assert.Equal(t, 0, count(`form.upload`), "no upload form on the list")
	step("open weather", chromedp.Click(chromedp.CSS(`tr[data-toolset="weather"] a`)), chromedp.WaitVisible(chromedp.CSS(`#tools`)))
	assert.Equal(t, 0, count(`form.upload`), "no upload form on the toolset's page")
	assert.Equal(t, 0, count(`form[action="/upload"]`))

	require.Equal(t, 204, e.do("DELETE", "/api/v1/platform/tokens/viewer", nil).status)
	step("the next page", chromedp.Navigate(e.hs.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))

	login(publisher.Secret)
	assert.Equal(t, 1, count(`form.upload`), "a publish token's session has the form")
}
