package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlatformUsage(t *testing.T) {
	code, _, stderr := runCLI("platform")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--store DIR is required")
	code, _, stderr = runCLI("platform", "--store", t.TempDir(), "--sandbox", "nosuch")
	assert.Equal(t, exitUsage, code, stderr)
	code, _, stderr = runCLI("platform", "--store", t.TempDir(), "--insecure-no-auth", "--token-file", "x")
	assert.Equal(t, exitUsage, code, stderr)
	t.Setenv("TOOLSET_PLATFORM_TOKEN", "")
	code, _, stderr = runCLI("platform", "--store", t.TempDir(), "--listen", "127.0.0.1:0")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "no bearer token")
	code, stdout, _ := runCLI("--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "platform --store DIR")
}

// The real binary serves the platform, answers an authenticated request,
// and exits cleanly on SIGTERM, closing its store.
func TestPlatformServesAndStopsOnSIGTERM(t *testing.T) {
	// In the strongest sandbox this machine has too: as root, the tools
	// (and the runtime's discovery) run as another user, who must reach
	// the runtime's store under the platform's directory.
	for _, mode := range []string{"direct", "auto"} {
		t.Run(mode, func(t *testing.T) { testPlatformServesAndStops(t, mode) })
	}
}

func testPlatformServesAndStops(t *testing.T, mode string) {
	bin := cliBinary(t)
	dir := t.TempDir()
	// The temporary directories are the test's, 0700: let others search
	// them, as a store's parents must let the tools' user.
	for d := dir; d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o711))
	}
	tokenFile := filepath.Join(dir, "token")
	const token = "cli-test-token-0123456789abcdef"
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	store := filepath.Join(dir, "store")

	cmd := exec.Command(bin, "platform", "--listen", "127.0.0.1:0", "--store", store, "--token-file", tokenFile, "--sandbox", mode)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	// Its log, line by line, then its exit.
	lines := make(chan string, 1000)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	ended := false
	defer func() {
		if !ended {
			cmd.Process.Kill()
			<-exited
		}
	}()
	urlRE := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)`)
	var base string
	var logged []string
	timeout := time.After(20 * time.Second)
	for base == "" {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the command ended before listening: %s", strings.Join(logged, "\n"))
			logged = append(logged, l)
			if m := urlRE.FindStringSubmatch(l); m != nil {
				base = m[1]
			}
		case <-timeout:
			t.Fatalf("no listening address logged: %s", strings.Join(logged, "\n"))
		}
	}

	client := &http.Client{Timeout: 10 * time.Second}
	req, _ := http.NewRequest("GET", base+"/api/v1/platform/toolsets", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := client.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	assert.JSONEq(t, `{"data":[],"meta":{"page":1,"pageSize":50,"total":0}}`, string(body))
	res, err = client.Get(base + "/api/v1/platform/toolsets")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	client.CloseIdleConnections()

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	stop := time.After(30 * time.Second)
	for l := range lines {
		logged = append(logged, l)
		select {
		case <-stop:
			t.Fatal("the command did not stop on SIGTERM")
		default:
		}
	}
	select {
	case err := <-exited:
		ended = true
		require.NoError(t, err, "a clean exit on SIGTERM: %s", strings.Join(logged, "\n"))
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not stop on SIGTERM")
	}
	all := strings.Join(logged, "\n")
	assert.Contains(t, all, "shutting down")
	assert.Contains(t, all, "stopped")
	assert.NotContains(t, all, token, "the token is never logged")
}
