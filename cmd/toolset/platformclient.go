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

// platformClient speaks to a platform's API: one base URL, one bearer
// token, no redirect followed (a redirect would carry the token
// elsewhere), every answer read within a bound.
type platformClient struct {
	base  *url.URL
	token string
	http  *http.Client
}

// newPlatformClient checks the --platform URL and loads the token from
// tokenFile or $TOOLSET_PLATFORM_TOKEN; with neither, requests go without
// one (a platform that needs one answers 401, said then).
func newPlatformClient(addr, tokenFile string) (*platformClient, error) {
	base, err := platformURL(addr)
	if err != nil {
		return nil, err
	}
	token, err := platform.LoadToken(tokenFile)
	if errors.Is(err, platform.ErrNoToken) {
		token = ""
	} else if err != nil {
		return nil, err
	}
	return &platformClient{base: base, token: token, http: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// platformAnswer is an answer read whole: its status and body.
type platformAnswer struct {
	status int
	body   []byte
	res    *http.Response
}

// do sends a request to path (under the base URL, each segment escaped)
// and reads at most max bytes of the answer. A 401 is an error of its
// own; other statuses are the caller's to judge.
func (c *platformClient) do(ctx context.Context, method string, path []string, query url.Values, contentType string, body []byte, max int64) (*platformAnswer, error) {
	target := c.base.JoinPath(path...)
	if len(query) > 0 {
		target.RawQuery = query.Encode()
	}
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
			return nil, fmt.Errorf("%s %s on the platform at %s: %w", method, target.Path, c.base, context.Cause(ctx))
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
		return nil, fmt.Errorf("reading the platform's answer to %s %s: %w", method, target.Path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("the platform at %s answered %s %s with more than %d bytes", c.base, method, target.Path, max)
	}
	if res.StatusCode == http.StatusUnauthorized {
		if c.token == "" {
			return nil, fmt.Errorf("the platform at %s requires a bearer token: give --token-file FILE or set $%s", c.base, platform.TokenEnv)
		}
		return nil, fmt.Errorf("the platform at %s refused the bearer token (401 Unauthorized)", c.base)
	}
	return &platformAnswer{status: res.StatusCode, body: data, res: res}, nil
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
			return false, fmt.Errorf("the platform at %s answered GET %s with what is not its JSON: %s", c.base, "/"+joinPath(path), bounded(string(a.body)))
		}
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, c.unexpected(a)
}

// unexpected is the error for an answer the caller did not expect: the
// platform's error code and message when it gave them.
func (c *platformClient) unexpected(a *platformAnswer) error {
	return unexpectedAnswer(c.base, a.res, a.body)
}

// joinPath joins path segments for messages.
func joinPath(path []string) string {
	var b bytes.Buffer
	for i, p := range path {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(p)
	}
	return b.String()
}
