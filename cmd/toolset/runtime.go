package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/gotoolset/toolset/mesh"
	"github.com/gotoolset/toolset/toolpkg"
)

// cmdRuntime runs a tool runtime on the broker until SIGINT or SIGTERM:
// it syncs the packages the platform publishes into its own store, and
// runs the calls agents send. On a signal it stops taking calls, gives
// those running --shutdown-timeout, then cancels them (their tools get
// SIGTERM) and closes its store.
func cmdRuntime(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("runtime", flag.ContinueOnError)
	bf := addBrokerFlags(fs, "the broker's URL, nats://host:port (required)")
	dir := fs.String("dir", "", "the runtime's own directory: its store and sync state (default: under the user's cache, one per broker)")
	maxCalls := fs.Int("max-calls", 0, "how many calls run at once; others wait in the broker's queue (default: 4 per CPU)")
	mode := fs.String("sandbox", "auto", "the sandbox mode tools run in")
	pythonFlag(fs)
	id := fs.String("id", "", "the runtime's name in its reports (default: the host name and random hex)")
	shutdown := fs.Duration("shutdown-timeout", runtimeShutdownTimeout, "how long calls in flight may go on after SIGINT or SIGTERM")
	if _, err := parse(fs, args, 0, "no argument"); err != nil {
		return err
	}
	if bf.url == "" {
		return usagef("--broker URL is required")
	}
	if err := bf.check(); err != nil {
		return err
	}
	if *maxCalls < 0 {
		return usagef("--max-calls must be positive, got %d", *maxCalls)
	}
	if *shutdown <= 0 {
		return usagef("--shutdown-timeout must be positive, got %v", *shutdown)
	}
	m, err := toolpkg.ParseMode(*mode)
	if err != nil {
		return usagef("%v", err)
	}
	if *dir == "" {
		if *dir, err = defaultRuntimeDir(bf.url, bf.namespace); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	nc, err := bf.connect(ctx, "toolset-runtime", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	rt, err := mesh.NewRuntime(ctx, nc, &mesh.RuntimeOptions{Namespace: bf.namespace, ID: *id, Dir: *dir, MaxCalls: *maxCalls,
		Store: &toolpkg.Options{Sandbox: m, Logger: logger}, Logger: logger})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while syncing the packages: %w", err)
		}
		return err
	}
	logger.Info("toolset runtime: serving", "runtime", rt.ID(), "broker", nc.ConnectedUrlRedacted(), "dir", *dir, "sandbox", string(rt.Store().Sandbox()))
	<-ctx.Done()
	logger.Info("toolset runtime: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), *shutdown)
	defer cancel()
	err = rt.Close(sctx)
	if derr := nc.Drain(); derr == nil {
		waitClosed(nc)
	}
	if err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	logger.Info("toolset runtime: stopped")
	return nil
}
