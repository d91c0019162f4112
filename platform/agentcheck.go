package platform

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gotoolset/toolset"
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

// agentSkills are the skills the file attaches, in its order.
func agentSkills(f *agentfile.File) []string {
	out := make([]string, len(f.Skills))
	for i, sk := range f.Skills {
		out[i] = sk.Name
	}
	return out
}

// checkAgent checks the file against the store's toolsets: each package
// it names must exist and be ready (with a Distributor, confirmed by a
// runtime); and against the skills: each it attaches must have been
// uploaded (a skill not ready yet keeps the agent from a deploy, not from
// being stored).
func (s *Server) checkAgent(ctx context.Context, f *agentfile.File) error {
	return agentfile.Check(ctx, f, &agentfile.Options{Packages: serverPackages{s}, Skills: func(name string) bool { return s.skills.get(name) != nil }})
}

// serverPackages are the store's toolsets as the server shows them, for
// agentfile.Check.
type serverPackages struct{ s *Server }

func (p serverPackages) Info(name string) (toolpkg.Info, error) { return p.s.info(name) }

func (p serverPackages) ToolsetWithConfig(name string, cfg toolpkg.Config) toolset.Toolset {
	return p.s.store.ToolsetWithConfig(name, cfg)
}

// problemsOf turns the error of parsing or checking an agent file into
// its problems, bounded, the store's folder never named.
func (s *Server) problemsOf(err error) []Problem {
	var ce *agentfile.CheckError
	if !errors.As(err, &ce) {
		return []Problem{{Message: cut(s.scrub(err.Error()))}}
	}
	probs := make([]Problem, len(ce.Problems))
	for i, p := range ce.Problems {
		probs[i] = Problem{Line: p.Line, Column: p.Column, Message: cut(s.scrub(p.Message))}
	}
	return probs
}

// POST /api/v1/platform/agents/{name}/check (body: the agent file) → 200
// AgentDetail as a PUT would store it; 422 InvalidAgent with every
// problem, as the PUT answers them. Nothing is stored, so the check does
// not make the agent's packages in use. A route of its own rather than a
// PUT parameter: a server that does not know it answers 404 instead of
// storing the agent.
func (s *Server) postAgentCheck(w http.ResponseWriter, r *http.Request) {
	s.acceptAgent(w, r, true)
}

// answerCheck checks an agent file against the store and answers what a
// PUT would store; the caller holds the agents' lock.
func (s *Server) answerCheck(w http.ResponseWriter, r *http.Request, name string, data []byte) {
	in := s.inspect(r.Context(), name, data)
	if in.file == nil || len(in.problems) > 0 {
		writeProblems(w, http.StatusUnprocessableEntity, "InvalidAgent", "the agent file is invalid: "+problemCount(len(in.problems)), in.problems)
		return
	}
	rec := agentRec{packages: agentPackages(in.file), skills: agentSkills(in.file), updated: time.Now().UTC()}
	writeJSON(w, http.StatusOK, s.agentDetail(name, rec, in))
}
