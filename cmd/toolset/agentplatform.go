package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// Bounds of "agent check --platform".
const (
	// platformCheckTimeout bounds the whole exchange with the platform.
	platformCheckTimeout = time.Minute
	// maxPlatformAnswer bounds the answer read: the agent file sent back
	// (at most agentfile.MaxFileBytes, JSON-escaped) or its problems.
	maxPlatformAnswer = 8 << 20
	// maxShownAnswer bounds how much of an unexpected answer is shown.
	maxShownAnswer = 256
)

// platformURL checks the --platform URL: http or https, a host, and
// nothing a token could be confused with.
func platformURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, usagef("--platform must be the platform's http:// or https:// URL, such as http://127.0.0.1:8080, not %q", s)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, usagef("--platform %q: give the URL without user, query or fragment (the token comes from --token-file or $%s)", s, platform.TokenEnv)
	}
	return u, nil
}

// checkOnPlatform sends the agent file to the platform's check (POST
// /api/v1/platform/agents/{name}/check, which stores nothing) and prints
// its problems as the local check does.
func checkOnPlatform(ctx context.Context, base *url.URL, tokenFile string, f *agentfile.File, data []byte, stdout io.Writer) error {
	if toolpkg.CheckName(f.Name) != nil {
		return fmt.Errorf("%s: the agent's name %q cannot name an agent on the platform: use 1 to 64 letters, digits, '_' or '-', starting with a letter or digit", f.Filename, f.Name)
	}
	c, err := platformClientFor(base, tokenFile)
	if err != nil {
		return err
	}
	c.doing = "checking on"
	ctx, cancel := context.WithTimeoutCause(ctx, platformCheckTimeout, fmt.Errorf("no answer within %s", platformCheckTimeout))
	defer cancel()
	a, err := c.do(ctx, http.MethodPost, []string{"api/v1/platform/agents", f.Name, "check"}, nil, "application/yaml", data, maxPlatformAnswer)
	if err != nil {
		return err
	}
	res, body := a.res, a.body
	switch res.StatusCode {
	case http.StatusOK:
		var d platform.AgentDetail
		if json.Unmarshal(body, &d) != nil || d.Name != f.Name {
			return unexpectedAnswer(base, res, body)
		}
		fmt.Fprintln(stdout, "ok")
		return nil
	case http.StatusUnauthorized:
		return c.unauthorized("")
	case http.StatusUnprocessableEntity:
		var eb platform.ErrorBody
		if json.Unmarshal(body, &eb) != nil || eb.Error.Code != "InvalidAgent" || len(eb.Error.Problems) == 0 {
			return unexpectedAnswer(base, res, body)
		}
		for _, p := range eb.Error.Problems {
			fmt.Fprintln(stdout, printable(agentfile.Problem{File: f.Filename, Line: p.Line, Column: p.Column, Message: p.Message}.String()))
		}
		return &problemsError{file: f.Filename, n: len(eb.Error.Problems)}
	}
	return unexpectedAnswer(base, res, body)
}

// unexpectedAnswer says what the platform answered instead of a check's
// result: its error's code and message, or the start of the body. The
// text is bounded here and made printable where the error is printed.
func unexpectedAnswer(base *url.URL, res *http.Response, body []byte) error {
	status := fmt.Sprintf("%d %s", res.StatusCode, http.StatusText(res.StatusCode))
	var eb platform.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		return fmt.Errorf("the platform at %s answered %s: %s: %s", base, status, bounded(eb.Error.Code), bounded(eb.Error.Message))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return fmt.Errorf("the platform at %s answered %s, with no body; is it a toolset platform?", base, status)
	}
	return fmt.Errorf("the platform at %s answered %s, which is not a platform's answer (is it a toolset platform?): %s", base, status, bounded(string(body)))
}

// bounded puts untrusted text on one line and cuts it to maxShownAnswer
// bytes.
func bounded(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxShownAnswer {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:maxShownAnswer], ""), len(s))
}
