package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/gotoolset/toolset/mesh"
	"github.com/gotoolset/toolset/platform"
	"github.com/nats-io/nats.go"
)

// brokerFlags are the flags that say which broker to reach and who to be
// on it. Secrets come from files or the environment only, never from the
// command line, which other users of the machine can read.
type brokerFlags struct {
	url       string
	namespace string
	creds     string
	tokenFile string
	nkey      string
	ca        string
}

// addBrokerFlags adds --broker URL and the credentials' flags; what
// says what the broker is for in --broker's help.
func addBrokerFlags(fs *flag.FlagSet, what string) *brokerFlags {
	bf := &brokerFlags{}
	fs.StringVar(&bf.url, "broker", "", what)
	fs.StringVar(&bf.namespace, "namespace", mesh.DefaultNamespace, "the mesh's namespace: the first tokens of its subjects")
	fs.StringVar(&bf.creds, "broker-creds", "", "a NATS .creds file (JWT and seed) to authenticate with (default: $"+mesh.EnvBrokerCreds+")")
	fs.StringVar(&bf.tokenFile, "broker-token-file", "", "a file holding the broker's token (default: $"+mesh.EnvBrokerToken+")")
	fs.StringVar(&bf.nkey, "broker-nkey", "", "a file holding an NKey seed to authenticate with (default: $"+mesh.EnvBrokerNKeySeed+")")
	fs.StringVar(&bf.ca, "broker-ca", "", "a PEM file of the CA that signs the broker's TLS certificate (default: $"+mesh.EnvBrokerCA+")")
	return bf
}

// credentialsGiven says whether a credentials flag was given.
func (bf *brokerFlags) credentialsGiven() bool {
	return bf.creds != "" || bf.tokenFile != "" || bf.nkey != "" || bf.ca != ""
}

// check checks the flags without reading a file: for a command that
// refuses bad usage before it starts anything.
func (bf *brokerFlags) check() error {
	if bf.url != "" {
		if err := checkBrokerURL(bf.url); err != nil {
			return err
		}
	}
	if _, err := mesh.NewSubjects(bf.namespace); err != nil {
		return usagef("--namespace %q: %v", bf.namespace, err)
	}
	return nil
}

// checkBrokerURL refuses a URL that is not a broker's or that holds a
// secret: a user, a password or a token in the URL would be on the
// command line.
func checkBrokerURL(s string) error {
	for _, part := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil || u.Host == "" || u.Opaque != "" {
			return usagef("--broker must be the broker's URL, such as nats://127.0.0.1:4222 (comma-separated for a cluster), not %q", redactURL(s))
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return usagef("--broker %q: the scheme must be nats, tls, ws or wss", redactURL(s))
		}
		if u.User != nil {
			return usagef("--broker %q: give no credentials in the URL, where other users of this machine can read them; use --broker-token-file, --broker-creds, --broker-nkey or the environment ($%s...)", redactURL(s), mesh.EnvBrokerToken)
		}
	}
	return nil
}

// redactURL shows a URL without what it may hold before its host.
func redactURL(s string) string {
	var parts []string
	for _, part := range strings.Split(s, ",") {
		if u, err := url.Parse(strings.TrimSpace(part)); err == nil && u.User != nil {
			u.User = url.User("REDACTED")
			part = u.String()
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ",")
}

// connOptions turns the flags and the environment into the connection's
// options; a token file is read here.
func (bf *brokerFlags) connOptions(name string, logger *slog.Logger) (mesh.ConnOptions, error) {
	o := mesh.ConnOptions{URL: bf.url, Name: name, CredsFile: bf.creds, NKeySeedFile: bf.nkey, CAFile: bf.ca, Logger: logger}
	if bf.tokenFile != "" {
		tok, err := readSecretFile(bf.tokenFile)
		if err != nil {
			return o, fmt.Errorf("--broker-token-file: %w", err)
		}
		o.Token = tok
	}
	return o.WithEnv(os.LookupEnv), nil
}

// maxSecretFile bounds a file holding a token.
const maxSecretFile = 4096

// readSecretFile reads a token from a file: its first line, trimmed. The
// error never shows the content.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxSecretFile {
		return "", fmt.Errorf("%s holds more than %d bytes: not a token", path, maxSecretFile)
	}
	tok, _, _ := strings.Cut(string(data), "\n")
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", fmt.Errorf("%s holds no token", path)
	}
	return tok, nil
}

// connect connects to the broker the flags name.
func (bf *brokerFlags) connect(ctx context.Context, name string, logger *slog.Logger) (*nats.Conn, error) {
	o, err := bf.connOptions(name, logger)
	if err != nil {
		return nil, err
	}
	nc, err := mesh.Connect(ctx, &o)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the broker at %s was not reached before the command was interrupted", redactURL(o.URL))
		}
		return nil, err
	}
	return nc, nil
}

// defaultRuntimeDir is a runtime's directory when --dir is not given:
// one per broker under the user's cache, so that two runtimes of
// different meshes on one machine keep apart.
func defaultRuntimeDir(brokerURL, namespace string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no --dir, and no cache directory to put the runtime in: %w", err)
	}
	sum := sha256.Sum256([]byte(namespace + "\x00" + brokerURL))
	return filepath.Join(cache, "toolset", "runtime-"+hex.EncodeToString(sum[:8])), nil
}

// distributor is the mesh's packages as the platform's Distributor.
type distributor struct {
	pk *mesh.Packages
}

// Publish publishes a version, unless the broker holds it already with
// the same configuration: the platform publishes what it serves at each
// start. The same version with another configuration changes only the
// configuration the runtimes hold.
func (d distributor) Publish(ctx context.Context, name string, version int, pkg io.Reader, config map[string]any) error {
	list, err := d.pk.List(ctx)
	if err != nil {
		return err
	}
	for _, cur := range list {
		if cur.Name != name {
			continue
		}
		if cur.Version == version && sameConfig(cur.Config, config) {
			return nil
		}
		if cur.Version > version {
			return fmt.Errorf("the broker holds version %d of %q, above the store's %d: the store is not the one that published it", cur.Version, name, version)
		}
	}
	return d.pk.Publish(ctx, name, version, pkg, config)
}

// Remove withdraws a toolset.
func (d distributor) Remove(ctx context.Context, name string) error { return d.pk.Remove(ctx, name) }

// WatchReports passes the runtimes' reports on, their tools named as
// the package names them.
func (d distributor) WatchReports(ctx context.Context, fn func(platform.SyncReport)) error {
	return d.pk.WatchReports(ctx, func(r mesh.SyncReport) {
		tools := make([]string, 0, len(r.Tools))
		for _, t := range r.Tools {
			tools = append(tools, strings.TrimPrefix(t, r.Toolset+mesh.ToolSeparator))
		}
		fn(platform.SyncReport{Runtime: r.Runtime, Toolset: r.Toolset, Version: r.Version, Status: r.Status, Tools: tools, Errors: r.Errors})
	})
}

// sameConfig compares two configurations as JSON values.
func sameConfig(a, b map[string]any) bool {
	norm := func(m map[string]any) any {
		if len(m) == 0 {
			return map[string]any{}
		}
		data, err := json.Marshal(m)
		if err != nil {
			return nil
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		if dec.Decode(&v) != nil {
			return nil
		}
		return v
	}
	na, nb := norm(a), norm(b)
	return na != nil && nb != nil && reflect.DeepEqual(na, nb)
}

// errNoBroker is returned by a command given broker flags without
// --broker.
var errNoBroker = errors.New("the broker's credentials go with --broker URL")
