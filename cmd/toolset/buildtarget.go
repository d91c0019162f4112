package main

import (
	"context"
	"encoding/json"
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
	c, err := platformClientFor(base, tokenFile)
	if err != nil {
		return nil, err
	}
	c.doing = "asking for the build target of"
	ctx, cancel := context.WithTimeoutCause(ctx, buildTargetTimeout, fmt.Errorf("no answer within %s", buildTargetTimeout))
	defer cancel()
	a, err := c.do(ctx, http.MethodGet, []string{"api/v1/platform/toolsets/buildTarget"}, nil, "", nil, maxBuildTargetAnswer)
	if err != nil {
		return nil, err
	}
	res, body := a.res, a.body
	switch res.StatusCode {
	case http.StatusOK:
		var t platform.BuildTarget
		if json.Unmarshal(body, &t) != nil || !targetWord.MatchString(t.OS) || !targetWord.MatchString(t.Arch) {
			return nil, fmt.Errorf("the platform at %s answered a build target that is not one (an OS and an architecture such as linux and arm64): %s", base, bounded(string(body)))
		}
		return &t, nil
	case http.StatusUnauthorized:
		return nil, c.unauthorized("")
	}
	return nil, unexpectedAnswer(base, res, body)
}
