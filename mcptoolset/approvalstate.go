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

// DefaultApprovalStateTTL is how long a client has to answer a served
// tool's request for approval (see [NewServer]): the requestState of an
// input-required result expires this long after it was sent.
const DefaultApprovalStateTTL = 10 * time.Minute

// An approval's requestState is "a1." and the unpadded base64url of
//
//	nonce (16) | expiry (Unix seconds, 8, big-endian) |
//	SHA-256 of the tool name (32) | SHA-256 of the canonical arguments (32) |
//	the tool's parameter schema hash (32) | SHA-256 of the run ID (32) | MAC (32)
//
// where the run ID is that of the run the request carried on (its run
// handle's, or its session's), or "" for a request that is a run of its
// own, and MAC is HMAC-SHA256 under the server's run key of the domain
// string approvalDomain, the version byte, the body before it and the
// length (4 bytes, big-endian) and bytes of the client's binding (see
// [WithRunBinding]). Every field is fixed-length, so the state is too: a
// state of another length is malformed before any decoding. The nonce is
// the ID of the call the approval is for, in the run.
const (
	approvalPrefix  = "a1."
	approvalDomain  = "gotoolset mcptoolset approval state\x00"
	approvalVersion = 1
	nonceLen        = 16
	approvalBodyLen = nonceLen + 8 + 4*sha256.Size
	approvalRawLen  = approvalBodyLen + sha256.Size
)

// maxApprovalStateLen bounds the requestState a request may carry,
// checked before any decoding.
var maxApprovalStateLen = len(approvalPrefix) + base64.RawURLEncoding.EncodedLen(approvalRawLen)

// The reasons a requestState is refused; the client is told which.
var (
	errStateMalformed = errors.New("malformed approval requestState")
	errStateInvalid   = errors.New("invalid approval requestState: not minted by this server for this client, tool and run")
	errStateExpired   = errors.New("expired approval requestState: call the tool again to be asked anew")
	errStateArgs      = errors.New("approval requestState does not match this call's arguments or the tool's schema: call the tool again to be asked anew")
	errStateUsed      = errors.New("approval requestState already answered or not asked in this run: call the tool again to be asked anew")
)

// approvalSubject is what an approval's requestState binds.
type approvalSubject struct {
	nonce  [nonceLen]byte
	name   string // the tool's name
	args   string // the canonical arguments
	schema string // "sha256:" and hex, as toolset.PendingApproval.SchemaHash
	run    string // the run's ID, or ""
}

// callID is the ID of the call the approval is for.
func (a *approvalSubject) callID() string { return "mcp-call-" + hex.EncodeToString(a.nonce[:]) }

func newNonce() [nonceLen]byte {
	var n [nonceLen]byte
	_, _ = rand.Read(n[:]) // never fails
	return n
}

// schemaBytes returns the 32 bytes of a schema hash "sha256:<hex>".
func schemaBytes(h string) ([sha256.Size]byte, bool) {
	var out [sha256.Size]byte
	hx, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(hx) != 2*sha256.Size {
		return out, false
	}
	if _, err := hex.Decode(out[:], []byte(hx)); err != nil {
		return out, false
	}
	return out, true
}

// body returns the signed body of a's state, expiring at expiry; false if
// the schema hash is not one.
func (a *approvalSubject) body(expiry time.Time) ([]byte, bool) {
	schema, ok := schemaBytes(a.schema)
	if !ok {
		return nil, false
	}
	b := make([]byte, 0, approvalBodyLen)
	b = append(b, a.nonce[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(expiry.Unix()))
	n, g, r := sha256.Sum256([]byte(a.name)), sha256.Sum256([]byte(a.args)), sha256.Sum256([]byte(a.run))
	b = append(b, n[:]...)
	b = append(b, g[:]...)
	b = append(b, schema[:]...)
	b = append(b, r[:]...)
	return b, true
}

func approvalMAC(key, body []byte, binding string) []byte {
	return signature(key, approvalDomain, approvalVersion, body, binding)
}

// mintApproval returns the requestState of a, for a client with binding,
// expiring ttl from now; false if a's schema hash is not one.
func (k *handleKeys) mintApproval(a *approvalSubject, binding string) (string, bool) {
	body, ok := a.body(k.now().Add(k.ttl))
	if !ok {
		return "", false
	}
	raw := append(body, approvalMAC(k.key, body, binding)...)
	return approvalPrefix + base64.RawURLEncoding.EncodeToString(raw), true
}

// checkedState is a requestState whose MAC and expiry were checked: its
// nonce, and the hashes it binds, to be compared with the repeated call.
type checkedState struct {
	nonce                   [nonceLen]byte
	name, args, schema, run [sha256.Size]byte
}

// openApproval checks requestState st presented by a client with binding
// and returns what it binds, or why it is refused.
func (k *handleKeys) openApproval(st, binding string) (*checkedState, error) {
	if len(st) != maxApprovalStateLen {
		return nil, errStateMalformed
	}
	enc, ok := strings.CutPrefix(st, approvalPrefix)
	if !ok {
		return nil, errStateMalformed
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil || len(raw) != approvalRawLen {
		return nil, errStateMalformed
	}
	body, sum := raw[:approvalBodyLen], raw[approvalBodyLen:]
	good := hmac.Equal(sum, approvalMAC(k.key, body, binding))
	for _, key := range k.previous {
		good = hmac.Equal(sum, approvalMAC(key, body, binding)) || good
	}
	if !good {
		return nil, errStateInvalid
	}
	var c checkedState
	copy(c.nonce[:], body)
	expiry := binary.BigEndian.Uint64(body[nonceLen:])
	if expiry > 1<<62 || !k.now().Before(time.Unix(int64(expiry), 0)) {
		return nil, errStateExpired
	}
	off := nonceLen + 8
	for _, f := range []*[sha256.Size]byte{&c.name, &c.args, &c.schema, &c.run} {
		copy(f[:], body[off:])
		off += sha256.Size
	}
	return &c, nil
}

// matches reports whether c binds the tool name and run given.
func (c *checkedState) matches(name, run string) bool {
	n, r := sha256.Sum256([]byte(name)), sha256.Sum256([]byte(run))
	return hmac.Equal(c.name[:], n[:]) && hmac.Equal(c.run[:], r[:])
}

// matchesCall reports whether c binds the canonical arguments and schema
// hash given.
func (c *checkedState) matchesCall(args, schema string) bool {
	s, ok := schemaBytes(schema)
	g := sha256.Sum256([]byte(args))
	return ok && hmac.Equal(c.args[:], g[:]) && hmac.Equal(c.schema[:], s[:])
}
