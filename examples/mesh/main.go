// Command mesh runs the three parts of a deployment that meet only on a
// broker, in one program: an embedded NATS broker, the platform's side
// (it publishes a package to the broker's object store), two tool
// runtimes (each syncs the package into its own store and serves its
// tools), and an agent whose tools run on whichever runtime takes the
// call. One runtime then stops, and the calls go on on the other.
//
//	go run ./examples/mesh
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mesh"
	"github.com/gotoolset/toolset/toolpkg"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run shows the demo on w.
func run(w io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	section(w, "1. Package notes/ and start the broker")
	var zip bytes.Buffer
	if _, err := toolpkg.Pack(ctx, sourceDir(), &zip, nil); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "mesh-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Tools may run as another user than this program's: they must reach
	// their runtime's directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	broker, err := mesh.StartServer(&mesh.ServerOptions{Dir: filepath.Join(dir, "broker")})
	if err != nil {
		return err
	}
	defer broker.Close()
	fmt.Fprintln(w, "broker: embedded, JetStream on disk")

	section(w, "2. The platform publishes version 1 to the object store")
	platformConn, err := broker.InProcessConn(ctx)
	if err != nil {
		return err
	}
	defer platformConn.Close()
	packages, err := mesh.OpenPackages(ctx, platformConn, "")
	if err != nil {
		return err
	}
	reports := make(chan mesh.SyncReport, 16)
	if err := packages.WatchReports(ctx, func(r mesh.SyncReport) { reports <- r }); err != nil {
		return err
	}
	if err := packages.Publish(ctx, "notes", 1, bytes.NewReader(zip.Bytes()), nil); err != nil {
		return err
	}
	fmt.Fprintln(w, "published notes version 1")

	section(w, "3. Two runtimes sync it and report their tools")
	runtimes := map[string]*mesh.Runtime{}
	for _, id := range []string{"runtime-a", "runtime-b"} {
		nc, err := broker.InProcessConn(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		rt, err := mesh.NewRuntime(ctx, nc, &mesh.RuntimeOptions{
			ID: id, Dir: filepath.Join(dir, id), Heartbeat: 200 * time.Millisecond, Logger: quiet,
			Store: &toolpkg.Options{Logger: quiet},
		})
		if err != nil {
			return err
		}
		runtimes[id] = rt
		defer rt.Close(context.Background())
	}
	// The reports come in any order: print them sorted.
	got := map[string]mesh.SyncReport{}
	for len(got) < len(runtimes) {
		select {
		case r := <-reports:
			got[r.Runtime] = r
		case <-ctx.Done():
			return fmt.Errorf("sync reports: %w", ctx.Err())
		}
	}
	for _, id := range []string{"runtime-a", "runtime-b"} {
		r := got[id]
		fmt.Fprintf(w, "%s: %s version %d %s, tools %s\n", id, r.Toolset, r.Version, r.Status, strings.Join(r.Tools, ", "))
	}

	section(w, "4. An agent lists the tools the runtimes announce")
	agentConn, err := broker.InProcessConn(ctx)
	if err != nil {
		return err
	}
	defer agentConn.Close()
	client, err := mesh.NewClient(ctx, agentConn, &mesh.ClientOptions{Agent: "writer", Logger: quiet})
	if err != nil {
		return err
	}
	defer client.Close()
	info, err := client.Info("notes")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "notes: %s, version %d\n", info.Status, info.Version)
	served, stop, err := watchServed(agentConn, "writer")
	if err != nil {
		return err
	}
	defer stop()
	notes := client.Toolset("notes", nil)

	section(w, "5. The model's calls run on the runtimes, with their progress")
	texts := []string{"one line of text", "two lines\nof text", "a third\nand last\ncall here"}
	for i, text := range texts {
		if err := turn(ctx, w, notes, fmt.Sprintf("turn-%d", i+1), text, nil); err != nil {
			return err
		}
	}

	section(w, "6. runtime-a stops; the calls go on on runtime-b")
	if err := runtimes["runtime-a"].Close(ctx); err != nil {
		return err
	}
	fmt.Fprintln(w, "runtime-a stopped")
	for i, text := range texts {
		if err := turn(ctx, w, notes, fmt.Sprintf("after-%d", i+1), text, served); err != nil {
			return err
		}
	}
	return nil
}

// turn builds the agent's tools for one turn of a run and calls
// notes__words with text, printing the progress and the result; with
// served, it also says which runtime took the call.
func turn(ctx context.Context, w io.Writer, notes toolset.Toolset, runID, text string, served *servedBy) error {
	run := toolset.NewRun(runID)
	defer run.End()
	ctx = run.Turn(ctx)
	tools, err := toolset.BuildTools(ctx, "writer", notes)
	if err != nil {
		return err
	}
	ctx = toolset.WithProgress(ctx, func(p toolset.Progress) {
		fmt.Fprintf(w, "  progress: %s\n", p.Message)
	})
	args := fmt.Sprintf(`{"text": %q}`, text)
	fmt.Fprintf(w, "%s: call notes__words %s\n", runID, args)
	res, err := tools.Execute(ctx, toolset.ToolCall{ID: runID, Name: "notes__words", Args: []byte(args)})
	if err != nil {
		return err
	}
	out, err := toolset.ResultText(res)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: %s\n", out)
	if served != nil {
		fmt.Fprintf(w, "  served by %s\n", served.of(runID))
	}
	return nil
}

// servedBy records, from the status notifications the runtimes send the
// agent, which runtime took each call (by task, the run's ID).
type servedBy struct {
	mu     sync.Mutex
	byTask map[string]string
}

// of returns the runtime that took task's call. Its status and the
// client's answer travel on different subscriptions: it waits a little for
// the status.
func (s *servedBy) of(task string) string {
	for range 100 {
		s.mu.Lock()
		r := s.byTask[task]
		s.mu.Unlock()
		if r != "" {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "an unknown runtime"
}

// watchServed subscribes to agent's status subjects on nc, beside the
// client, and records who took each call.
func watchServed(nc *nats.Conn, agent string) (*servedBy, func(), error) {
	subj, err := mesh.NewSubjects("")
	if err != nil {
		return nil, nil, err
	}
	all, err := subj.StatusAll(agent)
	if err != nil {
		return nil, nil, err
	}
	s := &servedBy{byTask: map[string]string{}}
	sub, err := nc.Subscribe(all, func(m *nats.Msg) {
		req, err := mesh.DecodeRequest(m.Data, mesh.MethodStatus, false)
		if err != nil {
			return
		}
		var p mesh.StatusParams
		// Every status a runtime sends names it: its progress reports,
		// and its acceptance of a call that runs a while.
		if mesh.Decode(req.Params, 0, &p) != nil || p.Runtime == "" {
			return
		}
		s.mu.Lock()
		s.byTask[p.TaskID] = p.Runtime
		s.mu.Unlock()
	})
	if err != nil {
		return nil, nil, err
	}
	// The subscription is up before the first call is sent.
	if err := nc.Flush(); err != nil {
		return nil, nil, err
	}
	return s, func() { _ = sub.Unsubscribe() }, nil
}

// sourceDir finds examples/mesh/notes from the repository's root or from
// this example's folder.
func sourceDir() string {
	for _, dir := range []string{"examples/mesh/notes", "mesh/notes", "notes"} {
		if _, err := os.Stat(filepath.Join(dir, "manifest.yaml")); err == nil {
			return dir
		}
	}
	log.Fatal("cannot find examples/mesh/notes: run from the repository's root")
	return ""
}

func section(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n%s\n", title, strings.Repeat("-", len(title)))
}
