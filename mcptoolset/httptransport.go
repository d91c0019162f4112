package mcptoolset

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// originHeaders adds its headers to the requests for one origin.
type originHeaders struct {
	base         http.RoundTripper
	scheme, host string
	header       http.Header
}

func (t originHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != t.scheme || !strings.EqualFold(req.URL.Host, t.host) {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not change the request it is given
	for k, v := range t.header {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of the transport
// wrapped.
func (t originHeaders) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// maxResponseBytes bounds an HTTP response body that holds one message
// (not an event stream, whose events the SDK bounds itself), as the SDK
// bounds a message over stdio; a var for the tests.
var maxResponseBytes int64 = mcp.DefaultMaxLineLength

// boundedClient returns a copy of hc (or of http.DefaultClient) whose
// response bodies, other than event streams, fail past maxResponseBytes:
// the SDK reads such a body whole, so a server could otherwise make the
// process hold any amount of memory.
func boundedClient(hc *http.Client, endpoint *url.URL) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = boundedTransport{base}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, endpoint) {
			return &RedirectError{From: origin(endpoint), To: origin(req.URL)}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

type boundedTransport struct{ base http.RoundTripper }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxResponseBytes}
	}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the transport
// wrapped, as http.Client.CloseIdleConnections expects.
func (t boundedTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// boundedBody fails a read past its limit.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("the server's HTTP response is over %d bytes", maxResponseBytes)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fmt.Errorf("the server's HTTP response is over %d bytes", maxResponseBytes)
	}
	return n, err
}
