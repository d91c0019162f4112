package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Bounds of the files serve --http reads.
const (
	// maxTokensFile bounds a --token-file.
	maxTokensFile = 64 << 10
	// maxTokens bounds the tokens of a --token-file.
	maxTokens = 256
	// maxRunKeyFile bounds a --run-key-file.
	maxRunKeyFile = 4 << 10
	// sessionTimeout closes the session of an older client (before
	// 2026-07-28) that sent nothing for that long, ending its run.
	sessionTimeout = time.Hour
)

// loadTokens returns the bearer tokens clients of serve --http may send:
// those of file, one per line (blank lines and lines starting with "#"
// left out), or the one of $TOOLSET_PLATFORM_TOKEN without a file. Each
// must be a token platform.LoadToken takes: at least
// platform.MinTokenLength bytes of printable ASCII without spaces.
func loadTokens(file string) ([]string, error) {
	if file == "" {
		tok, err := platform.LoadToken("")
		if err != nil {
			return nil, err
		}
		return []string{tok}, nil
	}
	data, err := readBounded(file, maxTokensFile)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	var toks []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxTokensFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(toks) == maxTokens {
			return nil, fmt.Errorf("token file %s: more than %d tokens", file, maxTokens)
		}
		if len(line) < platform.MinTokenLength {
			return nil, fmt.Errorf("token file %s: line %d: the token is %d bytes long; use at least %d (for example: openssl rand -hex 32)", file, n, len(line), platform.MinTokenLength)
		}
		for _, r := range line {
			if unicode.IsSpace(r) || unicode.IsControl(r) || r > unicode.MaxASCII {
				return nil, fmt.Errorf("token file %s: line %d: a token must be printable ASCII without spaces", file, n)
			}
		}
		toks = append(toks, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("token file %s: %w", file, err)
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("token file %s holds no token", file)
	}
	return toks, nil
}

// loadRunKey returns the run key of --run-key-file: the file's content,
// surrounding white space left out, at least mcptoolset.MinRunKeyBytes.
func loadRunKey(file string) ([]byte, error) {
	data, err := readBounded(file, maxRunKeyFile)
	if err != nil {
		return nil, fmt.Errorf("run key file: %w", err)
	}
	key := bytes.TrimSpace(data)
	if len(key) < mcptoolset.MinRunKeyBytes {
		return nil, fmt.Errorf("run key file %s: the key is %d bytes; use at least %d (for example: openssl rand -hex 32)", file, len(key), mcptoolset.MinRunKeyBytes)
	}
	return key, nil
}

// readBounded reads the regular file at path, at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is longer than %d bytes", path, limit)
	}
	return data, nil
}

// processBindingKey keys the digests of tokenBinding without a run key: a
// secret of this process.
var processBindingKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails
	return k
}()

// tokenBinding is what the runs of clients sending tok are bound to: a
// digest of it keyed with key, the run key (nil for processBindingKey),
// never the token itself, which reaches the SDK (as the user ID of the
// request's auth.TokenInfo, to which it binds sessions), run handles, run
// values and artifact scopes. Keyed, since packaged tools are given it as
// their user ID: it lets no one check guesses of a token offline.
func tokenBinding(key []byte, tok string) string {
	if key == nil {
		key = processBindingKey
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("toolset serve --http: the runs of a token\x00" + tok))
	return "token-" + hex.EncodeToString(m.Sum(nil)[:16])
}

