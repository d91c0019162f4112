package platform

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gotoolset/toolset/internal/atomicfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// Bounds and shape of the stored tokens.
const (
	// MaxTokens bounds the tokens a platform stores.
	MaxTokens = 1000
	// TokenPrefix starts every secret the platform issues, so that one
	// is recognised where it leaks (a log, a repository).
	TokenPrefix = "tsp_"
	// tokenSecretBytes is the random part of a secret: 256 bits.
	tokenSecretBytes = 32
	// maxTokenRecord bounds a stored token's file.
	maxTokenRecord = 4 << 10
	// lastUsedEvery is how stale a token's lastUsedAt may get: a
	// request rewrites its file at most this often.
	lastUsedEvery = time.Minute
)

// TokenInfo is a stored token as GET /api/v1/platform/tokens lists it:
// never its secret, nor the secret's hash.
type TokenInfo struct {
	Name      string    `json:"name"`
	Scopes    []Scope   `json:"scopes"`
	CreatedAt time.Time `json:"createdAt"`
	// LastUsedAt is when the token last opened a request or a login, to
	// within a minute; null if never.
	LastUsedAt *time.Time `json:"lastUsedAt"`
}

// NewToken is the answer to POST /api/v1/platform/tokens: the token and
// its secret, which the platform shows this once and keeps only hashed.
type NewToken struct {
	TokenInfo
	Secret string `json:"secret"`
}

