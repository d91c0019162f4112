// Command platform runs the toolset platform on a loopback port and uses it
// the way a team's CI would, with plain HTTP and the bearer token: it
// creates a toolset, uploads the weather package of examples/package,
// configures it and declares an agent that uses it. The same program then
// loads that agent file against the platform's store and runs its turns;
// a re-upload serves from the agent's next turn, with no change to the
// agent.
//
//	go run ./examples/platform
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// agentYAML is the agent file the team keeps beside its code, in SAM's
// shape: the weather package, with the forecast in Fahrenheit for this
// agent.
const agentYAML = `kind: agent
name: forecaster
spec:
  systemPrompt: Tell travellers what weather to pack for.
  toolsets: [weather]
  toolsetConfigs:
    - toolset: weather
      configValues:
        forecast: {units: imperial}
`

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run shows the demo on w.
func run(w io.Writer) error {
	ctx := context.Background()

	section(w, "1. Package weather/ and start the platform on a loopback port")
	var zip bytes.Buffer
	if _, err := toolpkg.Pack(ctx, sourceDir(), &zip, nil); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "platform-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.DiscardHandler)
	store, err := toolpkg.Open(dir, &toolpkg.Options{Logger: quiet})
	if err != nil {
		return err
	}
	defer store.Close()
	token := rand.Text()
	srv, err := platform.New(store, &platform.Options{Token: token, Logger: quiet})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Shutdown(ctx)
	fmt.Fprintf(w, "package: %d bytes\nopen http://%s/ and log in with the token\n", zip.Len(), ln.Addr())
	ci := &client{base: "http://" + ln.Addr().String() + "/api/v1/platform", token: token, w: w}
	defer ci.http.CloseIdleConnections()

	section(w, "2. CI creates the toolset, uploads the package, waits for discovery")
	var ts platform.ToolsetDetail
	if err := ci.do("POST", "/toolsets", `{"name": "weather"}`, nil); err != nil {
		return err
	}
	if err := ci.do("PUT", "/toolsets/weather/package", zip.String(), &ts); err != nil {
		return err
	}
	fmt.Fprintf(w, "  version %d: %s\n", ts.Version, ts.DiscoveryStatus)
	if ts, err = ci.waitReady("weather"); err != nil {
		return err
	}
	for _, t := range ts.Tools {
		fmt.Fprintf(w, "  tool %s: %s\n", t.ToolName, t.Description)
	}

	section(w, "3. CI configures it: the secret never comes back")
	var cfg platform.ConfigBody
	if err := ci.do("PATCH", "/toolsets/weather/config", `{"api_key": "sk-example", "units": "metric"}`, &cfg); err != nil {
		return err
	}
	fmt.Fprintf(w, "  api_key=%v units=%v\n", cfg.Config["api_key"], cfg.Config["units"])

	section(w, "4. CI declares the agent; the platform checks it against the store")
	if err := ci.do("PUT", "/agents/forecaster", agentYAML, nil); err != nil {
		return err
	}

	section(w, "5. The program loads the same agent file and runs a turn")
	// The platform's configuration gives the api_key, the agent file the
	// units.
	f, err := agentfile.Parse([]byte(agentYAML), "forecaster.yaml")
	if err != nil {
		return err
	}
	agent, err := f.Resolve(ctx, &agentfile.Options{Store: store})
	if err != nil {
		return err
	}
	defer agent.Close()
	trip := toolset.NewRun("trip-1")
	defer trip.End()
	if err := turn(trip.Turn(ctx), w, agent); err != nil {
		return err
	}

	section(w, "6. CI uploads again: the agent uses the package, so it must force")
	err = ci.do("PUT", "/toolsets/weather/package", zip.String(), nil)
	if e := (*apiError)(nil); !errors.As(err, &e) || e.Code != "PackageInUse" {
		return fmt.Errorf("an upload of a package in use: want 409 PackageInUse, got %v", err)
	}
	fmt.Fprintf(w, "  %v\n", err)
	if err := ci.do("PUT", "/toolsets/weather/package?force=true", zip.String(), &ts); err != nil {
		return err
	}
	fmt.Fprintf(w, "  version %d: %s\n", ts.Version, ts.DiscoveryStatus)
	if _, err := ci.waitReady("weather"); err != nil {
		return err
	}

	section(w, "7. The agent's next turn, unchanged, gets the new version")
	return turn(trip.Turn(ctx), w, agent)
}

// turn builds the agent's tools for one turn and calls the forecast the
// way the model would.
func turn(ctx context.Context, w io.Writer, agent *agentfile.Agent) error {
	tools, err := toolset.BuildTools(ctx, agent.Name, agent.Toolsets...)
	if err != nil {
		return err
	}
	for t := range tools.All() {
		fmt.Fprintf(w, "tool %s of package version %s\n", t.Name, t.Metadata["toolpkg.version"])
	}
	args := `{"city": "Paris", "days": 2}`
	fmt.Fprintf(w, "call weather__forecast %s\n", args)
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "weather__forecast", Args: []byte(args)})
	if err != nil {
		return err
	}
	text, err := toolset.ResultText(res)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "result: %s\n", text)
	return nil
}

// client calls the platform's API as a CI job does, and shows on w the
// answer to each request but the GETs.
type client struct {
	base, token string
	w           io.Writer
	http        http.Client
}

// apiError is an answer of the API other than 2xx.
type apiError struct{ platform.ErrorDetail }

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// do sends body (JSON, YAML or a zip) with the token and decodes the
// answer into out unless out is nil.
func (c *client) do(method, path, body string, out any) error {
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if method != "GET" {
		fmt.Fprintf(c.w, "%s %s: %s\n", method, path, res.Status)
	}
	dec := json.NewDecoder(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode/100 != 2 {
		var body platform.ErrorBody
		if err := dec.Decode(&body); err != nil {
			return fmt.Errorf("%s %s: %s", method, path, res.Status)
		}
		return &apiError{body.Error}
	}
	if out == nil {
		return nil
	}
	return dec.Decode(out)
}

// waitReady polls the toolset until its discovery settles.
func (c *client) waitReady(name string) (platform.ToolsetDetail, error) {
	var ts platform.ToolsetDetail
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := c.do("GET", "/toolsets/"+name, "", &ts); err != nil {
			return ts, err
		}
		switch ts.DiscoveryStatus {
		case toolpkg.StatusReady:
			fmt.Fprintf(c.w, "  toolset %s: %s, serving version %d, used by [%s]\n",
				name, ts.DiscoveryStatus, ts.ServingVersion, strings.Join(ts.UsedBy, " "))
			return ts, nil
		case toolpkg.StatusFailed:
			return ts, fmt.Errorf("discovery of %s failed: %s", name, strings.Join(ts.DiscoveryErrors, "; "))
		}
	}
	return ts, fmt.Errorf("discovery of %s did not finish within a minute", name)
}

// sourceDir finds examples/package/weather from the repository's root or
// from this example's folder.
func sourceDir() string {
	for _, dir := range []string{"examples/package/weather", "../package/weather"} {
		if _, err := os.Stat(filepath.Join(dir, "manifest.yaml")); err == nil {
			return dir
		}
	}
	log.Fatal("cannot find examples/package/weather: run from the repository's root")
	return ""
}

func section(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n%s\n", title, strings.Repeat("-", len(title)))
}
