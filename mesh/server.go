package mesh

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// DefaultMaxPayload is the embedded server's max_payload: above
// MaxMessageBytes, so that a message this package bounds always fits.
const DefaultMaxPayload = MaxMessageBytes + 64<<10

// ServerOptions configure the embedded broker.
type ServerOptions struct {
	// Dir holds JetStream's storage (packages, artifacts). "" keeps it in
	// a private temporary directory removed by Close: nothing outlives
	// the server.
	Dir string
	// Listen is "" for loopback on a free port, or "host:port" to expose
	// the broker to other machines (which requires Token).
	Listen string
	// InProcessOnly opens no network listener at all: only
	// [Server.InProcessConn] reaches the broker, so no other process on
	// the machine can, whatever its user (Listen is then ignored, and
	// ClientURL is "").
	InProcessOnly bool
	// Token is the token clients must present. When it is "" and the
	// broker listens, a random one is made ([Server.Token] returns it),
	// unless NoAuth: a broker on loopback is still reachable by every
	// user of the machine, and its packages bucket holds each toolset's
	// stored configuration, secrets included.
	Token string
	// NoAuth lets clients connect with no token, on a loopback Listen
	// only: for local use.
	NoAuth bool
	// MaxPayload bounds a message (default DefaultMaxPayload); it may not
	// be below MaxMessageBytes.
	MaxPayload int32
	// Logger receives the server's warnings and errors (default
	// slog.Default()).
	Logger *slog.Logger
}

// Server is an embedded NATS server with JetStream: the broker of a
// deployment that runs in one process (SAM's desktop mode), or exposed to
// others with Listen.
type Server struct {
	ns        *server.Server
	token     string
	inProcess bool
	tempDir   string
	once      sync.Once
	err       error
}

// StartServer starts the embedded broker and waits until it accepts
// connections; nil options are the defaults.
func StartServer(o *ServerOptions) (*Server, error) {
	if o == nil {
		o = new(ServerOptions)
	}
	host, port := "127.0.0.1", -1
	if o.Listen != "" {
		h, p, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("mesh: listen address %q: %w", o.Listen, err)
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("mesh: listen address %q: bad port", o.Listen)
		}
		if n == 0 {
			n = -1
		}
		host, port = h, n
		if !isLoopback(host) && o.Token == "" {
			return nil, fmt.Errorf("mesh: listen address %q is not loopback: a token is required", o.Listen)
		}
	}
	if o.Token == "" && !o.NoAuth && !o.InProcessOnly {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("mesh: broker token: %w", err)
		}
		o.Token = base64.RawURLEncoding.EncodeToString(b[:])
	}
	maxPayload := o.MaxPayload
	if maxPayload == 0 {
		maxPayload = DefaultMaxPayload
	}
	if maxPayload < MaxMessageBytes {
		return nil, fmt.Errorf("mesh: max payload %d is below %d", maxPayload, MaxMessageBytes)
	}
	s := &Server{token: o.Token, inProcess: o.InProcessOnly}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "toolset-broker-")
		if err != nil {
			return nil, fmt.Errorf("mesh: broker storage: %w", err)
		}
		dir, s.tempDir = d, d
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mesh: broker storage: %w", err)
	}
	opts := &server.Options{
		ServerName:    "toolset",
		Host:          host,
		Port:          port,
		JetStream:     true,
		StoreDir:      dir,
		MaxPayload:    maxPayload,
		NoSigs:        true,
		NoLog:         o.Logger == nil,
		Authorization: o.Token,
		HTTPPort:      0,
		DontListen:    o.InProcessOnly,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		s.removeTemp()
		return nil, fmt.Errorf("mesh: start broker: %w", err)
	}
	if o.Logger != nil {
		ns.SetLoggerV2(&slogLogger{l: o.Logger}, false, false, false)
	}
	s.ns = ns
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		ns.WaitForShutdown()
		s.removeTemp()
		return nil, errors.New("mesh: the broker did not start within 10s")
	}
	return s, nil
}

// isLoopback reports whether host names only this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ClientURL returns the URL clients connect to (nats://host:port), without
// the token.
func (s *Server) ClientURL() string {
	if s.inProcess {
		return ""
	}
	u := s.ns.ClientURL()
	if pu, err := url.Parse(u); err == nil {
		pu.User = nil
		return pu.String()
	}
	return u
}

// Token returns the token clients present (the one made for the broker
// when ServerOptions gave none), "" when none is required.
func (s *Server) Token() string { return s.token }

// InProcessConn returns a connection to the server that uses no socket
// (nats.InProcessServer). It reconnects forever like Connect's; ctx bounds
// the first connection.
func (s *Server) InProcessConn(ctx context.Context) (*nats.Conn, error) {
	o := ConnOptions{Name: "toolset-in-process", Token: s.token}
	opts, err := o.natsOptions()
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.InProcessServer(s.ns))
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("mesh: in-process connection: %w", err)
	}
	if err := waitConnected(ctx, nc, nil); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// Close shuts the server down, waits for it, and removes its temporary
// storage. Closing twice is safe.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		s.err = s.removeTemp()
	})
	return s.err
}

func (s *Server) removeTemp() error {
	if s.tempDir == "" {
		return nil
	}
	if err := os.RemoveAll(s.tempDir); err != nil {
		return fmt.Errorf("mesh: remove broker storage: %w", err)
	}
	return nil
}

// slogLogger passes the server's warnings and errors to a slog.Logger.
type slogLogger struct{ l *slog.Logger }

func (l *slogLogger) Noticef(string, ...any) {}
func (l *slogLogger) Debugf(string, ...any)  {}
func (l *slogLogger) Tracef(string, ...any)  {}
func (l *slogLogger) Warnf(format string, v ...any) {
	l.l.Warn("broker: " + fmt.Sprintf(format, v...))
}
func (l *slogLogger) Errorf(format string, v ...any) {
	l.l.Error("broker: " + fmt.Sprintf(format, v...))
}
func (l *slogLogger) Fatalf(format string, v ...any) {
	l.l.Error("broker: " + fmt.Sprintf(format, v...))
}
