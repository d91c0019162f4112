package platform

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset/toolpkg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A restart loses nothing: records, versions, configuration, agents and
// statuses are kept, and a toolset pending when the server stopped is
// discovered again when it starts.
func TestRestartDuringDiscoveryLosesNothing(t *testing.T) {
	dir := storeDir(t)
	e := openEnv(t, dir, nil)
	e.upload("kept", goodPackage(t, "greet", "Greets someone.", 0))
	require.Equal(t, "ready", e.settle("kept")["discoveryStatus"])
	r := e.do("PATCH", "/api/v1/platform/toolsets/kept/config", []byte(`{"greeting":"hi","api_key":"s3cr3t"}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "kept")))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = e.do("POST", "/api/v1/platform/toolsets", []byte(`{"name":"fresh"}`))
	require.Equal(t, http.StatusCreated, r.status)
	before := e.do("GET", "/api/v1/platform/toolsets/kept", nil).json(t)

	// A discovery under way when everything stops.
	g := newGate(t)
	m := e.upload("slow", gatedPackage(t, "slowtool", "Takes its time.", g))
	require.Equal(t, "pending", m["discoveryStatus"])
	e.close()
	g.open(t)

	e = openEnv(t, dir, nil)
	after := e.do("GET", "/api/v1/platform/toolsets/kept", nil).json(t)
	assert.Equal(t, before, after, "the ready toolset is as it was")
	assert.Equal(t, map[string]any{"greeting": "hi", "api_key": "<REDACTED>"}, after["config"])
	assert.Equal(t, []any{"support"}, after["usedBy"])
	assert.Equal(t, "created", e.do("GET", "/api/v1/platform/toolsets/fresh", nil).json(t)["discoveryStatus"])
	r = e.do("GET", "/api/v1/platform/agents/support", nil)
	require.Equal(t, http.StatusOK, r.status)

	m = e.settle("slow")
	require.Equal(t, "ready", m["discoveryStatus"], "discovered again: %v", m["discoveryErrors"])
	assert.Equal(t, 1.0, m["version"])
	assert.Equal(t, "slowtool", m["tools"].([]any)[0].(map[string]any)["toolName"])
}

// 200 concurrent reads while 5 uploads run: every answer is whole and
// valid, and every upload ends ready.
func TestConcurrentReadsDuringUploads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{MaxConcurrentUploads: 2})
	e.upload("base", goodPackage(t, "greet", "x", 0))
	require.Equal(t, "ready", e.settle("base")["discoveryStatus"])

	const uploads, readers = 5, 200
	var wg sync.WaitGroup
	errs := make(chan error, uploads+readers)
	pkgs := make([][]byte, uploads)
	for i := range pkgs {
		pkgs[i] = goodPackage(t, "tool", fmt.Sprintf("Tool %d", i), 200*time.Millisecond)
	}
	for i := range uploads {
		wg.Go(func() {
			name := fmt.Sprintf("up%d", i)
			data := pkgs[i]
			req, _ := http.NewRequest("PUT", e.hs.URL+"/api/v1/platform/toolsets/"+name+"/package", bytes.NewReader(data))
			req.Header.Set("Authorization", "Bearer "+testToken)
			res, err := e.client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			var m map[string]any
			if err := json.NewDecoder(res.Body).Decode(&m); err != nil || res.StatusCode != http.StatusAccepted {
				errs <- fmt.Errorf("upload %s: status %d, %v, %v", name, res.StatusCode, err, m)
			}
		})
	}
	paths := []string{"/api/v1/platform/toolsets", "/api/v1/platform/toolsets/base", "/api/v1/platform/agents", "/api/v1/platform/toolsets/up0"}
	for i := range readers {
		wg.Go(func() {
			p := paths[i%len(paths)]
			req, _ := http.NewRequest("GET", e.hs.URL+p, nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			res, err := e.client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			var m map[string]any
			err = json.NewDecoder(res.Body).Decode(&m)
			switch {
			case err != nil:
				errs <- fmt.Errorf("GET %s: invalid JSON: %v", p, err)
			case res.StatusCode == http.StatusNotFound && p == "/api/v1/platform/toolsets/up0":
				// Not uploaded yet.
			case res.StatusCode != http.StatusOK:
				errs <- fmt.Errorf("GET %s: status %d: %v", p, res.StatusCode, m)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range uploads {
		m := e.settle(fmt.Sprintf("up%d", i))
		assert.Equal(t, "ready", m["discoveryStatus"], "%v", m["discoveryErrors"])
		assert.Equal(t, 1.0, m["toolCount"])
	}
	r := e.do("GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, float64(uploads+1), r.json(t)["meta"].(map[string]any)["total"], "nothing lost")
}

// Upload bodies are read MaxConcurrentUploads at a time: another waits
// for a slot, and Close ends the wait with 503 Unavailable.
func TestUploadsWaitForASlot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{MaxConcurrentUploads: 1})
	pkg := goodPackage(t, "greet", "x", 0)
	put := func(name string) <-chan int {
		done := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest("PUT", e.hs.URL+"/api/v1/platform/toolsets/"+name+"/package", bytes.NewReader(pkg))
			req.Header.Set("Authorization", "Bearer "+testToken)
			res, err := e.client.Do(req)
			if err != nil {
				done <- 0
				return
			}
			res.Body.Close()
			done <- res.StatusCode
		}()
		return done
	}
	e.srv.uploads <- struct{}{} // the one slot, taken
	done := put("first")
	select {
	case code := <-done:
		t.Fatalf("served without a slot: %d", code)
	case <-time.After(300 * time.Millisecond):
	}
	<-e.srv.uploads
	assert.Equal(t, http.StatusAccepted, <-done)
	e.settle("first")

	e.srv.uploads <- struct{}{}
	done = put("second")
	time.Sleep(100 * time.Millisecond) // let it reach the wait
	require.NoError(t, e.srv.Close())
	assert.Equal(t, http.StatusServiceUnavailable, <-done)
	<-e.srv.uploads
}

// An agent PUT while a re-upload's body is still arriving cannot slip in
// between the upload's in-use check and the package's replacement: one
// of the two is refused.
func TestAgentRacingAnUploadCannotBypassPackageInUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("greeter", goodPackage(t, "greet", "v1", 0))
	require.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])

	pkg := goodPackage(t, "greet", "v2", 0)
	conn, err := net.Dial("tcp", e.hs.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
	bw := bufio.NewWriter(conn)
	fmt.Fprintf(bw, "PUT /api/v1/platform/toolsets/greeter/package HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", testToken, len(pkg))
	bw.Write(pkg[:len(pkg)/2])
	require.NoError(t, bw.Flush())
	time.Sleep(200 * time.Millisecond) // the upload is past its check, spooling

	agent := e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "greeter")))

	bw.Write(pkg[len(pkg)/2:])
	require.NoError(t, bw.Flush())
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body := readBody(t, res)
	if agent.status == http.StatusCreated {
		assert.Equal(t, http.StatusConflict, res.StatusCode, "the agent came first, yet the upload went through: %s", body)
	} else {
		assert.Equal(t, http.StatusConflict, agent.status, "%s", agent.body)
		assert.Equal(t, "Conflict", agent.errCode(t))
		assert.True(t, strings.Contains(string(agent.body), "greeter"), "%s", agent.body)
		assert.Equal(t, http.StatusAccepted, res.StatusCode, "%s", body)
	}
	e.settle("greeter")
}

// An upload whose client stops sending mid-body is cut off after
// BodyIdleTimeout, even on an http.Server without timeouts: its slot is
// freed for the next upload instead of being held for ever.
func TestStalledUploadReleasesItsSlot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{MaxConcurrentUploads: 1, BodyIdleTimeout: 300 * time.Millisecond})
	pkg := goodPackage(t, "greet", "x", 0)
	conn, err := net.Dial("tcp", e.hs.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
	fmt.Fprintf(conn, "PUT /api/v1/platform/toolsets/stalled/package HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", testToken, len(pkg))
	_, err = conn.Write(pkg[:len(pkg)/2])
	require.NoError(t, err)
	// ...and nothing more: the answer comes all the same.
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body := readBody(t, res)
	assert.Equal(t, http.StatusRequestTimeout, res.StatusCode, "%s", body)
	assert.Contains(t, string(body), "RequestTimeout")

	r := e.do("PUT", "/api/v1/platform/toolsets/next/package", pkg)
	assert.Equal(t, http.StatusAccepted, r.status, "the slot is free: %s", r.body)
	e.settle("next")
	_, err = e.store.Info("stalled")
	assert.Error(t, err, "nothing stored of the stalled upload")

	// A JSON body and an agent file that stall are cut off too, and so
	// is the login form, which needs no token.
	for _, head := range []string{
		"POST /api/v1/platform/toolsets HTTP/1.1\r\nAuthorization: Bearer " + testToken + "\r\n",
		"PUT /api/v1/platform/agents/a HTTP/1.1\r\nAuthorization: Bearer " + testToken + "\r\n",
		"POST /login HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n",
	} {
		conn, err := net.Dial("tcp", e.hs.Listener.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
		fmt.Fprintf(conn, "%sHost: x\r\nContent-Length: 100\r\n\r\n{", head)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, "%s", head)
		res.Body.Close()
		assert.Contains(t, []int{http.StatusRequestTimeout, http.StatusBadRequest}, res.StatusCode, "%s", head)
	}
}

// A client that hangs up mid-body leaves no spooled file behind, and a
// spooled file a crash left is gone when the next server starts.
func TestSpooledUploadsAreCleanedUp(t *testing.T) {
	dir := storeDir(t)
	e := openEnv(t, dir, nil)
	tmp := filepath.Join(dir, ".platform", "tmp")
	pkg := goodPackage(t, "greet", "x", 0)
	conn, err := net.Dial("tcp", e.hs.Listener.Addr().String())
	require.NoError(t, err)
	fmt.Fprintf(conn, "PUT /api/v1/platform/toolsets/gone/package HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", testToken, len(pkg))
	_, err = conn.Write(pkg[:len(pkg)/2])
	require.NoError(t, err)
	require.Eventually(t, func() bool { des, _ := os.ReadDir(tmp); return len(des) == 1 }, 5*time.Second, 10*time.Millisecond, "the body is being spooled")
	conn.Close()
	require.Eventually(t, func() bool { des, _ := os.ReadDir(tmp); return len(des) == 0 }, 5*time.Second, 10*time.Millisecond, "the spooled part is deleted")

	e.close()
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "upload-123.zip"), pkg, 0o600))
	openEnv(t, dir, nil)
	des, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, des)
}

// An upload waiting for the previous upload's discovery when the server
// closes is told the server is shutting down (503), not that the store
// failed (500, logged as an error).
func TestUploadWaitingWhenTheServerClosesIs503(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	g := newGate(t)
	e.upload("slow", gatedPackage(t, "greet", "x", g))
	done := make(chan response, 1)
	go func() { done <- e.do("PUT", "/api/v1/platform/toolsets/slow/package", goodPackage(t, "greet", "y", 0)) }()
	time.Sleep(300 * time.Millisecond) // let it reach the store's wait
	require.NoError(t, e.srv.Close())
	r := <-done
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	assert.Equal(t, "Unavailable", r.errCode(t))
	assert.NotContains(t, e.logs.String(), "level=ERROR")
	g.open(t)
	e.settle("slow")
}

// A client that trickles its body, never idle for BodyIdleTimeout, is
// still cut off by the http.Server's ReadTimeout: the deadline set per
// read never goes past it.
func TestTrickledBodyIsCutOffByTheReadTimeout(t *testing.T) {
	store, err := toolpkg.Open(storeDir(t), &toolpkg.Options{Sandbox: toolpkg.ModeDirect, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer store.Close()
	srv, err := New(store, &Options{Token: testToken, BodyIdleTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer srv.Close()
	hs := httptest.NewUnstartedServer(srv)
	hs.Config.ReadTimeout = time.Second
	hs.Start()
	defer hs.Close()

	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	fmt.Fprintf(conn, "PUT /api/v1/platform/toolsets/trickle/package HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100000\r\n\r\n", testToken)
	start := time.Now()
	answered := make(chan int, 1)
	go func() {
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- 0
			return
		}
		res.Body.Close()
		answered <- res.StatusCode
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case code := <-answered:
			assert.Less(t, time.Since(start), 3*time.Second, "cut off near the ReadTimeout")
			assert.Contains(t, []int{http.StatusRequestTimeout, 0}, code)
			return
		case <-tick.C:
			if _, err := conn.Write([]byte("x")); err != nil && time.Since(start) > 5*time.Second {
				t.Fatal("no answer")
			}
			require.Less(t, time.Since(start), 6*time.Second, "the trickle was never cut off")
		}
	}
}
