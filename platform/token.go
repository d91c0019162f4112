package platform

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"unicode"
)

// TokenEnv is the environment variable [LoadToken] reads the bearer token
// from.
const TokenEnv = "TOOLSET_PLATFORM_TOKEN"

// MinTokenLength is the shortest bearer token [LoadToken] and
// [RequireToken] accept: 16 bytes, so that a token cannot be guessed.
const MinTokenLength = 16

// maxTokenFile bounds the token file LoadToken reads.
const maxTokenFile = 4096

// ErrNoToken is returned by [LoadToken] when neither a file nor the
// environment gives a token.
var ErrNoToken = errors.New("platform: no bearer token: set " + TokenEnv + " or give a token file (or, for local use only, run without auth)")

// LoadToken returns the bearer token clients must present: the contents of
// file (surrounding white space trimmed) when file is not empty, else the
// TOOLSET_PLATFORM_TOKEN environment variable. A token shorter than
// MinTokenLength, or holding white space or control characters, is an
// error; so is neither source giving one ([ErrNoToken]).
func LoadToken(file string) (string, error) {
	var tok string
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("platform: token file: %w", err)
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
		if err != nil {
			return "", fmt.Errorf("platform: token file %s: %w", file, err)
		}
		if len(data) > maxTokenFile {
			return "", fmt.Errorf("platform: token file %s: longer than %d bytes", file, maxTokenFile)
		}
		tok = strings.TrimSpace(string(data))
	} else {
		tok = strings.TrimSpace(os.Getenv(TokenEnv))
		if tok == "" {
			return "", ErrNoToken
		}
	}
	if err := checkToken(tok); err != nil {
		return "", err
	}
	return tok, nil
}

func checkToken(tok string) error {
	if len(tok) < MinTokenLength {
		return fmt.Errorf("platform: the bearer token is %d bytes long; use at least %d (for example: openssl rand -hex 32)", len(tok), MinTokenLength)
	}
	for _, r := range tok {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r > unicode.MaxASCII {
			return errors.New("platform: the bearer token must be printable ASCII without spaces")
		}
	}
	return nil
}

// RequireToken returns a handler that serves next only to requests whose
// Authorization header is "Bearer <token>", compared in constant time.
// Any other request is answered 401 with a JSON error
// {"error": {"code": "Unauthorized", "message": ...}} and a
// WWW-Authenticate header, and never reaches next. A token that
// [LoadToken] would refuse makes RequireToken panic: it is a
// configuration error found at start-up.
func RequireToken(token string, next http.Handler) http.Handler {
	if err := checkToken(token); err != nil {
		panic(err)
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasToken(r, want) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolset"`)
			WriteError(w, http.StatusUnauthorized, "Unauthorized", "a bearer token is required: send the header Authorization: Bearer <token>")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hasToken reports whether r carries "Authorization: Bearer <token>" for
// the token whose SHA-256 is want. Comparing digests in constant time
// tells an attacker neither the token's bytes nor its length.
func hasToken(r *http.Request, want [sha256.Size]byte) bool {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}
