package mcptoolset

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// RedirectError reports an HTTP server that redirected a request to
// another origin (scheme, host and port) than its endpoint's. Such a
// redirect is never followed: it would re-send a call and its arguments
// (or, after a 303, a GET) to an address the program never named, an
// internal one, say.
type RedirectError struct {
	From, To string // the origins
}

// Error implements error.
func (e *RedirectError) Error() string {
	return fmt.Sprintf("the MCP endpoint at %s redirected to another origin, %s; a redirect is followed only within the endpoint's origin (give the toolset the URL it redirects to, if it is to be trusted)", e.From, e.To)
}

// sameOrigin reports whether a and b have the same scheme, host and
// port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(hostPort(a), hostPort(b))
}

// hostPort is u's host with its port, the scheme's default made explicit.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if strings.EqualFold(u.Scheme, "https") {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// origin is u's scheme and host, for messages.
func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }
