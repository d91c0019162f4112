package platform

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/gotoolset/toolset/toolpkg"
)

//go:embed page/*.html page/style.css
var pageFS embed.FS

var pageTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"kib": func(n int64) string { return fmt.Sprintf("%d KiB", n>>10) },
}).ParseFS(pageFS, "page/*.html"))

// pageData is what the page templates show.
type pageData struct {
	Title    string
	Insecure bool
	Auth     bool // a session is in use: show "log out"
	Refresh  int  // seconds; 0: the page does not reload itself
	Error    string
	Problems []Problem
	Back     string

	Toolsets []ToolsetSummary
	Toolset  *ToolsetDetail
	Tools    []pageTool
	MaxBytes int64

	// The agents page and an agent's: its reasons not to deploy, the
	// toolsets ready to attach, the attach form's fields.
	Agents        []pageAgentRow
	Agent         *AgentDetail
	Reasons       []Problem
	ReadyToolsets []string
	AgentName     string
	Attach        *pageAttach
	// UsedBy are the agents naming a toolset, with their last
	// redeploy, on the toolset's page.
	UsedBy []pageUser

	// The skills page and a skill's.
	Skills []SkillSummary
	Skill  *SkillDetail

	// CanPublish: the session's token holds the publish scope, so the
	// page shows the upload form.
	CanPublish bool
	// CanAgents: it holds the agents scope, so the page shows the
	// Deploy button and the attach form.
	CanAgents bool
}

// pageUser is an agent using a toolset, as the toolset's page shows it.
type pageUser struct {
	Name     string
	Deployed bool
	Version  int // the toolset's version deployed; 0 if not
	Redeploy *Redeploy
}

// pageTool is a tool with its parameters laid out.
type pageTool struct {
	ToolDetail
	Params []pageParam
	Schema string // the parameters' JSON Schema, indented
}

type pageParam struct {
	Name, Type, Description string
	Required                bool
}

// maxSchemaShown bounds the JSON Schema text shown per tool.
const maxSchemaShown = 64 << 10

func layoutTool(t ToolDetail) pageTool {
	pt := pageTool{ToolDetail: t}
	var buf bytes.Buffer
	if json.Indent(&buf, t.Parameters, "", "  ") == nil {
		pt.Schema = buf.String()
		if len(pt.Schema) > maxSchemaShown {
			pt.Schema = strings.ToValidUTF8(pt.Schema[:maxSchemaShown], "") + "\n..."
		}
	}
	var schema struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(t.Parameters, &schema) != nil {
		return pt
	}
	req := map[string]bool{}
	for _, r := range schema.Required {
		req[r] = true
	}
	for name, p := range schema.Properties {
		typ := ""
		switch v := p.Type.(type) {
		case string:
			typ = v
		case []any:
			var parts []string
			for _, x := range v {
				parts = append(parts, fmt.Sprint(x))
			}
			typ = strings.Join(parts, " | ")
		}
		pt.Params = append(pt.Params, pageParam{Name: name, Type: typ, Description: p.Description, Required: req[name]})
	}
	sort.Slice(pt.Params, func(i, j int) bool { return pt.Params[i].Name < pt.Params[j].Name })
	return pt
}

// render writes a page: html/template escapes every text it is given.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, d *pageData) {
	d.Insecure = s.opts.InsecureNoAuth
	who, auth := s.viewer(r)
	d.Auth = auth && !s.opts.InsecureNoAuth
	d.CanPublish = who.scopes.allows(ScopePublish)
	d.CanAgents = who.scopes.allows(ScopeAgents)
	d.MaxBytes = s.opts.MaxPackageBytes
	var buf bytes.Buffer
	if err := pageTemplates.ExecuteTemplate(&buf, name, d); err != nil {
		s.log.Error("platform: rendering a page failed", "page", name, "error", err)
		WriteError(w, http.StatusInternalServerError, "InternalError", "the page could not be rendered; the server's log says why")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) refreshSeconds() int {
	return max(1, int((s.opts.RefreshInterval+999_999_999)/1_000_000_000))
}

// GET /: the toolsets, with their status dots, the removed ones too.
func (s *Server) pageList(w http.ResponseWriter, r *http.Request) {
	d := &pageData{Title: "Toolsets"}
	for _, info := range s.list(true) {
		d.Toolsets = append(d.Toolsets, s.listed(info))
		if info.Status == toolpkg.StatusPending {
			d.Refresh = s.refreshSeconds()
		}
	}
	s.render(w, r, http.StatusOK, "list", d)
}

// GET /toolsets/{name}: one toolset.
func (s *Server) pageToolset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := checkName(name); err != nil {
		s.render(w, r, http.StatusBadRequest, "error", &pageData{Title: "Invalid name", Error: err.Error(), Back: "/"})
		return
	}
	info, err := s.info(name)
	if err != nil {
		s.render(w, r, http.StatusNotFound, "error", &pageData{Title: "Not found", Error: "There is no toolset " + quotePath(name) + ".", Back: "/"})
		return
	}
	det := s.detail(info)
	d := &pageData{Title: name, Toolset: &det}
	for _, t := range det.Tools {
		d.Tools = append(d.Tools, layoutTool(t))
	}
	s.agents.mu.RLock()
	for _, a := range det.UsedBy {
		u := pageUser{Name: a}
		if dep := s.agents.deploys.recs[a]; dep != nil {
			u.Deployed, u.Version = true, dep.Versions[name]
			if dep.Redeploy != nil && dep.Redeploy.Toolset == name {
				red := *dep.Redeploy
				u.Redeploy = &red
			}
		}
		d.UsedBy = append(d.UsedBy, u)
	}
	s.agents.mu.RUnlock()
	if info.Status == toolpkg.StatusPending {
		d.Refresh = s.refreshSeconds()
	}
	s.render(w, r, http.StatusOK, "toolset", d)
}

