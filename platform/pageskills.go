package platform

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gotoolset/toolset/toolpkg"
	"github.com/gotoolset/toolset/toolpkg/skill"
)

// GET /skills: the uploaded skills, with their status dots.
func (s *Server) pageSkills(w http.ResponseWriter, r *http.Request) {
	s.skills.mu.RLock()
	recs := make([]*skillRecord, 0, len(s.skills.recs))
	for _, rec := range s.skills.recs {
		recs = append(recs, rec)
	}
	s.skills.mu.RUnlock()
	slices.SortFunc(recs, func(a, b *skillRecord) int { return strings.Compare(a.name, b.name) })
	d := &pageData{Title: "Skills", Skills: []SkillSummary{}}
	for _, rec := range recs {
		sum, _ := s.skillSummary(rec)
		sum.Errors = boundErrors(sum.Errors)
		d.Skills = append(d.Skills, sum)
		if sum.Status == toolpkg.StatusPending {
			d.Refresh = s.refreshSeconds()
		}
	}
	s.render(w, r, http.StatusOK, "skills", d)
}

// GET /skills/{name}: one skill: its front matter, files and tools.
func (s *Server) pageSkill(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if skill.CheckName(name) != nil {
		s.render(w, r, http.StatusBadRequest, "error", &pageData{Title: "Invalid name", Error: "A skill's name is 1 to 64 lowercase letters, digits and single hyphens, neither first nor last.", Back: "/skills"})
		return
	}
	rec := s.skills.get(name)
	if rec == nil {
		s.render(w, r, http.StatusNotFound, "error", &pageData{Title: "Not found", Error: "There is no skill " + quotePath(name) + ".", Back: "/skills"})
		return
	}
	det := s.skillDetail(rec)
	d := &pageData{Title: name, Skill: &det}
	for _, t := range det.Tools {
		d.Tools = append(d.Tools, layoutTool(t))
	}
	if det.Status == toolpkg.StatusPending {
		d.Refresh = s.refreshSeconds()
	}
	s.render(w, r, http.StatusOK, "skill", d)
}
