package toolpkg

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/gotoolset/toolset"
)

// Scopes is the run value that says which scopes the caller holds: a tool
// whose configuration sets required_scopes is shown only in the turns of
// runs that carry every one of them. Give a run its scopes with
// toolset.WithValue(toolpkg.Scopes, []string{...}), or by name
// ("scopes") with toolset.WithValues as a []string or a []any of strings.
var Scopes = toolset.NewKey[[]string]("scopes")

// Auth is the run value that carries the caller's credentials for the
// tools that take them (see [Credentials]). Give a run its credentials
// with toolset.WithValue(toolpkg.Auth, &toolpkg.Credentials{...}), or by
// name ("auth") with toolset.WithValues.
var Auth = toolset.NewKey[*Credentials]("auth")

// Credentials are credentials passed to a tool in runner_args.json, as
// tool_oauth_token and tool_auth_headers. They are secret: hidden in
// everything the tool returns and in errors, never logged.
type Credentials struct {
	// OAuthToken is the caller's OAuth access token.
	OAuthToken string
	// Headers are HTTP headers the tool sends with its requests.
	Headers map[string]string
}

// authConfig is the reserved key auth of a tool's configuration.
type authConfig struct {
	static  Credentials // given by the deployer in the configuration
	fromRun bool        // the run's Auth value is passed too
}

// Bounds of auth: what a configuration or a run may pass a tool.
const (
	maxAuthHeaders     = 64
	maxAuthHeaderBytes = 16 << 10
)

// parseAuth reads the reserved key auth: true (or "run") passes the run's
// [Auth] credentials; an object {"oauth_token": "...", "headers":
// {"Name": "value"}, "from_run": true} gives static credentials, and the
// run's too when from_run is set. Every value is added to sec. The
// message never shows a value.
func parseAuth(v any, sec *secrets) (authConfig, string) {
	switch x := v.(type) {
	case bool:
		return authConfig{fromRun: x}, ""
	case string:
		if strings.TrimSpace(x) == "run" {
			return authConfig{fromRun: true}, ""
		}
		sec.add(x)
		return authConfig{}, `expected true, "run" or an object {"oauth_token", "headers", "from_run"}, got a string (not shown)`
	case *Credentials:
		if x == nil {
			return authConfig{}, ""
		}
		c, msg := checkCredentials(*x, sec)
		return authConfig{static: c}, msg
	case Credentials:
		c, msg := checkCredentials(x, sec)
		return authConfig{static: c}, msg
	case map[string]any:
		var a authConfig
		for _, k := range sortedKeys(x) {
			switch k {
			case "oauth_token":
				s, ok := x[k].(string)
				if !ok {
					return authConfig{}, "oauth_token must be a string"
				}
				a.static.OAuthToken = s
			case "headers":
				h, ok := x[k].(map[string]any)
				if !ok {
					if hs, ok2 := x[k].(map[string]string); ok2 {
						h = map[string]any{}
						for hk, hv := range hs {
							h[hk] = hv
						}
					} else {
						return authConfig{}, "headers must be an object of header names to strings"
					}
				}
				a.static.Headers = map[string]string{}
				for hk, hv := range h {
					s, ok := hv.(string)
					if !ok {
						return authConfig{}, fmt.Sprintf("header %s must be a string", quoteShort(hk))
					}
					a.static.Headers[hk] = s
				}
			case "from_run":
				b, ok := x[k].(bool)
				if !ok {
					return authConfig{}, "from_run must be true or false"
				}
				a.fromRun = b
			default:
				return authConfig{}, fmt.Sprintf("unknown field %s; auth takes oauth_token, headers and from_run", quoteShort(k))
			}
		}
		c, msg := checkCredentials(a.static, sec)
		a.static = c
		return a, msg
	}
	return authConfig{}, fmt.Sprintf(`expected true, "run" or an object {"oauth_token", "headers", "from_run"}, got %s`, jsonKind(v))
}

// checkCredentials bounds credentials and checks header names, and adds
// the values to sec (before any check, so that none is ever shown).
func checkCredentials(c Credentials, sec *secrets) (Credentials, string) {
	sec.add(c.OAuthToken)
	for _, v := range c.Headers {
		sec.add(v)
	}
	if len(c.Headers) > maxAuthHeaders {
		return Credentials{}, fmt.Sprintf("has %d headers; at most %d are allowed", len(c.Headers), maxAuthHeaders)
	}
	size := len(c.OAuthToken)
	for k, v := range c.Headers {
		if !validHeaderName(k) {
			return Credentials{}, fmt.Sprintf("header name %s is not a valid HTTP header name", quoteShort(k))
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return Credentials{}, fmt.Sprintf("the value of header %s holds a line break or NUL (not shown)", quoteShort(k))
		}
		size += len(k) + len(v)
	}
	if size > maxAuthHeaderBytes {
		return Credentials{}, fmt.Sprintf("the credentials are %d bytes; at most %d are allowed", size, maxAuthHeaderBytes)
	}
	out := Credentials{OAuthToken: c.OAuthToken, Headers: map[string]string{}}
	for k, v := range c.Headers {
		out.Headers[http.CanonicalHeaderKey(k)] = v
	}
	return out, ""
}

func validHeaderName(k string) bool {
	if k == "" || len(k) > 256 {
		return false
	}
	for _, r := range k {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// runCredentials returns the credentials the run carries, by key or by
// name.
func runCredentials(ctx context.Context) *Credentials {
	if c, ok := Auth.Lookup(ctx); ok {
		return c
	}
	switch v := toolset.FromContext(ctx).Value("auth").(type) {
	case Credentials:
		return &v
	case *Credentials:
		return v
	}
	return nil
}

// credentialsFor returns what a call passes the tool: the configuration's
// credentials, with the run's over them when the tool takes those, and
// the secrets to hide for this call (sec, plus the run's values).
func (a authConfig) credentialsFor(ctx context.Context, sec *secrets) (Credentials, *secrets, error) {
	out := Credentials{OAuthToken: a.static.OAuthToken, Headers: map[string]string{}}
	for k, v := range a.static.Headers {
		out.Headers[k] = v
	}
	if !a.fromRun {
		return out, sec, nil
	}
	rc := runCredentials(ctx)
	if rc == nil {
		return out, sec, nil
	}
	callSec := sec.with()
	c, msg := checkCredentials(*rc, callSec)
	if msg != "" {
		return Credentials{}, nil, fmt.Errorf("toolpkg: the run's credentials (toolpkg.Auth): %s", msg)
	}
	if c.OAuthToken != "" {
		out.OAuthToken = c.OAuthToken
	}
	for k, v := range c.Headers {
		out.Headers[k] = v
	}
	return out, callSec, nil
}

// with returns a copy of s to which more values may be added.
func (s *secrets) with() *secrets {
	c := &secrets{keys: s.keys}
	for _, v := range s.values {
		c.add(v)
	}
	return c
}

// RunScopes returns the scopes the run of ctx carries: the run value
// [Scopes], or a list of strings under the name "scopes".
func RunScopes(ctx context.Context) []string {
	if s, ok := Scopes.Lookup(ctx); ok {
		return s
	}
	if l, ok := toolset.FromContext(ctx).Value("scopes").([]any); ok {
		var out []string
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// HasScopes reports whether the run of ctx carries every scope of need
// (see [RunScopes]).
func HasScopes(ctx context.Context, need []string) bool {
	have := map[string]bool{}
	for _, s := range RunScopes(ctx) {
		have[s] = true
	}
	for _, s := range need {
		if !have[s] {
			return false
		}
	}
	return true
}