// maxFormField bounds a text field of the upload form.
const maxFormField = 1024

// POST /upload (multipart: name, package, force) → 303 to the toolset's
// page, or the problems.
func (s *Server) pageUpload(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, msg string, probs []Problem) {
		if status == http.StatusRequestEntityTooLarge || status == http.StatusRequestTimeout {
			// What is left of the body is not read.
			w.Header().Set("Connection", "close")
		}
		s.render(w, r, status, "error", &pageData{Title: "Upload refused", Error: msg, Problems: probs, Back: "/"})
	}
	max := s.opts.MaxPackageBytes
	if r.ContentLength > max+64<<10 {
		fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("The package is larger than the limit of %d bytes.", max), nil)
		return
	}
	r.Body = s.bodyLimit(w, r, max+64<<10)
	mr, err := r.MultipartReader()
	if err != nil {
		fail(http.StatusBadRequest, "The form is not a multipart upload.", nil)
		return
	}
	release, ok := s.uploadSlot(w, r)
	if !ok {
		return
	}
	defer release()
	var name, force string
	var pkg *os.File
	var size int64
	defer func() {
		if pkg != nil {
			s.unspool(pkg)
		}
	}()
	for parts := 0; ; parts++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil || parts >= 8 {
			fail(http.StatusBadRequest, "The form could not be read.", nil)
			return
		}
		switch p.FormName() {
		case "name", "force":
			b, err := io.ReadAll(io.LimitReader(p, maxFormField+1))
			if err != nil || len(b) > maxFormField {
				fail(http.StatusBadRequest, "The form could not be read.", nil)
				return
			}
			if p.FormName() == "name" {
				name = strings.TrimSpace(string(b))
			} else {
				force = string(b)
			}
		case "package":
			if pkg != nil {
				fail(http.StatusBadRequest, "The form holds more than one package.", nil)
				return
			}
			pkg, size, err = s.spool(p, max)
			if err != nil {
				pkg = nil
				var sf *spoolFault
				switch {
				case errors.Is(err, errTooLarge):
					fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("The package is larger than the limit of %d bytes.", max), nil)
				case timedOut(err):
					fail(http.StatusRequestTimeout, fmt.Sprintf("The upload did not arrive in time (nothing for %s, or longer than the server allows).", s.opts.BodyIdleTimeout), nil)
				case errors.As(err, &sf):
					s.log.Error("platform: an upload from the page could not be spooled", "error", err)
					fail(http.StatusInternalServerError, "The server could not keep the upload; its log says why.", nil)
				default:
					fail(http.StatusBadRequest, "The package could not be read.", nil)
				}
				return
			}
		default:
			_, _ = io.Copy(io.Discard, io.LimitReader(p, maxFormField))
		}
	}
	// What follows the last part is read, so that the body's end, not
	// its idle deadline, is what the connection last waits for.
	if _, err := io.Copy(io.Discard, r.Body); timedOut(err) {
		fail(http.StatusRequestTimeout, fmt.Sprintf("The upload did not arrive in time (nothing for %s, or longer than the server allows).", s.opts.BodyIdleTimeout), nil)
		return
	}
	if err := checkName(name); err != nil || reservedNames[name] {
		fail(http.StatusBadRequest, "Give the toolset a name of 1 to 64 letters, digits, '_' or '-', starting with a letter or digit.", nil)
		return
	}
	if pkg == nil || size == 0 {
		fail(http.StatusBadRequest, "Choose a package (a zip file) to upload.", nil)
		return
	}
	end, users := s.agents.reserve(name, force != "")
	if end == nil {
		fail(http.StatusConflict, fmt.Sprintf("Toolset %q is used by the agents %s: tick \"update every agent\" to upload anyway.", name, strings.Join(users, ", ")), nil)
		return
	}
	defer end()
	if _, err := s.startUpload(r, name, pkg, size); err != nil {
		var ve *toolpkg.ValidationError
		if errors.As(err, &ve) {
			probs := make([]Problem, len(ve.Problems))
			for i, p := range ve.Problems {
				probs[i] = Problem{Message: s.scrub(p.String())}
			}
			fail(http.StatusUnprocessableEntity, "The package is invalid:", probs)
			return
		}
		if errors.Is(err, toolpkg.ErrClosed) || (s.ctx.Err() != nil && errors.Is(err, context.Canceled)) {
			fail(http.StatusServiceUnavailable, "The server is shutting down; upload again once it is back.", nil)
			return
		}
		if r.Context().Err() != nil {
			return // the browser is gone
		}
		s.log.Error("platform: an upload from the page failed", "toolset", name, "error", err)
		fail(http.StatusInternalServerError, "The store failed; the server's log says why.", nil)
		return
	}
	http.Redirect(w, r, "/toolsets/"+name, http.StatusSeeOther)
}

// GET /style.css.
func (s *Server) pageStyle(w http.ResponseWriter, r *http.Request) {
	css, _ := pageFS.ReadFile("page/style.css")
	h := w.Header()
	h.Set("Content-Type", "text/css; charset=utf-8")
	h.Set("Cache-Control", "max-age=300")
	_, _ = w.Write(css)
}
