package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
)

// countingServer answers every request with h and counts them.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestAgentCheckOnPlatform runs the real binary's "agent check
// --platform" against a platform served on loopback for a real store,
// whose lock the platform holds, as a running "toolset platform" does.
func TestAgentCheckOnPlatform(t *testing.T) {
	dir := t.TempDir()
	bin := cliBinary(t)
	zip := packaged(t)

	discard := slog.New(slog.DiscardHandler)
	storeDir := filepath.Join(dir, "store")
	s, err := toolpkg.Open(storeDir, &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: discard})
	require.NoError(t, err)
	_, err = s.UploadFile(context.Background(), "finance", zip)
	require.NoError(t, err)
	_, err = s.Create("draft")
	require.NoError(t, err)
	require.NoError(t, s.Close())

	good := writeFile(t, dir, "helpdesk.yaml", `name: helpdesk
toolsets:
  - local: orders
  - package: finance
    exclude: [crash, hang, spin, big, slow, connect, garbage, noresult, fs]
`)
	bad := writeFile(t, dir, "bad.yaml", `name: bad
toolsets:
  - package: finance
    tools:
      echo: {retries: lots}
  - package: draft
  - package: nope
`)
	// What the local check prints, while no platform holds the store.
	code, localOut, localErr := runBinary(t, bin, "agent", "check", bad, "--store", storeDir)
	require.Equal(t, 1, code, localErr)
	require.Equal(t, 3, strings.Count(localOut, "\n"), localOut)

	s, err = toolpkg.Open(storeDir, &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: discard})
	require.NoError(t, err)
	const token = "cli-check-token-0123456789abcdef"
	srv, err := platform.New(s, &platform.Options{Token: token, Logger: discard})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer func() {
		hs.Close()
		srv.Close()
		require.NoError(t, s.Close())
	}()
	tokenFile := writeFile(t, dir, "token", token+"\n")
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", hs.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hs.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}

	t.Run("the store is held", func(t *testing.T) {
		code, _, stderr := runBinary(t, bin, "agent", "check", good, "--store", storeDir)
		assert.Equal(t, 1, code, "the platform holds the store's lock: %s", stderr)
	})
	t.Run("problems as the local check prints them", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, bin, "agent", "check", bad, "--platform", hs.URL, "--token-file", tokenFile)
		assert.Equal(t, 1, code)
		// The platform lets an agent name a toolset that is not ready
		// (its deploy waits for it): draft is no problem there.
		var want []string
		for _, line := range strings.SplitAfter(localOut, "\n") {
			if !strings.Contains(line, `package "draft" is not ready`) {
				want = append(want, line)
			}
		}
		assert.Equal(t, strings.Join(want, ""), stdout)
		assert.Equal(t, "toolset agent: "+bad+": 2 problems\n", stderr)
	})
	t.Run("ok stores nothing", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, bin, "agent", "check", good, "--platform", hs.URL+"/", "--token-file", tokenFile)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "ok\n", stdout)
		assert.Contains(t, stderr, good+`:3:5: note: local toolset "orders" is registered by the program that runs the agent; left out here`)
		status, body := get("/api/v1/platform/agents/helpdesk")
		assert.Equal(t, http.StatusNotFound, status, body)
		status, body = get("/api/v1/platform/toolsets/finance")
		assert.Equal(t, http.StatusOK, status, body)
		assert.Contains(t, body, `"usedBy":[]`)
	})
	t.Run("token from the environment", func(t *testing.T) {
		t.Setenv(platform.TokenEnv, token)
		code, stdout, stderr := runBinary(t, bin, "agent", "check", good, "--platform", hs.URL)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "ok\n", stdout)
	})
	t.Run("no token", func(t *testing.T) {
		t.Setenv(platform.TokenEnv, "")
		code, stdout, stderr := runBinary(t, bin, "agent", "check", good, "--platform", hs.URL)
		assert.Equal(t, 1, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "\ntoolset agent: the platform at "+hs.URL+" requires a bearer token: give --token-file FILE or set $TOOLSET_PLATFORM_TOKEN\n")
	})
	t.Run("wrong token", func(t *testing.T) {
		other := writeFile(t, dir, "other-token", "another-token-0123456789abcdef")
		code, stdout, stderr := runBinary(t, bin, "agent", "check", good, "--platform", hs.URL, "--token-file", other)
		assert.Equal(t, 1, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "refused the bearer token (401 Unauthorized)")
		assert.NotContains(t, stderr, "another-token")
	})
	t.Run("a token that is not one", func(t *testing.T) {
		short := writeFile(t, dir, "short-token", "short")
		code, _, stderr := runBinary(t, bin, "agent", "check", good, "--platform", hs.URL, "--token-file", short)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "use at least 16")
	})
}

