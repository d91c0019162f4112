package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gotoolset/toolset/mesh"
	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/nats-io/nats.go"
)

// The platform's HTTP server timeouts. Uploads are the slow requests:
// ReadTimeout leaves a package of the default limit time to arrive over
// a modest link, and a client that stalls is cut off by it.
const (
	platformReadHeaderTimeout = 10 * time.Second
	platformReadTimeout       = 10 * time.Minute
	platformWriteTimeout      = 10 * time.Minute
	platformIdleTimeout       = 2 * time.Minute
	platformShutdownTimeout   = 30 * time.Second
)

// cmdPlatform serves the platform (package platform) until SIGINT or
// SIGTERM, then shuts down: requests in flight finish, the in-process
// runtime's calls finish (within its grace), the broker stops, then the
// store is closed (discovery in flight finishes, or is picked up at the
// next start). The platform hands its toolsets to the runtimes through
// the broker: its own embedded one, unless --broker names another.
func cmdPlatform(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "token" {
		return cmdPlatformToken(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("platform", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "the address to listen on")
	dir := fs.String("store", "", "the store's directory (required)")
	tokenFile := fs.String("token-file", "", "a file holding the bearer token (default: $"+platform.TokenEnv+")")
	insecure := fs.Bool("insecure-no-auth", false, "serve without authentication (local use only)")
	mode := fs.String("sandbox", "auto", "the sandbox mode tools run in")
	pythonFlag(fs)
	bf := addBrokerFlags(fs, "the broker's URL (nats://host:port): the runtimes and agents meet there (default: a broker of its own, embedded)")
	brokerListen := fs.String("broker-listen", "", "expose the embedded broker at ADDR (host:port) to runtimes and agents on other machines; a token is then required ($"+mesh.EnvBrokerToken+" or --broker-token-file)")
	noRuntime := fs.Bool("no-runtime", false, "run no runtime in this process: the tools run on runtimes elsewhere (toolset runtime)")
	maxCalls := fs.Int("max-calls", 0, "the in-process runtime's calls at once (default: 4 per CPU)")
	if _, err := parse(fs, args, 0, "no argument"); err != nil {
		return err
	}
	if *dir == "" {
		return usagef("--store DIR is required")
	}
	if err := bf.check(); err != nil {
		return err
	}
	if bf.url != "" && *brokerListen != "" {
		return usagef("--broker and --broker-listen together: --broker-listen exposes the embedded broker, which --broker replaces")
	}
	if *maxCalls < 0 || (*maxCalls > 0 && *noRuntime) {
		return usagef("--max-calls must be positive, and goes with the in-process runtime (not --no-runtime)")
	}
	m, err := toolpkg.ParseMode(*mode)
	if err != nil {
		return usagef("%v", err)
	}
	var token string
	switch {
	case *insecure && *tokenFile != "":
		return usagef("--insecure-no-auth and --token-file together: choose one")
	case !*insecure:
		if token, err = platform.LoadToken(*tokenFile); err != nil {
			return err
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	store, err := toolpkg.Open(*dir, &toolpkg.Options{Sandbox: m, Logger: logger})
	if err != nil {
		return err
	}
	defer store.Close()
	m2, err := startMesh(ctx, &meshSetup{flags: bf, listen: *brokerListen, insecure: *insecure, dir: store.Dir(), runtime: !*noRuntime, maxCalls: *maxCalls, sandbox: m, logger: logger})
	if err != nil {
		return err
	}
	defer m2.close()
	srv, err := platform.New(store, &platform.Options{Token: token, InsecureNoAuth: *insecure, Logger: logger, Distributor: distributor{m2.packages}})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: platformReadHeaderTimeout,
		ReadTimeout:       platformReadTimeout,
		WriteTimeout:      platformWriteTimeout,
		IdleTimeout:       platformIdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("toolset platform: listening", "url", "http://"+ln.Addr().String(), "store", store.Dir(), "sandbox", string(store.Sandbox()))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	logger.Info("toolset platform: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), platformShutdownTimeout)
	defer cancel()
	srv.Close()
	err = hs.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := m2.close(); err != nil {
		return err
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("closing the store: %w", err)
	}
	logger.Info("toolset platform: stopped")
	return nil
}

// meshSetup says what of the mesh "toolset platform" runs.
type meshSetup struct {
	flags    *brokerFlags
	listen   string // --broker-listen
	insecure bool   // --insecure-no-auth
	dir      string // the store's directory
	runtime  bool
	maxCalls int
	sandbox  toolpkg.Mode
	logger   *slog.Logger
}

// platformMesh is the platform's part of the mesh: the embedded broker
// (unless --broker), its connection, the packages, and the in-process
// runtime (unless --no-runtime).
type platformMesh struct {
	broker   *mesh.Server
	nc       *nats.Conn
	packages *mesh.Packages
	runtime  *mesh.Runtime
	logger   *slog.Logger
	closed   bool
}

// runtimeShutdownTimeout is how long the calls of a runtime may go on
// after SIGINT or SIGTERM before they are canceled.
const runtimeShutdownTimeout = 10 * time.Second

func startMesh(ctx context.Context, o *meshSetup) (_ *platformMesh, err error) {
	pm := &platformMesh{logger: o.logger}
	defer func() {
		if err != nil {
			pm.close()
		}
	}()
	// The platform's own directory holds the runtime's store, which the
	// user the tools run as (the sandbox's, when this runs as root) must
	// reach: others may search it, never list it; what is private inside
	// (the broker's data, agents, secrets, tokens) is 0700 of its own.
	base := filepath.Join(o.dir, ".platform")
	if err := os.MkdirAll(base, 0o711); err != nil {
		return nil, err
	}
	if err := os.Chmod(base, 0o711); err != nil {
		return nil, err
	}
	if o.flags.url == "" {
		// Unexposed, the broker has no listener: the platform and its
		// runtime reach it in process, and nothing else can.
		so := mesh.ServerOptions{Dir: filepath.Join(o.dir, ".platform", "broker"), Listen: o.listen, InProcessOnly: o.listen == ""}
		if o.listen != "" {
			co, err := o.flags.connOptions("", nil)
			if err != nil {
				return nil, err
			}
			if co.Token == "" && !o.insecure {
				return nil, usagef("--broker-listen exposes the broker, whose packages bucket holds every toolset's stored configuration, secrets included: give it a token ($%s or --broker-token-file), or --insecure-no-auth for local use", mesh.EnvBrokerToken)
			}
			so.Token, so.NoAuth = co.Token, co.Token == ""
		}
		if pm.broker, err = mesh.StartServer(&so); err != nil {
			return nil, err
		}
		if pm.nc, err = pm.broker.InProcessConn(ctx); err != nil {
			return nil, err
		}
		if o.listen != "" {
			o.logger.Info("toolset platform: broker listening", "broker", pm.broker.ClientURL())
		}
	} else {
		if pm.nc, err = o.flags.connect(ctx, "toolset-platform", o.logger); err != nil {
			return nil, err
		}
		o.logger.Info("toolset platform: connected to the broker", "broker", pm.nc.ConnectedUrlRedacted())
	}
	if pm.packages, err = mesh.OpenPackages(ctx, pm.nc, o.flags.namespace); err != nil {
		return nil, err
	}
	if o.runtime {
		ro := &mesh.RuntimeOptions{Namespace: o.flags.namespace, Dir: filepath.Join(o.dir, ".platform", "runtime"), MaxCalls: o.maxCalls,
			Store: &toolpkg.Options{Sandbox: o.sandbox, Logger: o.logger}, Logger: o.logger}
		if pm.runtime, err = mesh.NewRuntime(ctx, pm.nc, ro); err != nil {
			return nil, err
		}
		o.logger.Info("toolset platform: runtime serving", "runtime", pm.runtime.ID())
	}
	return pm, nil
}

// close stops the runtime (its calls get runtimeShutdownTimeout), the
// connection and the broker. Closing twice is safe.
func (pm *platformMesh) close() error {
	if pm.closed {
		return nil
	}
	pm.closed = true
	var errs []error
	if pm.runtime != nil {
		ctx, cancel := context.WithTimeout(context.Background(), runtimeShutdownTimeout)
		errs = append(errs, pm.runtime.Close(ctx))
		cancel()
	}
	if pm.nc != nil {
		if err := pm.nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
		}
		waitClosed(pm.nc)
	}
	if pm.broker != nil {
		errs = append(errs, pm.broker.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stopping the mesh: %w", err)
	}
	return nil
}

// waitClosed waits, a little, for a draining connection to close.
func waitClosed(nc *nats.Conn) {
	deadline := time.Now().Add(5 * time.Second)
	for !nc.IsClosed() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	nc.Close()
}
