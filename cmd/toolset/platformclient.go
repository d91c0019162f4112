package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/gotoolset/toolset/platform"
)

// platformClient speaks to a platform's API for the commands that reach
// one (agent check, package, apply, platform token): one base URL, one
// bearer token, no redirect followed (a redirect would carry the token
// elsewhere), every answer read within a bound.
type platformClient struct {
	base  *url.URL
	token string
	// doing names the exchange in the error of one cut short ("checking
	// on" the platform at ...).
	doing string
	http  *http.Client
}

// newPlatformClient checks the --platform URL and loads the token from
// tokenFile or $TOOLSET_PLATFORM_TOKEN; with neither, requests go without
// one (a platform that needs one answers 401, said by unauthorized).
func newPlatformClient(addr, tokenFile string) (*platformClient, error) {
	base, err := platformURL(addr)
	if err != nil {
		return nil, err
	}
	return platformClientFor(base, tokenFile)
}

// platformClientFor is newPlatformClient for a URL already checked.
func platformClientFor(base *url.URL, tokenFile string) (*platformClient, error) {
	token, err := platform.LoadToken(tokenFile)
	if errors.Is(err, platform.ErrNoToken) {
		token = ""
	} else if err != nil {
		return nil, err
	}
	return platformClientWith(base, token), nil
}

// platformClientWith is a client with the token given ("" for none).
func platformClientWith(base *url.URL, token string) *platformClient {
	return &platformClient{base: base, token: token, doing: "talking to", http: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// platformAnswer is an answer read whole: its status and body.
type platformAnswer struct {
	status int
	body   []byte
	res    *http.Response
}

// do sends a request to path (under the base URL, each segment escaped)
// and reads at most max bytes of the answer, whatever its status.
func (c *platformClient) do(ctx context.Context, method string, path []string, query url.Values, contentType string, body []byte, max int64) (*platformAnswer, error) {
	target := c.base.JoinPath(path...)
	if len(query) > 0 {
		target.RawQuery = query.Encode()
	}
	return c.doURL(ctx, method, target, contentType, body, max)
}

// doURL is do for a target URL made from the base already.
func (c *platformClient) doURL(ctx context.Context, method string, target *url.URL, contentType string, body []byte, max int64) (*platformAnswer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target.String(), rd)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted, or out of time.
			return nil, fmt.Errorf("%s the platform at %s: %w", c.doing, c.base, context.Cause(ctx))
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("the platform at %s cannot be reached: %w", c.base, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, max+1))
	if err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return nil, fmt.Errorf("reading the answer of the platform at %s: %w", c.base, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("the platform at %s answered %d %s with more than %d bytes", c.base, res.StatusCode, http.StatusText(res.StatusCode), max)
	}
	return &platformAnswer{status: res.StatusCode, body: data, res: res}, nil
}

// unauthorized is the error of a 401: no token given, or the token
// refused; hint says which token the command needs.
func (c *platformClient) unauthorized(hint string) error {
	if c.token == "" {
		return fmt.Errorf("the platform at %s requires a bearer token: give --token-file FILE or set $%s%s", c.base, platform.TokenEnv, hint)
	}
	return fmt.Errorf("the platform at %s refused the bearer token (401 Unauthorized)", c.base)
}

// getJSON GETs path into v; ok is false on 404.
func (c *platformClient) getJSON(ctx context.Context, path []string, query url.Values, v any) (ok bool, err error) {
	a, err := c.do(ctx, http.MethodGet, path, query, "", nil, maxPlatformAnswer)
	if err != nil {
		return false, err
	}
	switch a.status {
	case http.StatusOK:
		if err := json.Unmarshal(a.body, v); err != nil {
			return false, c.unexpected(a)
		}
		return true, nil
	case http.StatusNotFound:
		return false, nil
	case http.StatusUnauthorized:
		return false, c.unauthorized("")
	}
	return false, c.unexpected(a)
}

// unexpected is the error for an answer the caller did not expect: the
// platform's error code and message when it gave them.
func (c *platformClient) unexpected(a *platformAnswer) error {
	return unexpectedAnswer(c.base, a.res, a.body)
}
