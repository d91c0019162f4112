package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gotoolset/toolset/internal/atomicfile"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// AgentToolset is a toolset an agent names, as the platform has it now:
// what the page shows a dot for.
type AgentToolset struct {
	Name string `json:"name"`
	// Status is the toolset's status (created, pending, ready, failed,
	// removed), or unknown when the store has no toolset of that name.
	Status toolpkg.Status `json:"status"`
	// Errors are the discovery errors of a failed toolset (never null).
	Errors []string `json:"errors"`
	// ServingVersion is the version whose tools a deploy would give the
	// agent; 0 when none serves.
	ServingVersion int `json:"servingVersion"`
	// DeployedVersion is the version the agent's deployment has; 0 when
	// not deployed.
	DeployedVersion int `json:"deployedVersion"`
}

// StatusUnknown is the status of a toolset an agent names that the store
// does not have.
const StatusUnknown toolpkg.Status = "unknown"

// Redeploy is what the last automatic redeploy of an agent did: after a
// forced re-upload of one of its toolsets became ready, the agent was
// deployed again with the new version, or could not be (Problems say why,
// and the deployment stays as it was).
type Redeploy struct {
	At          time.Time `json:"at"`
	Toolset     string    `json:"toolset"`
	FromVersion int       `json:"fromVersion"`
	ToVersion   int       `json:"toVersion"`
	// ToolDiff is how the agent's tools changed (empty when it could not
	// be redeployed).
	ToolDiff ToolDiff `json:"toolDiff"`
	// Problems say why the agent could not be redeployed; empty when it
	// was.
	Problems []Problem `json:"problems"`
}

// ToolDiff is how a set of tools changed: tool names added, removed, and
// kept with another description, parameters or configuration schema.
// Never null.
type ToolDiff struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
}

// deployRec is an agent's deployment, kept in
// <store>/.platform/deploys/<agent>.json.
type deployRec struct {
	At time.Time `json:"deployedAt"`
	// Versions are the toolset versions deployed, by toolset.
	Versions map[string]int `json:"versions"`
	// SkillVersions are the skill versions deployed, by skill.
	SkillVersions map[string]int `json:"skillVersions,omitempty"`
	// Document is the effective document deployed (YAML).
	Document string `json:"document"`
	// Tools are the fingerprints of the tools deployed, by full name,
	// for the diff of a redeploy.
	Tools map[string]string `json:"tools"`
	// Redeploy is the last automatic redeploy, if any.
	Redeploy *Redeploy `json:"redeploy,omitempty"`
}

// maxDeployFile bounds a stored deployment: its document is made from a
// bounded agent file and bounded tool schemas.
const maxDeployFile = 64 << 20

// deployStore keeps the deployments, one file each; its map is guarded by
// the agent store's lock.
type deployStore struct {
	dir  string
	recs map[string]*deployRec
}

func openDeploys(dir string, agents map[string]agentRec, log interface {
	Error(string, ...any)
}) (*deployStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("platform: deployments: %w", err)
	}
	d := &deployStore{dir: dir, recs: map[string]*deployRec{}}
	for name := range agents {
		rec, err := d.read(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			log.Error("platform: cannot read an agent's deployment", "agent", name, "error", err)
			continue
		}
		d.recs[name] = rec
	}
	return d, nil
}

func (d *deployStore) path(name string) string { return filepath.Join(d.dir, name+".json") }

func (d *deployStore) read(name string) (*deployRec, error) {
	f, err := os.OpenFile(d.path(name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", f.Name())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxDeployFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxDeployFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", f.Name(), maxDeployFile)
	}
	var rec deployRec
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return &rec, nil
}

// save keeps a deployment; the caller holds the agents' lock.
func (d *deployStore) save(name string, rec *deployRec) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(d.dir, ".deploy-*", name+".json", data, 0o600); err != nil {
		return err
	}
	d.recs[name] = rec
	return nil
}

