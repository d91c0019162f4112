package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gotoolset/toolset/toolpkg"
	"github.com/gotoolset/toolset/toolpkg/skill"
)

// Skills are stored in <store>/.platform/skills: <name>.zip, the upload
// as it came, and <name>.json, its version and upload time. Their bundled
// tools (tools/) are a toolset package of a store of their own,
// <store>/.platform/skill-tools, under the skill's name, so that a
// skill's tools never meet a toolset's names and are not listed as
// toolsets. A skill's status is that of its tools' discovery there:
// pending, then ready or failed; a skill without tools is ready at once.

// SkillSummary is a skill as GET /api/v1/platform/skills lists it.
type SkillSummary struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Status is pending (its bundled tools are being discovered), ready
	// or failed.
	Status toolpkg.Status `json:"status"`
	// Errors say why a skill failed (never null); a listing bounds them
	// as it bounds a toolset's.
	Errors []string `json:"errors"`
	// Version counts the skill's uploads.
	Version int `json:"version"`
	// UploadedAt is when the latest version was uploaded.
	UploadedAt time.Time `json:"uploadedAt"`
	// ToolCount is the number of its bundled tools discovered.
	ToolCount int `json:"toolCount"`
}

// SkillDetail is a skill as GET /api/v1/platform/skills/{name} returns it.
type SkillDetail struct {
	SkillSummary
	// FrontMatter is SKILL.md's front matter.
	FrontMatter *skill.FrontMatter `json:"frontMatter"`
	// Files are the skill's files (never null).
	Files []skill.File `json:"files"`
	// Tools are its bundled tools, named as the model calls them,
	// <skill>__<tool> (never null).
	Tools []ToolDetail `json:"tools"`
	// Warnings are what the skill holds that this platform ignores.
	Warnings []string `json:"warnings,omitempty"`
}

// skillRecord is one stored skill.
type skillRecord struct {
	name     string
	sk       *skill.Skill // nil for a skill that no longer loads
	zip      *os.File     // the stored zip sk reads from; nil with sk
	size     int64        // zip's size
	errs     []string     // why it no longer loads
	version  int
	uploaded time.Time
	tools    int // the version of its tools in the tools' store; 0: none
}

type skillMeta struct {
	Version    int       `json:"version"`
	UploadedAt time.Time `json:"uploadedAt"`
	// ToolsVersion is the version of the skill's bundled tools in the
	// store of skills' tools, 0 without.
	ToolsVersion int `json:"toolsVersion,omitempty"`
}

// skillStore keeps the platform's skills.
type skillStore struct {
	dir   string
	tools *toolpkg.Store

	writeMu sync.Mutex // one upload or delete at a time
	mu      sync.RWMutex
	recs    map[string]*skillRecord
}

// openSkills opens the skills kept under base, and the store of their
// tools, in the sandbox mode of the toolsets' store.
func openSkills(base string, main *toolpkg.Store, lim int64, log *slog.Logger) (*skillStore, error) {
	dir := filepath.Join(base, "skills")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("platform: %w", err)
	}
	// The user tools run as (toolpkg.ToolUID, when the host is root)
	// must reach the tools' store through base: search, not read.
	if err := os.Chmod(base, 0o711); err != nil {
		return nil, fmt.Errorf("platform: %w", err)
	}
	tools, err := toolpkg.Open(filepath.Join(base, "skill-tools"), &toolpkg.Options{Sandbox: main.Sandbox(), Logger: log})
	if err != nil {
		return nil, fmt.Errorf("platform: the store of skills' tools: %w", err)
	}
	st := &skillStore{dir: dir, tools: tools, recs: map[string]*skillRecord{}}
	des, err := os.ReadDir(dir)
	if err != nil {
		tools.Close()
		return nil, fmt.Errorf("platform: %w", err)
	}
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ".zip")
		if !ok || !de.Type().IsRegular() || skill.CheckName(name) != nil {
			continue
		}
		rec := st.load(name, lim)
		if rec.sk == nil {
			log.Error("platform: a stored skill no longer loads; upload it again", "skill", name, "errors", rec.errs)
		}
		st.recs[name] = rec
	}
	return st, nil
}

