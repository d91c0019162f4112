package mcptoolset

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// MetaRunHandle is the _meta key under which a run handle travels: the
// server puts it in the _meta of every tools/list and tools/call result
// it answers without a session, and a client that sends it back in the
// params._meta of its next requests carries on the same run (see
// [WithRunStore]).
//
// MCP 2026-07-28 has no sessions (SEP-2567): state that spans requests is
// named by a handle the server mints and the client sends back. The
// specification leaves where to the application; a tool argument would
// change every tool's schema and cannot reach tools/list, so the handle
// travels in _meta, next to the protocol's own per-request fields.
const MetaRunHandle = "io.gotoolset/run"

// MetaListChanged is the _meta key set to true in a tools/call result
// whose call changed what the caller's run may list (a tool search that
// revealed tools): the result itself says so, for a client with neither a
// session nor a listen stream to be told on. This package's client lists
// again when it sees it.
const MetaListChanged = "io.gotoolset/listChanged"

// DefaultRunHandleTTL is how long a run handle, and the saved state of
// its run, lasts after the latest request that carried it; see
// [WithRunHandleTTL].
const DefaultRunHandleTTL = time.Hour

// maxRunHandleLen bounds the handle a request may carry, checked before
// any decoding.
const maxRunHandleLen = 128

// A run handle is "r1." and the unpadded base64url of
//
//	run ID (16 random bytes) | expiry (Unix seconds, 8 bytes big-endian) | MAC (32 bytes)
//
// where MAC is HMAC-SHA256 under the server's key of the domain string
// handleDomain, the version byte, the run ID, the expiry, and the length
// (4 bytes big-endian) and bytes of the client binding: the binding is
// not in the handle, so a handle presented by another client, or with no
// binding, fails its check as a forged one does.
const (
	handlePrefix  = "r1."
	handleDomain  = "gotoolset mcptoolset run handle\x00"
	handleVersion = 1
	handleIDLen   = 16
	handleBodyLen = handleIDLen + 8
	handleRawLen  = handleBodyLen + sha256.Size
)

// The reasons a handle is refused; the client is told which.
var (
	errHandleMalformed = errors.New("malformed run handle")
	errHandleInvalid   = errors.New("invalid run handle: not minted by this server for this client")
	errHandleExpired   = errors.New("expired run handle")
)

// handleKeys mints and checks run handles.
type handleKeys struct {
	key      []byte   // the key that signs
	previous [][]byte // keys that still check
	ttl      time.Duration
	now      func() time.Time
}

// newRunID returns a new random run ID for a handle.
func newRunID() [handleIDLen]byte {
	var id [handleIDLen]byte
	_, _ = rand.Read(id[:]) // never fails
	return id
}

// runIDString is the ID of the run a handle names.
func runIDString(id [handleIDLen]byte) string { return "mcp-h-" + hex.EncodeToString(id[:]) }

// mint returns a handle for run id, bound to binding, expiring ttl from
// now.
func (k *handleKeys) mint(id [handleIDLen]byte, binding string) string {
	var raw [handleRawLen]byte
	copy(raw[:], id[:])
	binary.BigEndian.PutUint64(raw[handleIDLen:], uint64(k.now().Add(k.ttl).Unix()))
	copy(raw[handleBodyLen:], mac(k.key, raw[:handleBodyLen], binding))
	return handlePrefix + base64.RawURLEncoding.EncodeToString(raw[:])
}

func mac(key, body []byte, binding string) []byte {
	return signature(key, handleDomain, handleVersion, body, binding)
}

// signature is the HMAC-SHA256 under key of what a server signs for a
// client (a run handle, an approval's state): the kind of thing signed
// (domain) and its version, the body, and the client's binding, its
// length first so that no two inputs sign alike.
func signature(key []byte, domain string, version byte, body []byte, binding string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(domain))
	m.Write([]byte{version})
	m.Write(body)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(binding)))
	m.Write(n[:])
	m.Write([]byte(binding))
	return m.Sum(nil)
}

// check returns the run ID of handle h presented by a client with the
// given binding, or why it is refused.
func (k *handleKeys) check(h, binding string) ([handleIDLen]byte, error) {
	var id [handleIDLen]byte
	if len(h) > maxRunHandleLen {
		return id, errHandleMalformed
	}
	enc, ok := strings.CutPrefix(h, handlePrefix)
	if !ok || base64.RawURLEncoding.DecodedLen(len(enc)) != handleRawLen {
		return id, errHandleMalformed
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil || len(raw) != handleRawLen {
		return id, errHandleMalformed
	}
	good := hmac.Equal(raw[handleBodyLen:], mac(k.key, raw[:handleBodyLen], binding))
	for _, key := range k.previous {
		good = hmac.Equal(raw[handleBodyLen:], mac(key, raw[:handleBodyLen], binding)) || good
	}
	if !good {
		return id, errHandleInvalid
	}
	expiry := binary.BigEndian.Uint64(raw[handleIDLen:handleBodyLen])
	if expiry > 1<<62 || !k.now().Before(time.Unix(int64(expiry), 0)) {
		return id, errHandleExpired
	}
	copy(id[:], raw[:handleIDLen])
	return id, nil
}