// requireTokens serves next only to requests whose Authorization header
// is "Bearer T" for one of tokens, others 401 with the platform's JSON
// error. The request's context then carries an auth.TokenInfo whose user
// ID is the token's binding (tokenBinding): the SDK binds a session to it
// (a request of the session with another token gets 403), and the server
// binds run handles to it (see mcptoolset.WithRunBinding).
func requireTokens(tokens []string, key []byte, next http.Handler) http.Handler {
	digests := make([][sha256.Size]byte, len(tokens))
	bindings := make(map[[sha256.Size]byte]string, len(tokens))
	for i, t := range tokens {
		digests[i] = sha256.Sum256([]byte(t))
		bindings[digests[i]] = tokenBinding(key, t)
	}
	// match returns the binding of the token of the header h, or "".
	// Every token's digest is compared, in constant time, so the time
	// taken tells nothing of which matched or how closely.
	match := func(h string) string {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return ""
		}
		got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
		found := 0
		for i := range digests {
			found |= subtle.ConstantTimeCompare(got[:], digests[i][:])
		}
		if found == 0 {
			return ""
		}
		return bindings[got]
	}
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		// Only a request that requireTokens let in gets here.
		b := match("Bearer " + tok)
		if b == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: b}, nil
	}
	withInfo := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if match(r.Header.Get("Authorization")) == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolset"`)
			platform.WriteError(w, http.StatusUnauthorized, "Unauthorized", "a bearer token is required: send the header Authorization: Bearer <token>")
			return
		}
		withInfo.ServeHTTP(w, r)
	})
}

// requestBinding returns the binding of the token r authenticated with
// (see requireTokens), or "" without authentication.
func requestBinding(r *mcptoolset.Request) string {
	if r == nil || r.Extra == nil || r.Extra.TokenInfo == nil {
		return ""
	}
	return r.Extra.TokenInfo.UserID
}

// serveArtifacts are the artifact options of the store serve --http
// calls from: each call's artifacts are its run's (the run a session or a
// run handle carries on, whose ID the server mints), under names with a
// random suffix, so that no client loads another's, whatever it names.
func serveArtifacts() *toolpkg.ArtifactOptions {
	return &toolpkg.ArtifactOptions{ScopeByRun: true, RandomNames: true}
}

// runServerOptions returns the options that give serve --http one run
// per client conversation: a session's run for a client before
// 2026-07-28, whose ID is "mcp-" and the session's; a run by handle for
// a 2026-07-28 one, signed with key (nil for a random key of this
// process) and bound to the client's token, kept in this process's
// memory. Each run's values are app_name app and user_id the token's
// binding, and extra adds to its options; with --oauth-issuer, its
// token's scopes are the run's scopes (mcptoolset.TokenScopes, which
// required_scopes read); artifacts are scoped by the
// run's ID (serveArtifacts).
func runServerOptions(app string, key []byte, extra ...toolset.RunOption) []mcptoolset.ServerOption {
	values := func(r *mcptoolset.Request) []toolset.RunOption {
		v := map[string]any{"app_name": app}
		if b := requestBinding(r); b != "" {
			v["user_id"] = b
		}
		opts := append([]toolset.RunOption{toolset.WithValues(v)}, extra...)
		if r != nil && r.Extra != nil && r.Extra.TokenInfo != nil && r.Extra.TokenInfo.Scopes != nil {
			// An OAuth token's scopes (--oauth-issuer), which the
			// packaged tools' required_scopes read.
			opts = append(opts, toolset.WithValue(mcptoolset.TokenScopes, append([]string(nil), r.Extra.TokenInfo.Scopes...)))
		}
		return opts
	}
	opts := []mcptoolset.ServerOption{
		mcptoolset.WithRunContext(func(_ context.Context, r *mcptoolset.Request) (*toolset.RunContext, error) {
			id := ""
			if r.Session != nil && r.Session.ID() != "" {
				id = "mcp-" + r.Session.ID()
			}
			return toolset.NewRun(id, values(r)...), nil
		}),
		mcptoolset.WithRunOptions(func(_ context.Context, r *mcptoolset.Request) ([]toolset.RunOption, error) {
			return values(r), nil
		}),
		mcptoolset.WithRunBinding(requestBinding),
	}
	if key != nil {
		opts = append(opts, mcptoolset.WithRunKey(key))
	}
	return opts
}