func (st *skillStore) close() error { return st.tools.Close() }

// load reads the stored skill name.
func (st *skillStore) load(name string, lim int64) *skillRecord {
	rec := &skillRecord{name: name}
	if data, err := os.ReadFile(filepath.Join(st.dir, name+".json")); err == nil {
		var m skillMeta
		if json.Unmarshal(data, &m) == nil {
			rec.version, rec.uploaded, rec.tools = m.Version, m.UploadedAt, m.ToolsVersion
		}
	}
	f, err := os.Open(filepath.Join(st.dir, name+".zip"))
	if err != nil {
		rec.errs = []string{"its stored zip is unreadable: upload it again"}
		return rec
	}
	fi, err := f.Stat()
	if err == nil {
		// f stays open while the skill is in use: the skill reads its
		// files from it. It is closed when the record is collected.
		rec.sk, err = skill.FromZip(f, fi.Size(), &skill.Options{Name: name, MaxBytes: lim})
	}
	if err != nil {
		f.Close()
		rec.sk = nil
		rec.errs = problemStrings(err)
	} else {
		rec.zip, rec.size = f, fi.Size()
	}
	return rec
}

func problemStrings(err error) []string {
	var ve *skill.ValidationError
	if errors.As(err, &ve) {
		out := make([]string, len(ve.Problems))
		for i, p := range ve.Problems {
			out[i] = p.String()
		}
		return out
	}
	return []string{err.Error()}
}

func (st *skillStore) get(name string) *skillRecord {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.recs[name]
}

// status is a skill's status and errors: its tools' discovery's.
func (st *skillStore) status(rec *skillRecord) (toolpkg.Status, []string, []toolpkg.ToolInfo) {
	switch {
	case rec.sk == nil:
		return toolpkg.StatusFailed, rec.errs, nil
	case !rec.sk.HasPackage():
		return toolpkg.StatusReady, nil, nil
	}
	info, err := st.tools.Info(rec.name)
	if err != nil {
		return toolpkg.StatusFailed, []string{"its bundled tools are not in the store: upload the skill again"}, nil
	}
	if info.Version != rec.tools {
		return toolpkg.StatusFailed, []string{"its bundled tools are of another upload: upload the skill again"}, nil
	}
	return info.Status, info.Errors, info.Tools
}

// skillRoutes registers the skills' routes on the API's mux.
func (s *Server) skillRoutes(api *routeMux) {
	api.handle("GET /api/v1/platform/skills", ScopeRead, s.listSkills)
	api.handle("GET /api/v1/platform/skills/{name}", ScopeRead, s.getSkill)
	api.handle("GET /api/v1/platform/skills/{name}/archive", ScopeRead, s.getSkillArchive)
	api.handle("PUT /api/v1/platform/skills/{name}", ScopePublish, s.putSkill)
	api.handle("DELETE /api/v1/platform/skills/{name}", ScopePublish, s.deleteSkill)
}

// skillName returns the {name} of the route, checked as a skill's name;
// on a bad one it has answered 400 InvalidName.
func skillName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if skill.CheckName(name) != nil {
		WriteError(w, http.StatusBadRequest, "InvalidName", fmt.Sprintf("invalid skill name %s: use 1 to 64 lowercase letters, digits and single hyphens, neither first nor last", quotePath(name)))
		return "", false
	}
	return name, true
}

func (s *Server) skillSummary(rec *skillRecord) (SkillSummary, []toolpkg.ToolInfo) {
	status, errs, tools := s.skills.status(rec)
	sum := SkillSummary{Name: rec.name, Status: status, Errors: s.scrubAll(errs), Version: rec.version, UploadedAt: rec.uploaded, ToolCount: len(tools)}
	if sum.Errors == nil {
		sum.Errors = []string{}
	}
	if rec.sk != nil {
		sum.Description = rec.sk.Description()
	}
	return sum, tools
}

