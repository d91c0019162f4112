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
	"time"

	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
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
// SIGTERM, then shuts down: requests in flight finish, then the store is
// closed (discovery in flight finishes, or is picked up at the next
// start).
func cmdPlatform(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("platform", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "the address to listen on")
	dir := fs.String("store", "", "the store's directory (required)")
	tokenFile := fs.String("token-file", "", "a file holding the bearer token (default: $"+platform.TokenEnv+")")
	insecure := fs.Bool("insecure-no-auth", false, "serve without authentication (local use only)")
	mode := fs.String("sandbox", "auto", "the sandbox mode tools run in")
	if _, err := parse(fs, args, 0, "no argument"); err != nil {
		return err
	}
	if *dir == "" {
		return usagef("--store DIR is required")
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
	srv, err := platform.New(store, &platform.Options{Token: token, InsecureNoAuth: *insecure, Logger: logger})
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
	if err := store.Close(); err != nil {
		return fmt.Errorf("closing the store: %w", err)
	}
	logger.Info("toolset platform: stopped")
	return nil
}