// remove forgets a deployment; the caller holds the agents' lock.
func (d *deployStore) remove(name string) error {
	if err := os.Remove(d.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	delete(d.recs, name)
	return nil
}

// inspection is what the platform makes of a stored or sent agent file
// against the store now.
type inspection struct {
	file *agentfile.File
	// source is the file as answers show it: every secret redacted.
	source string
	// toolsets are the toolsets it names, with their status.
	toolsets []AgentToolset
	// problems refuse a PUT: the file does not parse or check against
	// the toolsets that are ready, or names a toolset the store lacks.
	problems []Problem
	// notDeployable say, with problems, why a deploy is refused now.
	notDeployable []Problem
	// effective is what a deploy now would make; nil when refused.
	effective *deployRec
	// secrets are the values kept apart, by address.
	secrets map[string]any
}

// inspect parses an agent file (data: as sent, or as stored), puts back
// the agent's stored secrets where it holds the placeholder, checks it
// against the store and makes its effective document when it can.
func (s *Server) inspect(ctx context.Context, name string, data []byte) *inspection {
	in := &inspection{source: "", toolsets: []AgentToolset{}, problems: []Problem{}}
	f, err := parseAgent(data, name)
	if err != nil {
		in.problems = s.problemsOf(err)
		in.notDeployable = in.problems
		return in
	}
	in.file = f
	if probs := literalCredentials(f); len(probs) > 0 {
		in.problems = s.problemsOf(&agentfile.CheckError{Problems: probs})
		in.notDeployable = in.problems
		return in
	}
	stored, err := s.agents.secrets.load(name)
	if err != nil {
		s.log.Error("platform: reading an agent's secrets failed", "agent", name, "error", err)
		in.problems = []Problem{{Message: "the agent's stored secrets could not be read; the server's log says why"}}
		in.notDeployable = in.problems
		return in
	}
	restored, rprobs := restoreSecrets(f, stored)
	if len(rprobs) > 0 {
		in.problems = s.problemsOf(&agentfile.CheckError{Problems: rprobs})
		in.notDeployable = in.problems
		return in
	}
	clean, found, err := redactAgent(data, f, s.newSecretPolicy(restored))
	if err != nil {
		var re *errRedaction
		msg := "the agent's secrets could not be kept apart"
		if errors.As(err, &re) {
			msg = re.msg
		}
		in.problems = []Problem{{Message: cut(msg)}}
		in.notDeployable = in.problems
		return in
	}
	in.source = string(clean)
	in.secrets = found

	// The entries checked now: all but those of toolsets that are not
	// ready yet, which an agent may name before they are.
	checked := *f
	checked.Toolsets = nil
	var waiting []Problem
	seen := map[string]bool{}
	for _, e := range f.Toolsets {
		if e.Package == nil {
			checked.Toolsets = append(checked.Toolsets, e)
			continue
		}
		info, ierr := s.info(e.Package.Name)
		st := AgentToolset{Name: e.Package.Name, Status: info.Status, Errors: s.scrubAll(info.Errors), ServingVersion: info.Serving}
		if ierr != nil {
			st.Status = StatusUnknown
		}
		switch st.Status {
		case toolpkg.StatusCreated, toolpkg.StatusPending, toolpkg.StatusFailed:
			if !seen[st.Name] {
				waiting = append(waiting, Problem{Line: e.Pos.Line, Column: e.Pos.Column, Message: notReady(st)})
			}
		default:
			checked.Toolsets = append(checked.Toolsets, e)
		}
		if !seen[st.Name] {
			seen[st.Name] = true
			in.toolsets = append(in.toolsets, st)
		}
	}
	for _, ref := range f.Skills {
		rec := s.skills.get(ref.Name)
		if rec == nil {
			continue // a problem of the check
		}
		if status, errs, _ := s.skills.status(rec); status != toolpkg.StatusReady {
			waiting = append(waiting, Problem{Line: ref.Pos.Line, Column: ref.Pos.Column, Message: skillNotReady(ref.Name, status, s.scrubAll(errs))})
		}
	}
	if err := s.checkAgent(ctx, &checked); err != nil {
		in.problems = s.problemsOf(err)
	}
	// Every reason at once: the values missing from the tools of the
	// toolsets that are ready too.
	rec, missing := s.renderEffective(f, found)
	in.notDeployable = append(append(slices.Clone(in.problems), waiting...), missing...)
	if len(in.notDeployable) > 0 || rec == nil {
		sortProblems(in.notDeployable)
		return in
	}
	in.effective = rec
	return in
}

// notReady says why a toolset keeps an agent from being deployed.
func notReady(st AgentToolset) string {
	msg := fmt.Sprintf("toolset %q is %s; an agent is deployed only once every toolset it names is ready", st.Name, st.Status)
	if st.Status == toolpkg.StatusCreated {
		msg += " (no package was uploaded yet)"
	}
	if len(st.Errors) > 0 {
		msg += "; its discovery failed: " + cut(st.Errors[0])
		if len(st.Errors) > 1 {
			msg += fmt.Sprintf(" and %d more errors", len(st.Errors)-1)
		}
	}
	return msg
}

// skillNotReady says why a skill keeps an agent from being deployed.
func skillNotReady(name string, status toolpkg.Status, errs []string) string {
	msg := fmt.Sprintf("skill %q is %s; an agent is deployed only once every skill it attaches is ready", name, status)
	if len(errs) > 0 {
		msg += ": " + cut(errs[0])
		if len(errs) > 1 {
			msg += fmt.Sprintf(" and %d more errors", len(errs)-1)
		}
	}
	return msg
}

func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
}

