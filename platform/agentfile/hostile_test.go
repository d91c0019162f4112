package agentfile_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform/agentfile"
)

// TestParseAndCheckStartNoProcessAndOpenNoConnection parses and checks
// an uploaded document whose MCP entries would run a command and reach a
// server: a platform does both on documents from its users, so neither
// may run the command nor connect. Resolving it (which only the
// deployer's agent process does) and using the toolsets does both.
func TestParseAndCheckStartNoProcessAndOpenNoConnection(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	file := "name: evil\ntoolsets:\n" +
		"  - mcp: {command: [sh, -c, 'touch " + marker + "']}\n" +
		"  - mcp: {url: '" + srv.URL + "/mcp'}\n" +
		"  - package: finance\n"

	s := openStore(t)
	upload(t, s, "finance", demoPackage(t, nil))
	f, err := agentfile.Parse([]byte(file), "evil.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := agentfile.Check(context.Background(), f, &agentfile.Options{Store: s, Local: map[string]toolset.Toolset{}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // what a started process or a dial would need to show
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the command ran during Parse or Check: %v", err)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("%d connections during Parse or Check", n)
	}

	a, err := f.Resolve(context.Background(), &agentfile.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := toolset.BuildTools(context.Background(), a.Name, a.Toolsets...); err == nil {
		t.Fatal("BuildTools succeeded with servers that are not MCP servers")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("using the resolved agent did not run its command: %v", err)
	}
	if conns.Load() == 0 {
		t.Error("using the resolved agent did not connect to its server")
	}
}