// The answers of what is not a platform, or not one that checks agents,
// are errors that show a bounded, printable part of them; a redirect is
// not followed with the token.
func TestAgentCheckOnPlatformUnexpectedAnswers(t *testing.T) {
	dir := t.TempDir()
	bin := cliBinary(t)
	good := writeFile(t, dir, "helpdesk.yaml", "name: helpdesk\ntoolsets:\n  - package: finance\n")
	t.Setenv(platform.TokenEnv, "cli-check-token-0123456789abcdef")

	check := func(t *testing.T, url string) (string, string) {
		t.Helper()
		code, stdout, stderr := runBinary(t, bin, "agent", "check", good, "--platform", url)
		assert.Equal(t, 1, code, "stdout %q, stderr %q", stdout, stderr)
		return stdout, stderr
	}

	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		ln.Close()
		_, stderr := check(t, "http://"+addr)
		assert.Contains(t, stderr, "toolset agent: the platform at http://"+addr+" cannot be reached: ")
		assert.Contains(t, stderr, "connection refused")
	})
	t.Run("a hostile web page", func(t *testing.T) {
		page := "<html>\x1b]0;owned\x07\x1b[2J" + strings.Repeat("<p>ok</p>\n", 10000)
		srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, page)
		})
		stdout, stderr := check(t, srv.URL)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "answered 200 OK, which is not a platform's answer (is it a toolset platform?): <html>\\x1b]0;owned\\x07\\x1b[2J<p>ok</p> <p>ok</p>")
		assert.NotContains(t, stderr, "\x1b")
		assert.Less(t, len(stderr), 600, stderr)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
	})
	t.Run("an endless answer", func(t *testing.T) {
		srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			chunk := []byte(strings.Repeat("x", 64<<10))
			for range 200 { // 12.5 MiB
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})
		_, stderr := check(t, srv.URL)
		assert.Contains(t, stderr, "answered 422 Unprocessable Entity with more than 8388608 bytes")
	})
	t.Run("an error of the platform", func(t *testing.T) {
		srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			platform.WriteError(w, http.StatusServiceUnavailable, "Unavailable", "the store is closed\x1b[31m: "+strings.Repeat("z", 1000))
		})
		_, stderr := check(t, srv.URL)
		assert.Contains(t, stderr, "answered 503 Service Unavailable: Unavailable: the store is closed\\x1b[31m: zzz")
		assert.Contains(t, stderr, "... (")
		assert.NotContains(t, stderr, "\x1b")
	})
	t.Run("a platform without the check", func(t *testing.T) {
		srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			platform.WriteError(w, http.StatusNotFound, "NotFound", "no such route: "+r.URL.Path)
		})
		_, stderr := check(t, srv.URL+"/base")
		assert.Contains(t, stderr, `answered 404 Not Found: NotFound: no such route: /base/api/v1/platform/agents/helpdesk/check`)
	})
	t.Run("a 200 that is not the agent", func(t *testing.T) {
		srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"name": "other", "packages": [], "source": ""}`)
		})
		_, stderr := check(t, srv.URL)
		assert.Contains(t, stderr, "answered 200 OK, which is not a platform's answer")
	})
	t.Run("a 422 without problems", func(t *testing.T) {
		srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			platform.WriteError(w, http.StatusUnprocessableEntity, "InvalidAgent", "the agent file is invalid")
		})
		_, stderr := check(t, srv.URL)
		assert.Contains(t, stderr, "answered 422 Unprocessable Entity: InvalidAgent: the agent file is invalid")
	})
	t.Run("a redirect is not followed", func(t *testing.T) {
		elsewhere, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
		srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+"/steal", http.StatusTemporaryRedirect)
		})
		_, stderr := check(t, srv.URL)
		assert.Contains(t, stderr, "answered 307 Temporary Redirect")
		assert.Zero(t, hits.Load(), "the redirect was followed")
	})
	t.Run("a file that does not parse is not sent", func(t *testing.T) {
		srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
		broken := writeFile(t, dir, "broken.yaml", "name: broken\ntoolsets:\n  - prefix: x\n")
		code, stdout, stderr := runBinary(t, bin, "agent", "check", broken, "--platform", srv.URL)
		assert.Equal(t, 1, code)
		assert.Contains(t, stdout, broken+":3:5: ")
		assert.Contains(t, stderr, "toolset agent: "+broken+": 1 problem\n")
		noName := writeFile(t, dir, "spaced.yaml", "name: help desk\ntoolsets: []\n")
		code, _, stderr = runBinary(t, bin, "agent", "check", noName, "--platform", srv.URL)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, `the agent's name "help desk" cannot name an agent on the platform`)
		assert.Zero(t, hits.Load(), "the platform was contacted")
	})
	t.Run("a slow platform is cut off with the command", func(t *testing.T) {
		arrived, release := make(chan struct{}, 1), make(chan struct{})
		srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			arrived <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		defer close(release)
		var stderr strings.Builder
		cmd := exec.Command(bin, "agent", "check", good, "--platform", srv.URL)
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-arrived:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatal("the check never reached the platform")
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		select {
		case err := <-done:
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, 1, ee.ExitCode(), "a clean exit, not death by the signal: %s", stderr.String())
			assert.Contains(t, stderr.String(), "toolset agent: checking on the platform at "+srv.URL+": interrupt signal received\n")
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatal("the command did not stop on SIGINT while waiting for the platform")
		}
	})
}

func TestAgentCheckPlatformUsage(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "a.yaml", "name: a\ntoolsets: []\n")
	for _, args := range [][]string{
		{"--platform", "http://127.0.0.1:1", "--store", dir},
		{"--token-file", filepath.Join(dir, "token")},
		{"--platform", "ftp://127.0.0.1:1"},
		{"--platform", "127.0.0.1:8080"},
		{"--platform", "http://"},
		{"--platform", "http://user:pw@127.0.0.1:1"},
		{"--platform", "http://127.0.0.1:1?token=x"},
		{"--platform", "http://127.0.0.1:1#x"},
	} {
		code, stdout, stderr := runCLI(append([]string{"agent", "check", good}, args...)...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		assert.Empty(t, stdout, "%v", args)
	}
	code, _, stderr := runCLI("agent", "check", good, "--platform", "http://127.0.0.1:1", "--store", dir)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--platform and --store together: choose one")
	code, stdout, _ := runCLI("--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "agent check FILE [--store DIR | --platform URL [--token-file FILE]]")
}