// agentDetail is the answer about an agent: its inspection and its
// deployment.
func (s *Server) agentDetail(name string, rec agentRec, in *inspection) AgentDetail {
	d := AgentDetail{AgentSummary: s.summaryOf(name, rec), Source: in.source, Problems: in.problems, Toolsets: in.toolsets}
	if d.Problems == nil {
		d.Problems = []Problem{}
	}
	if dep := s.agents.deploys.recs[name]; dep != nil {
		for i := range d.Toolsets {
			d.Toolsets[i].DeployedVersion = dep.Versions[d.Toolsets[i].Name]
		}
		d.NeedsRedeploy = in.effective == nil || in.effective.Document != dep.Document ||
			!maps.Equal(in.effective.SkillVersions, dep.SkillVersions)
		if dep.Redeploy != nil {
			r := *dep.Redeploy
			d.Redeploy = &r
		}
	}
	return d
}

// POST /api/v1/platform/agents/{name}/deploy → 200 AgentDetail, the
// agent deployed; 409 NotDeployable with every reason as problems.
func (s *Server) deployAgent(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	s.agents.mu.Lock()
	defer s.agents.mu.Unlock()
	rec, in, ref := s.deployLocked(r.Context(), name)
	if ref != nil {
		ref.write(w)
		return
	}
	writeJSON(w, http.StatusOK, s.agentDetail(name, rec, in))
}

// deployLocked deploys an agent: what POST .../deploy does, and the
// page's Deploy button. The caller holds the agents' lock.
func (s *Server) deployLocked(ctx context.Context, name string) (agentRec, *inspection, *agentRefusal) {
	rec, ok := s.agents.agents[name]
	if !ok {
		return rec, nil, &agentRefusal{status: http.StatusNotFound, code: "NotFound", msg: "no such agent: " + quotePath(name)}
	}
	for _, p := range rec.packages {
		if s.agents.changing[p] > 0 {
			return rec, nil, &agentRefusal{status: http.StatusConflict, code: "Conflict", msg: fmt.Sprintf("toolset %q is being uploaded or removed; deploy the agent once that is done", p)}
		}
	}
	data, _, err := s.agents.read(name)
	if err != nil {
		s.log.Error("platform: reading an agent failed", "agent", name, "error", err)
		return rec, nil, &agentRefusal{status: http.StatusInternalServerError, code: "InternalError", msg: "the agent could not be read; the server's log says why"}
	}
	in := s.inspect(ctx, name, data)
	if in.effective == nil {
		return rec, in, &agentRefusal{http.StatusConflict, "NotDeployable", "the agent cannot be deployed now: " + problemCount(len(in.notDeployable)), append([]Problem{}, in.notDeployable...)}
	}
	if err := s.agents.deploys.save(name, in.effective); err != nil {
		s.log.Error("platform: saving a deployment failed", "agent", name, "error", err)
		return rec, in, &agentRefusal{status: http.StatusInternalServerError, code: "InternalError", msg: "the deployment could not be saved; the server's log says why"}
	}
	s.log.Info("platform: agent deployed", "agent", name, "versions", in.effective.Versions)
	return rec, in, nil
}

// redeployWhenReady follows a forced upload of a toolset: once its
// version is ready (with a Distributor, once a runtime confirmed it),
// every deployed agent that names the toolset is deployed again with it.
// A version that fails leaves them as they are (the previous version
// still serves); a later upload takes over.
func (s *Server) redeployWhenReady(toolset string, version int) {
	a := s.agents
	a.bgMu.Lock()
	defer a.bgMu.Unlock()
	if a.bgClosed {
		return
	}
	a.bg.Add(1)
	go func() {
		defer s.agents.bg.Done()
		defer func() {
			if v := recover(); v != nil {
				s.log.Error("platform: redeploying panicked", "toolset", toolset, "panic", fmt.Sprint(v))
			}
		}()
		if _, err := s.store.Wait(s.ctx, toolset); err != nil {
			return
		}
		wait := 100 * time.Millisecond
		for {
			info, err := s.info(toolset)
			if err != nil || info.Version != version || info.Status == toolpkg.StatusFailed || info.Status == toolpkg.StatusRemoved {
				return
			}
			if info.Status == toolpkg.StatusReady && info.Serving == version {
				s.redeploy(toolset, version)
				return
			}
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 5*time.Second)
		}
	}()
}

