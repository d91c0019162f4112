package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gotoolset/toolset/internal/atomicfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// AgentSummary is an agent as GET /api/v1/platform/agents lists it.
type AgentSummary struct {
	Name string `json:"name"`
	// Packages are the platform toolsets the agent file names (never
	// null).
	Packages  []string  `json:"packages"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Deployed says whether the agent was deployed (POST
	// .../agents/{name}/deploy): it then has an effective document.
	Deployed bool `json:"deployed"`
	// DeployedAt is when it was last deployed (or redeployed); null
	// before.
	DeployedAt *time.Time `json:"deployedAt"`
	// DeployedVersions are the toolset versions deployed, by toolset
	// (never null).
	DeployedVersions map[string]int `json:"deployedVersions"`
	// Skills are the platform skills the agent file attaches (never
	// null).
	Skills []string `json:"skills"`
	// DeployedSkillVersions are the skill versions deployed, by skill
	// (never null).
	DeployedSkillVersions map[string]int `json:"deployedSkillVersions"`
}

// AgentDetail is an agent as GET /api/v1/platform/agents/{name} returns
// it: its summary and the agent file as stored.
type AgentDetail struct {
	AgentSummary
	Source string `json:"source"`
	// Problems is what checking the stored file against the store finds
	// now: empty while the agent still checks. An agent is checked when
	// it is stored, but its packages move on: a re-upload that drops a
	// tool the agent configures or excludes, or a toolset removed with
	// force, shows here. A toolset that is not ready yet is no problem:
	// Toolsets says its status, and a deploy waits for it.
	Problems []Problem `json:"problems"`
	// Toolsets are the toolsets the file names, each with its status
	// (never null).
	Toolsets []AgentToolset `json:"toolsets"`
	// NeedsRedeploy says, for a deployed agent, that a deploy now would
	// make another effective document than the one deployed (the file,
	// a toolset's version or configuration changed), or could not be
	// made.
	NeedsRedeploy bool `json:"needsRedeploy"`
	// Redeploy is the last automatic redeploy, after a forced re-upload
	// of one of its toolsets; absent when there was none.
	Redeploy *Redeploy `json:"redeploy,omitempty"`
}

// agentStore keeps the agent files in a directory, one <name>.yaml each,
// and indexes the toolsets each uses.
type agentStore struct {
	dir string
	max int64
	log *slog.Logger

	// mu guards agents, users and changing.
	mu     sync.RWMutex
	agents map[string]agentRec
	// secrets keeps each agent's secret values apart from its file.
	secrets *secretStore
	// deploys are the agents' deployments, guarded by mu.
	deploys *deployStore
	// bg counts the redeploys waiting for a toolset to be ready; none
	// starts once bgClosed (both guarded by bgMu).
	bg       sync.WaitGroup
	bgMu     sync.Mutex
	bgClosed bool
	// users indexes agents by the toolsets they name: toolset → agents.
	users map[string]map[string]struct{}
	// skillUsers indexes agents by the skills they attach: skill →
	// agents.
	skillUsers map[string]map[string]struct{}
	// changing counts the uploads and removals of each toolset between
	// their in-use check and the store's being done with them (see
	// reserve): no agent may start using the toolset meanwhile, or the
	// check would be bypassed.
	changing map[string]int
}

type agentRec struct {
	packages []string
	// skills are the skills the file attaches.
	skills  []string
	updated time.Time
}

const agentExt = ".yaml"

func openAgents(dir string, max int64, log *slog.Logger) (*agentStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("platform: agents: %w", err)
	}
	a := &agentStore{dir: dir, max: max, log: log, agents: map[string]agentRec{}, users: map[string]map[string]struct{}{}, skillUsers: map[string]map[string]struct{}{}, changing: map[string]int{}}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("platform: agents: %w", err)
	}
	for _, de := range des {
		base, ok := strings.CutSuffix(de.Name(), agentExt)
		if !ok || toolpkg.CheckName(base) != nil || !de.Type().IsRegular() {
			if !strings.HasPrefix(de.Name(), ".") {
				log.Warn("platform: ignoring a file in the agents folder", "dir", dir, "file", de.Name())
			}
			continue
		}
		data, mod, err := a.read(base)
		if err != nil {
			log.Error("platform: cannot read a stored agent", "agent", base, "error", err)
			continue
		}
		f, err := parseAgent(data, base)
		if err != nil {
			// Kept, and listed, so that it can be replaced or deleted;
			// it names no toolset the platform can tell.
			log.Error("platform: a stored agent no longer parses", "agent", base, "error", err)
			a.set(base, agentRec{packages: []string{}, updated: mod})
			continue
		}
		a.set(base, agentRec{packages: agentPackages(f), skills: agentSkills(f), updated: mod})
	}
	base := filepath.Dir(dir)
	if a.secrets, err = openSecrets(filepath.Join(base, "secrets")); err != nil {
		return nil, err
	}
	if a.deploys, err = openDeploys(filepath.Join(base, "deploys"), a.agents, log); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *agentStore) path(name string) string { return filepath.Join(a.dir, name+agentExt) }

// read returns a stored agent file: never through a link, never more than
// the limit.
func (a *agentStore) read(name string) ([]byte, time.Time, error) {
	f, err := os.OpenFile(a.path(name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, time.Time{}, fmt.Errorf("%s is not a regular file", f.Name())
	}
	data, err := io.ReadAll(io.LimitReader(f, a.max+1))
	if err != nil {
		return nil, time.Time{}, err
	}
	if int64(len(data)) > a.max {
		return nil, time.Time{}, fmt.Errorf("%s is larger than %d bytes", f.Name(), a.max)
	}
	return data, fi.ModTime().UTC(), nil
}

// save writes an agent file atomically; the caller holds mu.
func (a *agentStore) save(name string, data []byte, packages, skills []string) (agentRec, error) {
	if err := atomicfile.Write(a.dir, ".agent-*", name+agentExt, data, 0o600); err != nil {
		return agentRec{}, err
	}
	rec := agentRec{packages: packages, skills: skills, updated: time.Now().UTC()}
	a.set(name, rec)
	return rec, nil
}

// set records an agent and indexes the toolsets it names; the caller
// holds mu.
func (a *agentStore) set(name string, rec agentRec) {
	a.remove(name)
	a.agents[name] = rec
	index(a.users, rec.packages, name)
	index(a.skillUsers, rec.skills, name)
}

// index records that agent uses each of names.
func index(users map[string]map[string]struct{}, names []string, agent string) {
	for _, p := range names {
		u := users[p]
		if u == nil {
			u = map[string]struct{}{}
			users[p] = u
		}
		u[agent] = struct{}{}
	}
}

// unindex forgets that agent uses each of names.
func unindex(users map[string]map[string]struct{}, names []string, agent string) {
	for _, p := range names {
		if u := users[p]; u != nil {
			delete(u, agent)
			if len(u) == 0 {
				delete(users, p)
			}
		}
	}
}

// remove forgets an agent; the caller holds mu.
func (a *agentStore) remove(name string) {
	rec, ok := a.agents[name]
	if !ok {
		return
	}
	unindex(a.users, rec.packages, name)
	unindex(a.skillUsers, rec.skills, name)
	delete(a.agents, name)
}

// usedBy returns the agents that name the toolset, sorted.
func (a *agentStore) usedBy(toolset string) []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.usedByLocked(toolset)
}

func (a *agentStore) usedByLocked(toolset string) []string {
	return sortedUsers(a.users[toolset])
}

// sortedUsers returns the agents of an index entry, sorted; nil for none.
func sortedUsers(u map[string]struct{}) []string {
	if len(u) == 0 {
		return nil
	}
	out := make([]string, 0, len(u))
	for name := range u {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// reserve checks that an upload or a removal of the toolset may proceed
// (no agent uses it, or force) and, if so, holds agents off it until the
// returned function is called; else it returns the agents in the way.
// The lock is not held meanwhile: the store's work may take long.
func (a *agentStore) reserve(toolset string, force bool) (end func(), users []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if users := a.usedByLocked(toolset); len(users) > 0 && !force {
		return nil, users
	}
	a.changing[toolset]++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.changing[toolset]--; a.changing[toolset] <= 0 {
			delete(a.changing, toolset)
		}
	}, nil
}

// summaryOf is an agent's summary; the caller holds the agents' lock.
func (s *Server) summaryOf(name string, rec agentRec) AgentSummary {
	sum := AgentSummary{Name: name, Packages: orEmpty(rec.packages), UpdatedAt: rec.updated, DeployedVersions: map[string]int{},
		Skills: orEmpty(rec.skills), DeployedSkillVersions: map[string]int{}}
	if dep := s.agents.deploys.recs[name]; dep != nil {
		at := dep.At
		sum.Deployed, sum.DeployedAt = true, &at
		maps.Copy(sum.DeployedVersions, dep.Versions)
		maps.Copy(sum.DeployedSkillVersions, dep.SkillVersions)
	}
	return sum
}

// GET /api/v1/platform/agents?page=&pageSize= → 200 List[AgentSummary].
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	pg, ok := pageQuery(w, r)
	if !ok {
		return
	}
	s.agents.mu.RLock()
	all := make([]AgentSummary, 0, len(s.agents.agents))
	for name, rec := range s.agents.agents {
		all = append(all, s.summaryOf(name, rec))
	}
	s.agents.mu.RUnlock()
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	out := List[AgentSummary]{Data: []AgentSummary{}, Meta: ListMeta{Page: pg.page, PageSize: pg.size, Total: len(all)}}
	lo, hi := pg.window(len(all))
	out.Data = all[lo:hi]
	writeJSON(w, http.StatusOK, out)
}

// PUT /api/v1/platform/agents/{name} (body: the agent file) → 201 (new)
// or 200 (replaced) AgentDetail; 422 InvalidAgent with every problem.
func (s *Server) putAgent(w http.ResponseWriter, r *http.Request) {
	s.acceptAgent(w, r, false)
}

// acceptAgent reads, parses and checks the agent file of a PUT and stores
// it; with dryRun (POST .../check) it answers what it would store
// instead, storing nothing.
func (s *Server) acceptAgent(w http.ResponseWriter, r *http.Request, dryRun bool) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	data, err := io.ReadAll(s.bodyLimit(w, r, s.opts.MaxAgentBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		WriteError(w, http.StatusRequestEntityTooLarge, "RequestTooLarge", fmt.Sprintf("the agent file is larger than %d bytes", s.opts.MaxAgentBytes))
		return
	}
	if timedOut(err) {
		s.requestTimeout(w)
		return
	}
	if err != nil {
		WriteError(w, http.StatusBadRequest, "InvalidRequest", "reading the agent file: "+cut(err.Error()))
		return
	}
	if dryRun {
		// The agent's stored secrets are read for the values the file
		// keeps with the placeholder: held off a PUT meanwhile.
		s.agents.mu.RLock()
		defer s.agents.mu.RUnlock()
		s.answerCheck(w, r, name, data)
		return
	}
	s.agents.mu.Lock()
	defer s.agents.mu.Unlock()
	rec, in, existed, ref := s.storeAgentLocked(r.Context(), name, data)
	if ref != nil {
		ref.write(w)
		return
	}
	status := http.StatusOK
	if !existed {
		status = http.StatusCreated
	}
	w.Header().Set("Location", apiPrefix+"agents/"+name)
	writeJSON(w, status, s.agentDetail(name, rec, in))
}

// agentRefusal is why an agent file was not stored or an agent not
// deployed: the API answers it as JSON, the page as a page.
type agentRefusal struct {
	status   int
	code     string
	msg      string
	problems []Problem
}

func (a *agentRefusal) write(w http.ResponseWriter) {
	if a.problems != nil {
		writeProblems(w, a.status, a.code, a.msg, a.problems)
		return
	}
	WriteError(w, a.status, a.code, a.msg)
}

// storeAgentLocked parses and checks an agent file, keeps its secrets
// apart and stores it: what a PUT does, and the page's forms too. The
// caller holds the agents' lock.
func (s *Server) storeAgentLocked(ctx context.Context, name string, data []byte) (rec agentRec, in *inspection, existed bool, ref *agentRefusal) {
	in = s.inspect(ctx, name, data)
	if in.file == nil || len(in.problems) > 0 {
		return rec, in, false, &agentRefusal{http.StatusUnprocessableEntity, "InvalidAgent", "the agent file is invalid: " + problemCount(len(in.problems)), append([]Problem{}, in.problems...)}
	}
	// Checked under the lock: no toolset the agent names can be removed
	// between the check and the save, nor start being replaced.
	for _, p := range agentPackages(in.file) {
		if s.agents.changing[p] > 0 {
			return rec, in, false, &agentRefusal{status: http.StatusConflict, code: "Conflict", msg: fmt.Sprintf("toolset %q is being uploaded or removed; put the agent again once that is done", p)}
		}
	}
	_, existed = s.agents.agents[name]
	// The secrets first: a file saved with placeholders whose values are
	// not stored would lose them.
	if err := s.agents.secrets.save(name, keptSecrets(in.secrets)); err != nil {
		s.log.Error("platform: saving an agent's secrets failed", "agent", name, "error", err)
		return rec, in, false, &agentRefusal{status: http.StatusInternalServerError, code: "InternalError", msg: "the agent could not be saved; the server's log says why"}
	}
	rec, err := s.agents.save(name, []byte(in.source), agentPackages(in.file), agentSkills(in.file))
	if err != nil {
		s.log.Error("platform: saving an agent failed", "agent", name, "error", err)
		return rec, in, false, &agentRefusal{status: http.StatusInternalServerError, code: "InternalError", msg: "the agent could not be saved; the server's log says why"}
	}
	return rec, in, existed, nil
}

// GET /api/v1/platform/agents/{name} → 200 AgentDetail.
func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	s.agents.mu.RLock()
	defer s.agents.mu.RUnlock()
	rec, ok := s.agents.agents[name]
	if !ok {
		WriteError(w, http.StatusNotFound, "NotFound", "no such agent: "+quotePath(name))
		return
	}
	data, _, err := s.agents.read(name)
	if err != nil {
		s.log.Error("platform: reading an agent failed", "agent", name, "error", err)
		WriteError(w, http.StatusInternalServerError, "InternalError", "the agent could not be read; the server's log says why")
		return
	}
	writeJSON(w, http.StatusOK, s.agentDetail(name, rec, s.inspect(r.Context(), name, data)))
}

// DELETE /api/v1/platform/agents/{name} → 204.
func (s *Server) deleteAgent(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	s.agents.mu.Lock()
	defer s.agents.mu.Unlock()
	if _, ok := s.agents.agents[name]; !ok {
		WriteError(w, http.StatusNotFound, "NotFound", "no such agent: "+quotePath(name))
		return
	}
	if err := os.Remove(s.agents.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Error("platform: deleting an agent failed", "agent", name, "error", err)
		WriteError(w, http.StatusInternalServerError, "InternalError", "the agent could not be deleted; the server's log says why")
		return
	}
	if err := s.agents.secrets.remove(name); err != nil {
		s.log.Error("platform: deleting an agent's secrets failed", "agent", name, "error", err)
	}
	if err := s.agents.deploys.remove(name); err != nil {
		s.log.Error("platform: deleting an agent's deployment failed", "agent", name, "error", err)
	}
	s.agents.remove(name)
	w.WriteHeader(http.StatusNoContent)
}
