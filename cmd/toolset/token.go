package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
)

// Bounds of "platform token".
const (
	// platformTokenTimeout bounds each exchange with the platform.
	platformTokenTimeout = 30 * time.Second
	// maxTokenAnswer bounds an answer read: a page of the listing, at
	// most 500 tokens of a few hundred bytes each.
	maxTokenAnswer = 1 << 20
	// defaultPlatformURL is where "toolset platform" listens unless told.
	defaultPlatformURL = "http://127.0.0.1:8080"
)

// cmdPlatformToken manages the platform's stored tokens over its API,
// with an admin token (--token-file or $TOOLSET_PLATFORM_TOKEN):
//
//	toolset platform token create NAME --scope read,publish
//	toolset platform token list
//	toolset platform token revoke NAME
func cmdPlatformToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("platform token: say create, list or revoke")
	}
	fs := flag.NewFlagSet("platform token", flag.ContinueOnError)
	base := fs.String("platform", defaultPlatformURL, "the platform's URL")
	tokenFile := fs.String("token-file", "", "a file holding an admin token (default: $"+platform.TokenEnv+")")
	verb, rest := args[0], args[1:]
	var scope *string
	var asJSON *bool
	want, names := 0, "no argument"
	switch verb {
	case "create":
		scope = fs.String("scope", "", "the token's scopes, comma-separated: "+scopeList())
		want, names = 1, "the token's NAME"
	case "list":
		asJSON = fs.Bool("json", false, "print the listing as JSON")
	case "revoke":
		want, names = 1, "the token's NAME"
	default:
		return usagef("platform token: unknown command %q: say create, list or revoke", verb)
	}
	pos, err := parse(fs, rest, want, names)
	if err != nil {
		return err
	}
	u, err := platformURL(*base)
	if err != nil {
		return err
	}
	pc, err := platformClientFor(u, *tokenFile)
	if err != nil {
		return err
	}
	c := &tokenClient{pc}
	switch verb {
	case "create":
		return c.create(ctx, pos[0], *scope, stdout, stderr)
	case "list":
		return c.list(ctx, *asJSON, stdout)
	default:
		return c.revoke(ctx, pos[0], stderr)
	}
}

func scopeList() string {
	s := make([]string, len(platform.AllScopes))
	for i, sc := range platform.AllScopes {
		s[i] = string(sc)
	}
	return strings.Join(s, ", ")
}

func checkTokenName(name string) error {
	if toolpkg.CheckName(name) != nil {
		return usagef("platform token: %q cannot name a token: use 1 to 64 letters, digits, '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// tokenClient talks to the tokens' routes of a platform.
type tokenClient struct{ *platformClient }

// create prints the new token's secret alone on stdout, so that a
// script can take it, and what it is on stderr.
func (c *tokenClient) create(ctx context.Context, name, scope string, stdout, stderr io.Writer) error {
	if err := checkTokenName(name); err != nil {
		return err
	}
	scopes, err := platform.ParseScopes(scope)
	if err != nil {
		return usagef("platform token create: --scope: %v", err)
	}
	body, err := json.Marshal(map[string]any{"name": name, "scopes": scopes})
	if err != nil {
		return err
	}
	res, data, err := c.call(ctx, http.MethodPost, []string{"api/v1/platform/tokens"}, nil, body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusCreated {
		return c.refused(res, data)
	}
	var nt platform.NewToken
	if json.Unmarshal(data, &nt) != nil || nt.Name != name || !strings.HasPrefix(nt.Secret, platform.TokenPrefix) {
		return unexpectedAnswer(c.base, res, data)
	}
	fmt.Fprintln(stdout, nt.Secret)
	fmt.Fprintf(stderr, "token %s created with the scopes %s; its secret, above, is shown this once: keep it now\n", nt.Name, joinScopes(nt.Scopes))
	return nil
}

// list prints every token, a page at a time from the platform.
func (c *tokenClient) list(ctx context.Context, asJSON bool, stdout io.Writer) error {
	var all []platform.TokenInfo
	for page := 1; ; page++ {
		q := url.Values{"page": {fmt.Sprint(page)}, "pageSize": {"500"}}
		res, data, err := c.call(ctx, http.MethodGet, []string{"api/v1/platform/tokens"}, q, nil)
		if err != nil {
			return err
		}
		if res.StatusCode != http.StatusOK {
			return c.refused(res, data)
		}
		var l platform.List[platform.TokenInfo]
		if json.Unmarshal(data, &l) != nil || l.Data == nil {
			return unexpectedAnswer(c.base, res, data)
		}
		all = append(all, l.Data...)
		// The platform bounds its tokens: a listing that does not end
		// is not one.
		if len(l.Data) == 0 || len(all) >= l.Meta.Total || len(all) > platform.MaxTokens {
			break
		}
	}
	if asJSON {
		if all == nil {
			all = []platform.TokenInfo{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCOPES\tCREATED\tLAST USED")
	for _, t := range all {
		used := "never"
		if t.LastUsedAt != nil {
			used = t.LastUsedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable(bounded(t.Name)), printable(bounded(joinScopes(t.Scopes))), t.CreatedAt.Format(time.RFC3339), used)
	}
	return tw.Flush()
}

func (c *tokenClient) revoke(ctx context.Context, name string, stderr io.Writer) error {
	if err := checkTokenName(name); err != nil {
		return err
	}
	res, data, err := c.call(ctx, http.MethodDelete, []string{"api/v1/platform/tokens", name}, nil, nil)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusNoContent {
		return c.refused(res, data)
	}
	fmt.Fprintf(stderr, "token %s revoked: it, and every page session opened with it, opens nothing from now on\n", name)
	return nil
}

func joinScopes(scopes []platform.Scope) string {
	s := make([]string, len(scopes))
	for i, sc := range scopes {
		s[i] = string(sc)
	}
	return strings.Join(s, ",")
}

// call sends one request and reads its answer, bounded in size and
// time.
func (c *tokenClient) call(ctx context.Context, method string, path []string, q url.Values, body []byte) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, platformTokenTimeout, fmt.Errorf("no answer within %s", platformTokenTimeout))
	defer cancel()
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	a, err := c.do(ctx, method, path, q, contentType, body, maxTokenAnswer)
	if err != nil {
		return nil, nil, err
	}
	return a.res, a.body, nil
}

// refused says why the platform refused a request.
func (c *tokenClient) refused(res *http.Response, data []byte) error {
	switch res.StatusCode {
	case http.StatusUnauthorized:
		return c.unauthorized(" (an admin token)")
	case http.StatusForbidden:
		var eb platform.ErrorBody
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code == "Forbidden" {
			return fmt.Errorf("the platform at %s refused: %s (managing tokens needs an admin token)", c.base, bounded(eb.Error.Message))
		}
	}
	return unexpectedAnswer(c.base, res, data)
}