// tokenRecord is a token as stored, in <store>/.platform/tokens/<name>.json.
type tokenRecord struct {
	Name   string  `json:"name"`
	Scopes []Scope `json:"scopes"`
	// SHA256 is the hex SHA-256 of the secret.
	SHA256     string     `json:"sha256"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
}

// tokenStore keeps the stored tokens, one file each, and their hashes in
// memory.
type tokenStore struct {
	dir string
	log *slog.Logger

	// mu guards toks; writing a file happens under it, so that what is
	// on disk follows what is in memory.
	mu   sync.Mutex
	toks map[string]*storedToken
}

type storedToken struct {
	rec    tokenRecord
	sum    [sha256.Size]byte
	scopes scopeSet
}

const tokenExt = ".json"

func openTokens(dir string, log *slog.Logger) (*tokenStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("platform: tokens: %w", err)
	}
	ts := &tokenStore{dir: dir, log: log, toks: map[string]*storedToken{}}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("platform: tokens: %w", err)
	}
	for _, de := range des {
		base, ok := strings.CutSuffix(de.Name(), tokenExt)
		if !ok || toolpkg.CheckName(base) != nil || !de.Type().IsRegular() {
			if !strings.HasPrefix(de.Name(), ".") {
				log.Warn("platform: ignoring a file in the tokens folder", "dir", dir, "file", de.Name())
			}
			continue
		}
		if len(ts.toks) >= MaxTokens {
			log.Error("platform: more stored tokens than the limit: ignoring the rest", "limit", MaxTokens, "file", de.Name())
			break
		}
		st, err := ts.read(base)
		if err != nil {
			// Not loaded: the token opens nothing, and is not listed.
			log.Error("platform: cannot read a stored token; it opens nothing", "token", base, "error", err)
			continue
		}
		ts.toks[base] = st
	}
	return ts, nil
}

func (ts *tokenStore) path(name string) string { return filepath.Join(ts.dir, name+tokenExt) }

// read loads a stored token: never through a link, never more than
// maxTokenRecord bytes, its record checked.
func (ts *tokenStore) read(name string) (*storedToken, error) {
	f, err := os.OpenFile(ts.path(name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenRecord+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTokenRecord {
		return nil, fmt.Errorf("larger than %d bytes", maxTokenRecord)
	}
	var rec tokenRecord
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("not a token record: %w", err)
	}
	if rec.Name != name {
		return nil, fmt.Errorf("the record names %s, not its file's name", quotePath(rec.Name))
	}
	scopes, err := checkScopes(rec.Scopes)
	if err != nil {
		return nil, err
	}
	raw, err := hex.DecodeString(rec.SHA256)
	if err != nil || len(raw) != sha256.Size {
		return nil, errors.New("its sha256 is not 64 hex digits")
	}
	st := &storedToken{rec: rec, scopes: setOf(scopes)}
	copy(st.sum[:], raw)
	st.rec.Scopes = scopes
	return st, nil
}

func (ts *tokenStore) write(rec tokenRecord) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(ts.dir, ".token-*", rec.Name+tokenExt, append(data, '\n'), 0o600)
}

// errTokenExists and errTooManyTokens are create's refusals.
var (
	errTokenExists   = errors.New("a token of that name exists")
	errTooManyTokens = errors.New("too many tokens")
)

// create stores a new token and returns its secret.
func (ts *tokenStore) create(name string, scopes []Scope, now time.Time) (NewToken, error) {
	var raw [tokenSecretBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return NewToken{}, err
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(secret))
	rec := tokenRecord{Name: name, Scopes: scopes, SHA256: hex.EncodeToString(sum[:]), CreatedAt: now.UTC().Truncate(time.Second)}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if _, ok := ts.toks[name]; ok {
		return NewToken{}, errTokenExists
	}
	if len(ts.toks) >= MaxTokens {
		return NewToken{}, errTooManyTokens
	}
	if err := ts.write(rec); err != nil {
		return NewToken{}, err
	}
	st := &storedToken{rec: rec, sum: sum, scopes: setOf(scopes)}
	ts.toks[name] = st
	return NewToken{TokenInfo: st.info(), Secret: secret}, nil
}

// revoke removes a token; false if there is none of that name. The
// token opens nothing from the moment revoke returns.
func (ts *tokenStore) revoke(name string) (bool, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if _, ok := ts.toks[name]; !ok {
		return false, nil
	}
	if err := os.Remove(ts.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return true, fmt.Errorf("removing the token's file: %w", err)
	}
	delete(ts.toks, name)
	return true, nil
}

func (st *storedToken) info() TokenInfo {
	return TokenInfo{Name: st.rec.Name, Scopes: st.rec.Scopes, CreatedAt: st.rec.CreatedAt, LastUsedAt: st.rec.LastUsedAt}
}

// list returns the tokens by name.
func (ts *tokenStore) list() []TokenInfo {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]TokenInfo, 0, len(ts.toks))
	for _, st := range ts.toks {
		out = append(out, st.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// match returns the principal of the stored token whose secret's SHA-256
// is sum. It compares sum with every token's, in constant time, and
// stops at none: the time it takes depends on the number of tokens
// alone. It notes when the token was used, writing its file at most
// every lastUsedEvery.
func (ts *tokenStore) match(sum [sha256.Size]byte) (principal, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var found *storedToken
	for _, st := range ts.toks {
		if subtleEqual(st.sum, sum) {
			found = st
		}
	}
	if found == nil {
		return principal{}, false
	}
	ts.touch(found, time.Now())
	return principal{name: found.rec.Name, sum: found.sum, scopes: found.scopes}, true
}

// touch records a use of st, in its file at most every lastUsedEvery; a
// failure to write is logged, the request goes on.
func (ts *tokenStore) touch(st *storedToken, now time.Time) {
	if last := st.rec.LastUsedAt; last != nil && now.Sub(*last) < lastUsedEvery {
		return
	}
	t := now.UTC().Truncate(time.Second)
	rec := st.rec
	rec.LastUsedAt = &t
	if err := ts.write(rec); err != nil {
		ts.log.Warn("platform: could not record a token's use", "token", rec.Name, "error", err)
	}
	st.rec = rec
}

// live reports whether the token whose secret's SHA-256 is sum is still
// stored (a session's token), with its scopes.
func (ts *tokenStore) live(name string, sum [sha256.Size]byte) (scopeSet, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	st, ok := ts.toks[name]
	if !ok || !subtleEqual(st.sum, sum) {
		return 0, false
	}
	return st.scopes, true
}

func subtleEqual(a, b [sha256.Size]byte) bool {
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// POST /api/v1/platform/tokens {"name", "scopes"} → 201 NewToken, the
// secret shown this once.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string  `json:"name"`
		Scopes []Scope `json:"scopes"`
	}
	if !s.decodeJSON(w, r, &req) {
		return
	}
	if err := checkName(req.Name); err != nil {
		WriteError(w, http.StatusBadRequest, "InvalidName", err.Error())
		return
	}
	scopes, err := checkScopes(req.Scopes)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}
	nt, err := s.tokens.create(req.Name, scopes, time.Now())
	switch {
	case errors.Is(err, errTokenExists):
		WriteError(w, http.StatusConflict, "Conflict", fmt.Sprintf("a token named %q exists: revoke it first, or choose another name", req.Name))
		return
	case errors.Is(err, errTooManyTokens):
		WriteError(w, http.StatusConflict, "TooManyTokens", fmt.Sprintf("the platform holds %d tokens, its limit: revoke one first", MaxTokens))
		return
	case err != nil:
		s.log.Error("platform: storing a token failed", "token", req.Name, "error", err)
		WriteError(w, http.StatusInternalServerError, "InternalError", "the token could not be stored; the server's log says why")
		return
	}
	s.log.Info("platform: token created", "token", nt.Name, "scopes", nt.Scopes, "by", principalOf(r.Context()).name)
	w.Header().Set("Location", apiPrefix+"tokens/"+nt.Name)
	writeJSON(w, http.StatusCreated, nt)
}

// GET /api/v1/platform/tokens?page=&pageSize= → 200 List[TokenInfo].
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	pg, ok := pageQuery(w, r)
	if !ok {
		return
	}
	all := s.tokens.list()
	lo, hi := pg.window(len(all))
	writeJSON(w, http.StatusOK, List[TokenInfo]{Data: all[lo:hi], Meta: ListMeta{Page: pg.page, PageSize: pg.size, Total: len(all)}})
}

// DELETE /api/v1/platform/tokens/{name} → 204; the token, and every
// session opened with it, opens nothing from the next request.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	found, err := s.tokens.revoke(name)
	if err != nil {
		s.log.Error("platform: revoking a token failed", "token", name, "error", err)
		WriteError(w, http.StatusInternalServerError, "InternalError", "the token could not be revoked; the server's log says why")
		return
	}
	if !found {
		WriteError(w, http.StatusNotFound, "NotFound", "no such token: "+quotePath(name))
		return
	}
	s.endSessionsOf(name)
	s.log.Info("platform: token revoked", "token", name, "by", principalOf(r.Context()).name)
	w.WriteHeader(http.StatusNoContent)
}
