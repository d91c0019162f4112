package platform

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// The platform only parses and checks agent files: it never starts what
// one names (an MCP server's command would run on this host).

// parseAgent parses an agent file stored under name; the name the file
// gives the agent, if any, must be that one.
func parseAgent(data []byte, name string) (*agentfile.File, error) {
	f, err := agentfile.Parse(data, name+agentExt)
	if err != nil {
		return nil, err
	}
	if f.Name != "" && f.Name != name {
		return nil, &agentfile.CheckError{Problems: []agentfile.Problem{{File: f.Filename,
			Message: fmt.Sprintf("the file names the agent %s, but it is stored as %q: the names must match", quotePath(f.Name), name)}}}
	}
	return f, nil
}

func agentPackages(f *agentfile.File) []string {
	return orEmpty(f.Packages())
}

// checkAgent checks the file against the store's toolsets: each package
// it names must exist and be ready.
func checkAgent(ctx context.Context, f *agentfile.File, store *toolpkg.Store) error {
	return agentfile.Check(ctx, f, &agentfile.Options{Store: store})
}

// agentError answers 422 InvalidAgent with every problem of an agent
// file.
func (s *Server) agentError(w http.ResponseWriter, err error) {
	var ce *agentfile.CheckError
	if !errors.As(err, &ce) {
		writeProblems(w, http.StatusUnprocessableEntity, "InvalidAgent", "the agent file is invalid", []Problem{{Message: cut(s.scrub(err.Error()))}})
		return
	}
	probs := make([]Problem, len(ce.Problems))
	for i, p := range ce.Problems {
		probs[i] = Problem{Line: p.Line, Column: p.Column, Message: cut(s.scrub(p.Message))}
	}
	writeProblems(w, http.StatusUnprocessableEntity, "InvalidAgent", "the agent file is invalid ("+strconv.Itoa(len(probs))+" problems)", probs)
}