func (s *Server) skillDetail(rec *skillRecord) SkillDetail {
	sum, tools := s.skillSummary(rec)
	d := SkillDetail{SkillSummary: sum, Files: []skill.File{}, Tools: []ToolDetail{}}
	if rec.sk != nil {
		fm := rec.sk.FrontMatter()
		for _, w := range fm.Warnings {
			d.Warnings = append(d.Warnings, w.String())
		}
		fm.Warnings = nil
		d.FrontMatter = &fm
		d.Files = rec.sk.Files()
		if m := rec.sk.Manifest(); m != nil {
			for _, w := range m.Warnings {
				d.Warnings = append(d.Warnings, "tools/manifest.yaml: "+w.String())
			}
		}
	}
	for _, t := range tools {
		d.Tools = append(d.Tools, ToolDetail{ToolName: rec.name + "__" + t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return d
}

// GET /api/v1/platform/skills[?page=N&pageSize=M] → 200 List[SkillSummary].
func (s *Server) listSkills(w http.ResponseWriter, r *http.Request) {
	p, ok := pageQuery(w, r)
	if !ok {
		return
	}
	s.skills.mu.RLock()
	recs := make([]*skillRecord, 0, len(s.skills.recs))
	for _, rec := range s.skills.recs {
		recs = append(recs, rec)
	}
	s.skills.mu.RUnlock()
	slices.SortFunc(recs, func(a, b *skillRecord) int { return strings.Compare(a.name, b.name) })
	lo, hi := p.window(len(recs))
	out := List[SkillSummary]{Data: []SkillSummary{}, Meta: ListMeta{Page: p.page, PageSize: p.size, Total: len(recs)}}
	for _, rec := range recs[lo:hi] {
		sum, _ := s.skillSummary(rec)
		sum.Errors = boundErrors(sum.Errors)
		out.Data = append(out.Data, sum)
	}
	writeJSON(w, http.StatusOK, out)
}

// boundErrors bounds the errors of an item of a listing.
func boundErrors(errs []string) []string {
	out := []string{}
	for i, e := range errs {
		if i == MaxListedErrors {
			out = append(out, fmt.Sprintf("and %d more: see the skill's detail", len(errs)-i))
			break
		}
		if len(e) > MaxListedErrorBytes {
			e = strings.ToValidUTF8(e[:MaxListedErrorBytes], "") + "... (cut: see the skill's detail)"
		}
		out = append(out, e)
	}
	return out
}

// GET /api/v1/platform/skills/{name} → 200 SkillDetail.
func (s *Server) getSkill(w http.ResponseWriter, r *http.Request) {
	name, ok := skillName(w, r)
	if !ok {
		return
	}
	rec := s.skills.get(name)
	if rec == nil {
		WriteError(w, http.StatusNotFound, "NotFound", "no such skill: "+quotePath(name))
		return
	}
	writeJSON(w, http.StatusOK, s.skillDetail(rec))
}

// SkillVersionHeader is the header of a skill's archive that says its
// version (SkillSummary.Version).
const SkillVersionHeader = "Skill-Version"

// GET /api/v1/platform/skills/{name}/archive → 200 application/zip, the
// skill as uploaded (its latest version, which the Skill-Version header
// gives), for runners to serve it; 409 NotReady for a skill that is not
// ready.
func (s *Server) getSkillArchive(w http.ResponseWriter, r *http.Request) {
	name, ok := skillName(w, r)
	if !ok {
		return
	}
	rec := s.skills.get(name)
	if rec == nil {
		WriteError(w, http.StatusNotFound, "NotFound", "no such skill: "+quotePath(name))
		return
	}
	if status, _, _ := s.skills.status(rec); status != toolpkg.StatusReady || rec.zip == nil {
		WriteError(w, http.StatusConflict, "NotReady", fmt.Sprintf("skill %q is %s: its archive is served once it is ready", name, status))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name+".zip"))
	h.Set("Cache-Control", "no-store")
	h.Set(SkillVersionHeader, strconv.Itoa(rec.version))
	// The record's own file: the version the header says, even while an
	// upload replaces the stored one.
	http.ServeContent(w, r, "", time.Time{}, io.NewSectionReader(rec.zip, 0, rec.size))
}

// PUT /api/v1/platform/skills/{name} (body: a zip of the skill's
// directory) → 202 SkillDetail, pending while its bundled tools are
// discovered; 422 InvalidSkill with every problem of a skill refused.
func (s *Server) putSkill(w http.ResponseWriter, r *http.Request) {
	name, ok := skillName(w, r)
	if !ok {
		return
	}
	f, size, done, ok := s.receiveZip(w, r)
	if !ok {
		return
	}
	defer done()
	sk, err := skill.FromZip(f, size, &skill.Options{Name: name, MaxBytes: s.opts.MaxPackageBytes})
	if err != nil {
		probs := problemStrings(err)
		out := make([]Problem, len(probs))
		for i, p := range probs {
			out[i] = Problem{Message: s.scrub(p)}
		}
		writeProblems(w, http.StatusUnprocessableEntity, "InvalidSkill", "the skill is invalid: "+problemCount(len(out)), out)
		return
	}

	st := s.skills
	st.writeMu.Lock()
	defer st.writeMu.Unlock()
	version := 1
	if old := st.get(name); old != nil {
		version = old.version + 1
	}
	toolsVersion := 0
	if sk.HasPackage() {
		var buf bytes.Buffer
		if err := sk.PackageZip(&buf); err != nil {
			s.skillFault(w, r, err)
			return
		}
		// The store waits for an earlier upload's discovery: the wait ends
		// with the request or the server.
		ctx, cancel := context.WithCancel(r.Context())
		stop := context.AfterFunc(s.ctx, cancel)
		info, err := st.tools.StartUpload(ctx, name, bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		stop()
		cancel()
		if err != nil {
			s.storeError(w, r, err)
			return
		}
		toolsVersion = info.Version
	} else if _, err := st.tools.Info(name); err == nil {
		// An earlier version bundled tools; this one does not.
		if err := st.tools.Remove(name); err != nil && !errors.Is(err, toolpkg.ErrNotFound) {
			s.skillFault(w, r, err)
			return
		}
	}
	rec, err := st.store(name, f, skillMeta{Version: version, UploadedAt: time.Now().UTC(), ToolsVersion: toolsVersion}, s.opts.MaxPackageBytes)
	if err != nil {
		s.skillFault(w, r, err)
		return
	}
	w.Header().Set("Location", apiPrefix+"skills/"+name)
	writeJSON(w, http.StatusAccepted, s.skillDetail(rec))
}

// store keeps the spooled upload f as skill name's version m and returns
// its record, read back from the stored file. The caller holds writeMu.
func (st *skillStore) store(name string, f *os.File, m skillMeta, lim int64) (*skillRecord, error) {
	zipPath := filepath.Join(st.dir, name+".zip")
	tmp := zipPath + ".tmp"
	os.Remove(tmp)
	if err := os.Link(f.Name(), tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, zipPath); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	meta, _ := json.Marshal(m)
	metaPath := filepath.Join(st.dir, name+".json")
	if err := os.WriteFile(metaPath+".tmp", meta, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(metaPath+".tmp", metaPath); err != nil {
		return nil, err
	}
	rec := st.load(name, lim)
	st.mu.Lock()
	st.recs[name] = rec
	st.mu.Unlock()
	return rec, nil
}

// skillFault answers a failure of the server's own while storing a
// skill.
func (s *Server) skillFault(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("platform: a skill could not be stored", "method", r.Method, "path", r.URL.Path, "error", err)
	WriteError(w, http.StatusInternalServerError, "InternalError", "the server could not store the skill; its log says why")
}

// DELETE /api/v1/platform/skills/{name}[?force=true] → 204; 409
// SkillInUse, naming the agents that attach it, unless forced.
func (s *Server) deleteSkill(w http.ResponseWriter, r *http.Request) {
	name, ok := skillName(w, r)
	if !ok {
		return
	}
	force, ok := boolQuery(w, r, "force")
	if !ok {
		return
	}
	st := s.skills
	st.writeMu.Lock()
	defer st.writeMu.Unlock()
	if st.get(name) == nil {
		WriteError(w, http.StatusNotFound, "NotFound", "no such skill: "+quotePath(name))
		return
	}
	// Forgotten under the agents' lock: an agent put from now on that
	// attaches it is refused as naming an unknown skill, and none slips
	// in between the check and the removal.
	s.agents.mu.Lock()
	if users := sortedUsers(s.agents.skillUsers[name]); len(users) > 0 && !force {
		s.agents.mu.Unlock()
		s.skillInUse(w, name, users)
		return
	}
	st.mu.Lock()
	delete(st.recs, name)
	st.mu.Unlock()
	s.agents.mu.Unlock()
	if err := st.tools.Remove(name); err != nil && !errors.Is(err, toolpkg.ErrNotFound) {
		s.skillFault(w, r, err)
		return
	}
	for _, p := range []string{name + ".zip", name + ".json"} {
		if err := os.Remove(filepath.Join(st.dir, p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.skillFault(w, r, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// SkillInUse is what a 409 SkillInUse answer adds about the skill: the
// agents that attach it, and those of them deployed.
type SkillInUse struct {
	Agents         []string `json:"agents"`
	DeployedAgents []string `json:"deployedAgents"`
}

// skillInUse answers 409 SkillInUse, naming the agents that attach the
// skill.
func (s *Server) skillInUse(w http.ResponseWriter, name string, users []string) {
	u := &SkillInUse{Agents: users, DeployedAgents: []string{}}
	s.agents.mu.RLock()
	for _, a := range users {
		if s.agents.deploys.recs[a] != nil {
			u.DeployedAgents = append(u.DeployedAgents, a)
		}
	}
	s.agents.mu.RUnlock()
	msg := fmt.Sprintf("skill %q is attached to the agents %s; delete it with ?force=true to take it from all of them", name, strings.Join(users, ", "))
	body, _ := marshal(ErrorBody{Error: ErrorDetail{Code: "SkillInUse", Message: msg, SkillInUse: u}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusConflict)
	_, _ = w.Write(body)
}

// NotReadySkillError reports skills an agent names that cannot be offered
// yet: unknown, pending or failed.
type NotReadySkillError struct {
	// Skills maps each such skill to its status ("unknown" for one the
	// platform does not have).
	Skills map[string]string
}

// Error implements error.
func (e *NotReadySkillError) Error() string {
	names := make([]string, 0, len(e.Skills))
	for n := range e.Skills {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s (%s)", n, e.Skills[n])
	}
	return "platform: skills not ready: " + strings.Join(parts, ", ")
}

// SkillToolset returns the toolset that offers the stored skills names,
// in that order, to an agent ([skill.NewToolset]): each with its bundled
// tools as the platform's store of skills' tools serves them. Every skill
// must be ready; otherwise it fails with a *[NotReadySkillError] naming
// each that is not.
func (s *Server) SkillToolset(names ...string) (*skill.Toolset, error) {
	notReady := map[string]string{}
	var skills []*skill.Skill
	for _, name := range names {
		rec := s.skills.get(name)
		if rec == nil {
			notReady[name] = "unknown"
			continue
		}
		status, _, _ := s.skills.status(rec)
		if status != toolpkg.StatusReady {
			notReady[name] = string(status)
			continue
		}
		sk := rec.sk
		if sk.HasPackage() {
			sk = sk.WithPackage(s.skills.tools, toolpkg.Config{})
		}
		skills = append(skills, sk)
	}
	if len(notReady) > 0 {
		return nil, &NotReadySkillError{Skills: notReady}
	}
	return skill.NewToolset(skills...)
}
