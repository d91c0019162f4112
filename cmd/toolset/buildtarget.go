package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"time"

	"github.com/gotoolset/toolset/platform"
)

// Bounds of asking a platform for its build target.
const (
	buildTargetTimeout   = 30 * time.Second
	maxBuildTargetAnswer = 4096
)

// targetWord is what an OS or an architecture the platform names may
// be: it goes into a directory's name and the build's environment.
var targetWord = regexp.MustCompile(`^[a-z0-9][a-z0-9_]{0,31}$`)

// packageTarget returns the target of toolset package: the flags, else
// $SAM_TOOL_TARGET_OS and $SAM_TOOL_TARGET_ARCH, else, with --platform,
// what the platform builds for, else empty (toolpkg.Build then builds
// for this machine).
func packageTarget(ctx context.Context, goos, goarch, platformAddr, tokenFile string, stderr io.Writer) (string, string, error) {
	if goos == "" {
		goos = os.Getenv("SAM_TOOL_TARGET_OS")
	}
	if goarch == "" {
		goarch = os.Getenv("SAM_TOOL_TARGET_ARCH")
	}
	if platformAddr == "" || (goos != "" && goarch != "") {
		if platformAddr != "" {
			fmt.Fprintf(stderr, "note: building for %s/%s, from --os/--arch or $SAM_TOOL_TARGET_OS/ARCH, not asking the platform\n", printable(goos), printable(goarch))
		}
		return goos, goarch, nil
	}
	base, err := platformURL(platformAddr)
	if err != nil {
		return "", "", err
	}
	t, err := fetchBuildTarget(ctx, base, tokenFile)
	if err != nil {
		return "", "", err
	}
	if goos == "" {
		goos = t.OS
	}
	if goarch == "" {
		goarch = t.Arch
	}
	return goos, goarch, nil
}

// fetchBuildTarget asks the platform at base which OS and architecture
// its packages are built for (GET /api/v1/platform/toolsets/buildTarget).
func fetchBuildTarget(ctx context.Context, base *url.URL, tokenFile string) (*platform.BuildTarget, error) {
	token, err := platform.LoadToken(tokenFile)
	if errors.Is(err, platform.ErrNoToken) {
		token = "" // a platform that needs one answers 401, said below
	} else if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, buildTargetTimeout, fmt.Errorf("no answer within %s", buildTargetTimeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath("api/v1/platform/toolsets/buildTarget").String(), nil)
	if err != nil {
		return nil, err
	}
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
		return nil, fmt.Errorf("asking the platform at %s for its build target: %w", base, context.Cause(ctx))
	}
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("the platform at %s cannot be reached: %w", base, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBuildTargetAnswer+1))
	if err != nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the build target of the platform at %s: %w", base, err)
	}
	if len(body) > maxBuildTargetAnswer {
		return nil, fmt.Errorf("the platform at %s answered %d %s with more than %d bytes for its build target", base, res.StatusCode, http.StatusText(res.StatusCode), maxBuildTargetAnswer)
	}
	switch res.StatusCode {
	case http.StatusOK:
		var t platform.BuildTarget
		if json.Unmarshal(body, &t) != nil || !targetWord.MatchString(t.OS) || !targetWord.MatchString(t.Arch) {
			return nil, fmt.Errorf("the platform at %s answered a build target that is not one (an OS and an architecture such as linux and arm64): %s", base, bounded(string(body)))
		}
		return &t, nil
	case http.StatusUnauthorized:
		if token == "" {
			return nil, fmt.Errorf("the platform at %s requires a bearer token: give --token-file FILE or set $%s", base, platform.TokenEnv)
		}
		return nil, fmt.Errorf("the platform at %s refused the bearer token (401 Unauthorized)", base)
	}
	return nil, unexpectedAnswer(base, res, body)
}
