package platform

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gotoolset/toolset/platform/agentfile"
)

// credentialName is what an environment variable holding a credential is
// called: API_KEY, GITHUB_TOKEN, DB_PASSWORD, ...
var credentialName = regexp.MustCompile(`(?i)(key|token|secret|passw|credential|auth)`)

// literalCredentials finds the credentials an agent's MCP entries give
// in clear: a header value, or the value of an environment variable
// named like a credential, that is not a ${NAME} reference. The platform
// stores agent documents where every token may read them and never runs
// their MCP servers, so such a value is refused rather than kept: the
// runner that resolves the file gives the variable.
func literalCredentials(f *agentfile.File) []agentfile.Problem {
	var probs []agentfile.Problem
	for _, e := range f.Toolsets {
		if e.MCP == nil {
			continue
		}
		refuse := func(what, name string) {
			probs = append(probs, agentfile.Problem{File: f.Filename, Line: e.Pos.Line, Column: e.Pos.Column, Message: fmt.Sprintf(
				"the MCP %s %q is given in clear: write it as ${NAME}, a variable of the runner that resolves the agent (the platform shows agent documents to every token that may read)", what, name)})
		}
		for _, h := range sortedNames(e.MCP.Headers) {
			if !strings.Contains(e.MCP.Headers[h], "${") {
				refuse("header", h)
			}
		}
		for _, v := range sortedNames(e.MCP.Env) {
			if credentialName.MatchString(v) && !strings.Contains(e.MCP.Env[v], "${") {
				refuse("environment variable", v)
			}
		}
	}
	return probs
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
