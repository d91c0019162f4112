package mesh

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// The environment variables ConnOptions.WithEnv reads.
const (
	EnvBrokerURL      = "TOOLSET_BROKER_URL"
	EnvBrokerToken    = "TOOLSET_BROKER_TOKEN"
	EnvBrokerUser     = "TOOLSET_BROKER_USER"
	EnvBrokerPassword = "TOOLSET_BROKER_PASSWORD"
	EnvBrokerNKeySeed = "TOOLSET_BROKER_NKEY_SEED_FILE"
	EnvBrokerCreds    = "TOOLSET_BROKER_CREDS"
	EnvBrokerCA       = "TOOLSET_BROKER_CA"
	EnvBrokerCert     = "TOOLSET_BROKER_CERT"
	EnvBrokerKey      = "TOOLSET_BROKER_KEY"
	// EnvBrokerInboxPrefix is the connection's inbox prefix, for a user
	// whose grant confines its replies to one (see ROLES.md).
	EnvBrokerInboxPrefix = "TOOLSET_BROKER_INBOX_PREFIX"
)

// ConnOptions say how to reach a broker and who to be on it. Secrets are
// given as values or files, never logged.
type ConnOptions struct {
	// URL is nats://host:port, comma-separated for a cluster.
	URL string
	// Name is the connection name shown by the server.
	Name string
	// Token authenticates with a token (or TOOLSET_BROKER_TOKEN).
	Token string
	// User and Password authenticate with a user (or
	// TOOLSET_BROKER_USER / TOOLSET_BROKER_PASSWORD).
	User, Password string
	// NKeySeedFile is a file holding an NKey seed (or
	// TOOLSET_BROKER_NKEY_SEED_FILE).
	NKeySeedFile string
	// CredsFile is a NATS .creds file, JWT and seed (or
	// TOOLSET_BROKER_CREDS).
	CredsFile string
	// CAFile, CertFile and KeyFile configure TLS (or TOOLSET_BROKER_CA,
	// TOOLSET_BROKER_CERT, TOOLSET_BROKER_KEY): the CA to trust, and a
	// client certificate with its key.
	CAFile, CertFile, KeyFile string
	// InboxPrefix is the prefix of the connection's request inboxes (or
	// TOOLSET_BROKER_INBOX_PREFIX): a user of a role's grant reads its
	// replies only under [InboxPrefix] of its role and identity
	// ([Grant.InboxPrefix]), and gets none under the default "_INBOX".
	InboxPrefix string
	// Logger receives connection events (default slog.Default()).
	Logger *slog.Logger
}

// WithEnv returns o with every unset field filled from the environment
// through lookup (os.LookupEnv, usually).
func (o ConnOptions) WithEnv(lookup func(string) (string, bool)) ConnOptions {
	fill := func(f *string, key string) {
		if *f != "" {
			return
		}
		if v, ok := lookup(key); ok {
			*f = v
		}
	}
	fill(&o.URL, EnvBrokerURL)
	fill(&o.Token, EnvBrokerToken)
	fill(&o.User, EnvBrokerUser)
	fill(&o.Password, EnvBrokerPassword)
	fill(&o.NKeySeedFile, EnvBrokerNKeySeed)
	fill(&o.CredsFile, EnvBrokerCreds)
	fill(&o.CAFile, EnvBrokerCA)
	fill(&o.CertFile, EnvBrokerCert)
	fill(&o.KeyFile, EnvBrokerKey)
	fill(&o.InboxPrefix, EnvBrokerInboxPrefix)
	return o
}

// natsOptions turns o into the client's options.
func (o ConnOptions) natsOptions() ([]nats.Option, error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	n := 0
	for _, set := range []bool{o.Token != "", o.User != "", o.NKeySeedFile != "", o.CredsFile != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, errors.New("mesh: give one of token, user, nkey seed and creds file")
	}
	if o.Password != "" && o.User == "" {
		return nil, errors.New("mesh: a password needs a user")
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("mesh: a client certificate needs its key, and a key its certificate")
	}
	opts := []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				logger.Warn("mesh: disconnected from the broker", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logger.Info("mesh: reconnected to the broker", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			logger.Warn("mesh: broker error", "subject", subject, "err", err)
		}),
	}
	if o.Name != "" {
		opts = append(opts, nats.Name(o.Name))
	}
	if o.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(o.InboxPrefix))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.NKeySeedFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("mesh: nkey seed file: %w", err)
		}
		opts = append(opts, opt)
	}
	if o.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.CAFile != "" {
		opts = append(opts, nats.RootCAs(o.CAFile))
	}
	if o.CertFile != "" {
		opts = append(opts, nats.ClientCert(o.CertFile, o.KeyFile))
	}
	return opts, nil
}

// Connect connects to the broker at o.URL and waits until the first
// connection is up or ctx is done. The connection then reconnects forever;
// its logs never hold a secret (URLs are redacted).
func Connect(ctx context.Context, o *ConnOptions) (*nats.Conn, error) {
	if o == nil || strings.TrimSpace(o.URL) == "" {
		return nil, errors.New("mesh: no broker URL")
	}
	opts, err := o.natsOptions()
	if err != nil {
		return nil, err
	}
	up := make(chan struct{}, 1)
	opts = append(opts, nats.ConnectHandler(func(*nats.Conn) {
		select {
		case up <- struct{}{}:
		default:
		}
	}))
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("mesh: connect to the broker: %w", redactErr(err))
	}
	if err := waitConnected(ctx, nc, up); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// waitConnected waits until nc is connected or ctx is done.
func waitConnected(ctx context.Context, nc *nats.Conn, up <-chan struct{}) error {
	if nc.IsConnected() {
		return nil
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-up:
			return nil
		case <-t.C:
			if nc.IsConnected() {
				return nil
			}
			if nc.IsClosed() {
				err := nc.LastError()
				if err == nil {
					err = nats.ErrConnectionClosed
				}
				return fmt.Errorf("mesh: connect to the broker: %w", redactErr(err))
			}
		case <-ctx.Done():
			msg := "mesh: broker not reachable"
			if err := nc.LastError(); err != nil {
				msg += ": " + redactErr(err).Error()
			}
			return fmt.Errorf("%s: %w", msg, ctx.Err())
		}
	}
}

// redactErr returns err with any user:password@ of a URL left out.
func redactErr(err error) error {
	s := err.Error()
	if !strings.Contains(s, "@") {
		return err
	}
	out := make([]string, 0, 4)
	for f := range strings.FieldsSeq(s) {
		if i := strings.Index(f, "://"); i >= 0 {
			if j := strings.LastIndex(f, "@"); j > i {
				f = f[:i+3] + "redacted@" + f[j+1:]
			}
		}
		out = append(out, f)
	}
	return errors.New(strings.Join(out, " "))
}
