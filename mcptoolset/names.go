package mcptoolset

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
)

// WithNameMapping offers each of the server's tools under the name
// mapping gives it, for servers whose names providers reject: MCP allows
// '.' and up to 128 characters ("admin.delete_user"), the models' APIs
// only ^[a-zA-Z0-9_-]{1,64}$. [ProviderSafeNames] is a ready mapping.
//
// mapping must be deterministic: it runs at every listing, for every
// tool. A call always reaches the server under the server's own name
// ([MetaTool] keeps it), whatever name the model used. A tool whose
// mapped name is empty, or is still not one a model can call, is
// refused; so are the tools that mapping gives one name, each with an
// [*InvalidToolError] naming the others. A panic of mapping fails the
// listing. Mapped names that collide with other toolsets' names are
// conflicts of the turn, as any other: [toolset.BuildTools] reports them.
//
// Without a mapping, a tool whose name providers reject is refused, with
// a warning and an [*InvalidToolError] that say to use this option, and
// [toolset.Explain] lists it as refused.
func WithNameMapping(mapping func(serverName string) string) Option {
	return func(c *config) { c.nameMap = mapping }
}

// ProviderSafeNames is a mapping for [WithNameMapping] that turns any
// name MCP allows into one the providers accept, and leaves such names as
// they are: each character other than an ASCII letter, digit, '_' or '-'
// becomes '_' ("admin.delete_user" becomes "admin_delete_user"), and a
// name still longer than 64 bytes keeps its first 55 and ends with '_'
// and 8 hex digits of the SHA-256 of the whole server name, so that long
// names sharing a start stay apart. Two server names that differ only in
// the characters it replaces ("a.b", "a_b") get one name, and are
// refused as a collision. Under a prefix, use [ProviderSafeNamesWithin].
func ProviderSafeNames(serverName string) string { return safeName(serverName, maxCallableName) }

// ProviderSafeNamesWithin returns the mapping of [ProviderSafeNames] with
// names of at most maxLen bytes rather than 64, for a toolset offered
// under a prefix, which lengthens every name:
//
//	fs := mcptoolset.NewHTTP(url, mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNamesWithin(64-len("fs_"))))
//	toolset.BuildTools(ctx, "agent", fs.Prefixed("fs"))
//
// maxLen is taken within [16, 64].
func ProviderSafeNamesWithin(maxLen int) func(serverName string) string {
	maxLen = min(max(maxLen, minSafeLen), maxCallableName)
	return func(serverName string) string { return safeName(serverName, maxLen) }
}

// minSafeLen is the shortest bound of ProviderSafeNamesWithin: a
// shortened name keeps some of its start before the hash.
const minSafeLen = 16

// safeName is ProviderSafeNames with names of at most maxLen bytes.
func safeName(serverName string, maxLen int) string {
	var b strings.Builder
	b.Grow(min(len(serverName), maxLen+1))
	for _, r := range serverName {
		if callableRune(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) <= maxLen {
		return name
	}
	sum := sha256.Sum256([]byte(serverName))
	return name[:maxLen-1-hashDigits] + "_" + hex.EncodeToString(sum[:])[:hashDigits]
}

// hashDigits is the length of the hash suffix of a shortened name.
const hashDigits = 8

func callableRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-'
}

// callable reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func callable(name string) bool {
	return name != "" && len(name) <= maxCallableName && !strings.ContainsFunc(name, func(r rune) bool { return !callableRune(r) })
}

// errUncallable is the cause of the refusal of a name providers reject,
// when no mapping is set; it names the option that offers the tool
// anyway.
var errUncallable = errors.New("the name is not one a model can call (tool names must match ^[a-zA-Z0-9_-]{1,64}$); " +
	"offer it under a mapped name with mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNames)")

// offeredName returns the name the tool the server calls name is offered
// under, or why there is none. A panic of the mapping is a
// *toolset.PanicError.
func (c *conn) offeredName(name string) (offered string, err error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	if c.cfg.nameMap == nil {
		if !callable(name) {
			// The core refuses such a name in every turn that holds it:
			// offered, the one tool would fail every turn of the agent.
			return "", errUncallable
		}
		return name, nil
	}
	defer func() {
		if p := recover(); p != nil {
			offered, err = "", &toolset.PanicError{Tool: textcut.Clip(name, maxNameBytes), Callback: "WithNameMapping function", Value: p, Stack: debug.Stack()}
		}
	}()
	offered = c.cfg.nameMap(name)
	switch {
	case offered == "":
		return "", errors.New("the name mapping (see WithNameMapping) gives it no name")
	case !callable(offered):
		return "", fmt.Errorf("the name mapping (see WithNameMapping) gives it the name %q, which is not one a model can call (tool names must match ^[a-zA-Z0-9_-]{1,64}$)",
			textcut.Clip(offered, maxCallableName))
	}
	return offered, nil
}

// maxClashNamed bounds the other server names a collision's refusal
// names.
const maxClashNamed = 3

// clashError is the refusal of the tool the server calls name, which the
// mapping gives the name offered, as it does to the tools of others (name
// among them).
func clashError(name, offered string, others []string) error {
	var quoted []string
	n := len(others) - 1 // name is one of them, once: the server's names are unique
	for _, o := range others {
		if len(quoted) == maxClashNamed {
			break
		}
		if o != name {
			quoted = append(quoted, fmt.Sprintf("%q", textcut.Clip(o, maxNameBytes)))
		}
	}
	what := "tool " + quoted[0]
	if n > 1 {
		what = "tools " + strings.Join(quoted, ", ")
		if n > maxClashNamed {
			what += fmt.Sprintf(" and %d more", n-maxClashNamed)
		}
	}
	return fmt.Errorf("the name mapping (see WithNameMapping) gives it the name %q, as it does to the server's %s; none of them is offered", offered, what)
}