// stopBackground waits for the redeploys under way (the server's context
// is canceled) and lets no other start.
func (a *agentStore) stopBackground() {
	a.bgMu.Lock()
	a.bgClosed = true
	a.bgMu.Unlock()
	a.bg.Wait()
}

// redeploy deploys again every deployed agent naming the toolset.
func (s *Server) redeploy(toolset string, version int) {
	s.agents.mu.Lock()
	defer s.agents.mu.Unlock()
	for _, name := range s.agents.usedByLocked(toolset) {
		dep := s.agents.deploys.recs[name]
		if dep == nil || dep.Versions[toolset] == version {
			continue
		}
		data, _, err := s.agents.read(name)
		if err != nil {
			s.log.Error("platform: reading an agent to redeploy it failed", "agent", name, "error", err)
			continue
		}
		in := s.inspect(s.ctx, name, data)
		red := &Redeploy{At: time.Now().UTC(), Toolset: toolset, FromVersion: dep.Versions[toolset], ToVersion: version,
			ToolDiff: ToolDiff{Added: []string{}, Removed: []string{}, Changed: []string{}}, Problems: []Problem{}}
		next := *dep
		if in.effective == nil {
			red.Problems = in.notDeployable
			s.log.Warn("platform: an agent could not be redeployed with a toolset's new version; its deployment stays as it was",
				"agent", name, "toolset", toolset, "version", version, "problems", len(red.Problems))
		} else {
			red.ToolDiff = diffTools(dep.Tools, in.effective.Tools)
			next = *in.effective
			s.log.Info("platform: agent redeployed", "agent", name, "toolset", toolset, "version", version)
		}
		next.Redeploy = red
		if err := s.agents.deploys.save(name, &next); err != nil {
			s.log.Error("platform: saving a redeployment failed", "agent", name, "error", err)
		}
	}
}

// diffTools compares two sets of tool fingerprints.
func diffTools(from, to map[string]string) ToolDiff {
	d := ToolDiff{Added: []string{}, Removed: []string{}, Changed: []string{}}
	for name, fp := range to {
		old, ok := from[name]
		switch {
		case !ok:
			d.Added = append(d.Added, name)
		case old != fp:
			d.Changed = append(d.Changed, name)
		}
	}
	for name := range from {
		if _, ok := to[name]; !ok {
			d.Removed = append(d.Removed, name)
		}
	}
	slices.Sort(d.Added)
	slices.Sort(d.Removed)
	slices.Sort(d.Changed)
	return d
}

// InUse is what a 409 PackageInUse answer adds about the toolset: the
// agents that name it, those deployed (a forced upload redeploys them
// once its version is ready, see AgentDetail.Redeploy for the tool
// diff), and the serving version's tools, which the upload would
// replace.
type InUse struct {
	Agents         []string `json:"agents"`
	DeployedAgents []string `json:"deployedAgents"`
	ServingVersion int      `json:"servingVersion"`
	ServingTools   []string `json:"servingTools"`
}

// inUse describes a toolset in use for its 409 answer.
func (s *Server) inUse(toolset string, users []string) *InUse {
	u := &InUse{Agents: orEmpty(users), DeployedAgents: []string{}, ServingTools: []string{}}
	s.agents.mu.RLock()
	for _, a := range users {
		if s.agents.deploys.recs[a] != nil {
			u.DeployedAgents = append(u.DeployedAgents, a)
		}
	}
	s.agents.mu.RUnlock()
	if info, err := s.store.Info(toolset); err == nil {
		u.ServingVersion = info.Serving
		for _, t := range info.Tools {
			u.ServingTools = append(u.ServingTools, t.Name)
		}
	}
	return u
}

// packageInUseDetail answers 409 PackageInUse with what the toolset is
// used by.
func (s *Server) packageInUseDetail(w http.ResponseWriter, name string, users []string, what string) {
	u := s.inUse(name, users)
	msg := fmt.Sprintf("toolset %q is used by the agents %s; %s with ?force=true to change it for all of them", name, strings.Join(users, ", "), what)
	if len(u.DeployedAgents) > 0 && what == "upload" {
		msg += fmt.Sprintf(" (the deployed ones, %s, are redeployed once the new version is ready; each agent's redeploy then shows the tools added, removed and changed)", strings.Join(u.DeployedAgents, ", "))
	}
	body, _ := marshal(ErrorBody{Error: ErrorDetail{Code: "PackageInUse", Message: msg, InUse: u}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusConflict)
	_, _ = w.Write(body)
}
