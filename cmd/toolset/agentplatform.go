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
	token, err := platform.LoadToken(tokenFile)
	if errors.Is(err, platform.ErrNoToken) {
		// A platform serving without authentication needs none; one that
		// needs it answers 401, said below.
		token = ""
	} else if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, platformCheckTimeout, fmt.Errorf("no answer within %s", platformCheckTimeout))
	defer cancel()
	target := base.JoinPath("api/v1/platform/agents", f.Name, "check")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{
		// A redirect is an answer of its own, never followed with the
		// token.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	res, err := client.Do(req)
	if err != nil && ctx.Err() != nil {
		// Interrupted, or out of time.
		return fmt.Errorf("checking on the platform at %s: %w", base, context.Cause(ctx))
	}
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("the platform at %s cannot be reached: %w", base, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxPlatformAnswer+1))
	if err != nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		return fmt.Errorf("reading the answer of the platform at %s: %w", base, err)
	}
	if len(body) > maxPlatformAnswer {
		return fmt.Errorf("the platform at %s answered %d %s with more than %d bytes", base, res.StatusCode, http.StatusText(res.StatusCode), maxPlatformAnswer)
	}
	switch res.StatusCode {
	case http.StatusOK:
		var d platform.AgentDetail
		if json.Unmarshal(body, &d) != nil || d.Name != f.Name {
			return unexpectedAnswer(base, res, body)
		}
		fmt.Fprintln(stdout, "ok")
		return nil
	case http.StatusUnauthorized:
		if token == "" {
			return fmt.Errorf("the platform at %s requires a bearer token: give --token-file FILE or set $%s", base, platform.TokenEnv)
		}
		return fmt.Errorf("the platform at %s refused the bearer token (401 Unauthorized)", base)
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
