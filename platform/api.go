package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gotoolset/toolset/toolpkg"
)

// ToolsetSummary is a toolset as GET /api/v1/platform/toolsets lists it.
type ToolsetSummary struct {
	Name string `json:"name"`
	// DiscoveryStatus is created, pending, ready, failed or removed.
	DiscoveryStatus toolpkg.Status `json:"discoveryStatus"`
	// DiscoveryErrors say why the latest upload failed (never null). A
	// listing gives at most the first MaxListedErrors, each cut to
	// MaxListedErrorBytes, and says how many more there are; the
	// toolset's own answer has them all.
	DiscoveryErrors []string `json:"discoveryErrors"`
	// Version is the latest version uploaded; 0 before the first.
	Version int `json:"version"`
	// ServingVersion is the version whose tools agents get: a failed
	// re-upload leaves the previous one serving. 0 when none serves.
	ServingVersion int `json:"servingVersion"`
	// UploadedAt is when the latest version was uploaded; null before.
	UploadedAt *time.Time `json:"uploadedAt"`
	// ToolCount is the number of tools serving.
	ToolCount int `json:"toolCount"`
	// UsedBy names the stored agents that use the toolset (never null).
	UsedBy []string `json:"usedBy"`
}

// ToolsetDetail is a toolset as GET /api/v1/platform/toolsets/{name}
// returns it.
type ToolsetDetail struct {
	ToolsetSummary
	// Tools are the serving tools (never null).
	Tools []ToolDetail `json:"tools"`
	// Versions are the latest uploads, newest first (never null).
	Versions []VersionSummary `json:"versions"`
	// Config is the toolset-level configuration, secrets shown as
	// "<REDACTED>" (never null).
	Config map[string]any `json:"config"`
	// Warnings are what the manifest holds that this runtime ignores.
	Warnings []string `json:"warnings,omitempty"`
}

// ToolDetail is one tool of a toolset.
type ToolDetail struct {
	ToolName    string          `json:"toolName"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// VersionSummary is one uploaded version of a toolset.
type VersionSummary struct {
	Version         int            `json:"version"`
	UploadedAt      time.Time      `json:"uploadedAt"`
	DiscoveryStatus toolpkg.Status `json:"discoveryStatus"`
	ToolCount       int            `json:"toolCount"`
	DiscoveryErrors []string       `json:"discoveryErrors"`
}

// List is a page of a listing: {"data": [...], "meta": {...}}.
type List[T any] struct {
	Data []T      `json:"data"`
	Meta ListMeta `json:"meta"`
}

// ListMeta says which page a [List] is: Page counts from 1, Total is the
// number of items on every page together.
type ListMeta struct {
	Page     int `json:"page"`
	PageSize int `json:"pageSize"`
	Total    int `json:"total"`
}

// BuildTarget is the operating system and architecture the platform runs
// tools on, which packages are built for.
type BuildTarget struct {
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// Bounds of the discovery errors of each toolset in a listing: a
// toolset's errors may come to hundreds of kilobytes, a page of a
// listing holds hundreds of toolsets.
const (
	MaxListedErrors     = 3
	MaxListedErrorBytes = 1024
)

// listed is a summary for a listing: its discovery errors bounded.
func (s *Server) listed(info toolpkg.Info) ToolsetSummary {
	errs := info.Errors
	var out []string
	for i, e := range errs {
		if i == MaxListedErrors {
			out = append(out, fmt.Sprintf("and %d more: see the toolset's detail", len(errs)-i))
			break
		}
		if len(e) > MaxListedErrorBytes {
			e = strings.ToValidUTF8(e[:MaxListedErrorBytes], "") + "... (cut: see the toolset's detail)"
		}
		out = append(out, e)
	}
	info.Errors = out
	return s.summary(info)
}

// Paging bounds.
const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// reservedNames cannot name a toolset: their route is another.
var reservedNames = map[string]bool{"buildTarget": true}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "InternalError", "the answer could not be encoded")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// paging is a listing's page (from 1) and page size.
type paging struct{ page, size int }

// pageQuery reads ?page= and ?pageSize=; on a bad one it has answered
// 400 InvalidRequest.
func pageQuery(w http.ResponseWriter, r *http.Request) (paging, bool) {
	page, ok := intQuery(w, r, "page", 1, 1, 1<<30)
	if !ok {
		return paging{}, false
	}
	size, ok := intQuery(w, r, "pageSize", defaultPageSize, 1, maxPageSize)
	return paging{page, size}, ok
}

// window returns the bounds of the page in a listing of n items; lo ==
// hi past the end.
func (p paging) window(n int) (lo, hi int) {
	lo = min((p.page-1)*p.size, n)
	return lo, min(lo+p.size, n)
}

// pathName returns the {name} of the route, checked; on a bad one it has
// answered 400 InvalidName.
func pathName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if err := checkName(name); err != nil {
		WriteError(w, http.StatusBadRequest, "InvalidName", err.Error())
		return "", false
	}
	return name, true
}

// checkName checks a toolset's or an agent's name, with a message that
// quotes at most a bounded part of it.
func checkName(name string) error {
	if toolpkg.CheckName(name) != nil {
		return fmt.Errorf("invalid name %s: use 1 to 64 letters, digits, '_' or '-', starting with a letter or digit", quotePath(name))
	}
	return nil
}

// boolQuery reads an optional boolean query parameter; on a bad one it
// has answered 400.
func boolQuery(w http.ResponseWriter, r *http.Request, key string) (bool, bool) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return false, true
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("query parameter %s must be true or false, not %s", key, quotePath(v)))
		return false, false
	}
	return b, true
}

// intQuery reads an optional integer query parameter in [lo, hi].
func intQuery(w http.ResponseWriter, r *http.Request, key string, def, lo, hi int) (int, bool) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		WriteError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("query parameter %s must be an integer from %d to %d, not %s", key, lo, hi, quotePath(v)))
		return 0, false
	}
	return n, true
}

// decodeJSON decodes a JSON body of at most MaxJSONBody bytes into v:
// one value, no unknown field, nothing after it. On failure it has
// answered.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(s.bodyLimit(w, r, MaxJSONBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		WriteError(w, http.StatusRequestEntityTooLarge, "RequestTooLarge", fmt.Sprintf("the JSON body is larger than %d bytes", MaxJSONBody))
		return false
	}
	if timedOut(err) {
		s.requestTimeout(w)
		return false
	}
	if err != nil {
		WriteError(w, http.StatusBadRequest, "InvalidRequest", "reading the body: "+cut(err.Error()))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		WriteError(w, http.StatusBadRequest, "InvalidRequest", "the body is not the JSON expected: "+cut(err.Error()))
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		WriteError(w, http.StatusBadRequest, "InvalidRequest", "the body holds more than one JSON value")
		return false
	}
	return true
}

// cut bounds a message built from untrusted input.
func cut(s string) string {
	if len(s) > 512 {
		return strings.ToValidUTF8(s[:512], "") + "..."
	}
	return s
}

// storeError answers the error of a store operation.
func (s *Server) storeError(w http.ResponseWriter, r *http.Request, err error) {
	var ve *toolpkg.ValidationError
	var ce *toolpkg.ConfigError
	switch {
	case errors.Is(err, toolpkg.ErrNotFound):
		WriteError(w, http.StatusNotFound, "NotFound", "no such toolset: "+quotePath(r.PathValue("name")))
	case errors.Is(err, toolpkg.ErrClosed):
		WriteError(w, http.StatusServiceUnavailable, "Unavailable", "the store is closed: the server is shutting down")
	case s.ctx.Err() != nil && errors.Is(err, context.Canceled):
		WriteError(w, http.StatusServiceUnavailable, "Unavailable", "the server is shutting down")
	case r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		// The client is gone: nobody reads this, and nothing failed.
		s.log.Info("platform: a request ended before the store was done", "method", r.Method, "path", r.URL.Path)
		WriteError(w, http.StatusServiceUnavailable, "Unavailable", "the request ended before the store was done")
	case errors.As(err, &ve):
		probs := make([]Problem, len(ve.Problems))
		for i, p := range ve.Problems {
			probs[i] = Problem{Message: s.scrub(p.String())}
		}
		writeProblems(w, http.StatusUnprocessableEntity, "InvalidPackage", "the package is invalid: "+problemCount(len(probs)), probs)
	case errors.As(err, &ce):
		probs := make([]Problem, len(ce.Problems))
		for i, p := range ce.Problems {
			probs[i] = Problem{Message: s.scrub(p)}
		}
		writeProblems(w, http.StatusUnprocessableEntity, "InvalidConfig", "the configuration is invalid: "+problemCount(len(probs)), probs)
	default:
		s.log.Error("platform: store operation failed", "method", r.Method, "path", r.URL.Path, "error", err)
		WriteError(w, http.StatusInternalServerError, "InternalError", "the store failed; the server's log says why")
	}
}

func (s *Server) summary(info toolpkg.Info) ToolsetSummary {
	sum := ToolsetSummary{
		Name:            info.Name,
		DiscoveryStatus: info.Status,
		DiscoveryErrors: s.scrubAll(info.Errors),
		Version:         info.Version,
		ServingVersion:  info.Serving,
		ToolCount:       len(info.Tools),
		UsedBy:          orEmpty(s.agents.usedBy(info.Name)),
	}
	if !info.Uploaded.IsZero() {
		t := info.Uploaded
		sum.UploadedAt = &t
	}
	return sum
}

func (s *Server) detail(info toolpkg.Info) ToolsetDetail {
	d := ToolsetDetail{ToolsetSummary: s.summary(info), Tools: []ToolDetail{}, Versions: []VersionSummary{}}
	if info.Warnings != nil {
		d.Warnings = s.scrubAll(info.Warnings)
	}
	for _, t := range info.Tools {
		d.Tools = append(d.Tools, ToolDetail{ToolName: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	for _, v := range info.Versions {
		d.Versions = append(d.Versions, VersionSummary{Version: v.Version, UploadedAt: v.Uploaded, DiscoveryStatus: v.Status, ToolCount: v.Tools, DiscoveryErrors: s.scrubAll(v.Errors)})
	}
	d.Config = map[string]any{}
	if info.Status != toolpkg.StatusRemoved {
		if c, err := s.store.Config(info.Name); err == nil && c != nil {
			d.Config = c
		}
	}
	return d
}

func orEmpty(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// POST /api/v1/platform/toolsets {"name": NAME} → 201 ToolsetSummary.
func (s *Server) createToolset(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if !s.decodeJSON(w, r, &req) {
		return
	}
	if err := checkName(req.Name); err != nil {
		WriteError(w, http.StatusBadRequest, "InvalidName", err.Error())
		return
	}
	if reservedNames[req.Name] {
		WriteError(w, http.StatusBadRequest, "InvalidName", fmt.Sprintf("the name %q is reserved", req.Name))
		return
	}
	info, err := s.store.Create(req.Name)
	if err != nil {
		if prev, ierr := s.store.Info(req.Name); ierr == nil && prev.Status != toolpkg.StatusRemoved {
			WriteError(w, http.StatusConflict, "Conflict", fmt.Sprintf("toolset %q already exists (status %s)", req.Name, prev.Status))
			return
		}
		s.storeError(w, r, err)
		return
	}
	w.Header().Set("Location", apiPrefix+"toolsets/"+info.Name)
	writeJSON(w, http.StatusCreated, s.summary(info))
}

// GET /api/v1/platform/toolsets?page=&pageSize=[&removed=true] → 200
// List[ToolsetSummary]; with removed=true the removed toolsets too.
func (s *Server) listToolsets(w http.ResponseWriter, r *http.Request) {
	pg, ok := pageQuery(w, r)
	if !ok {
		return
	}
	removed, ok := boolQuery(w, r, "removed")
	if !ok {
		return
	}
	all := s.list(removed)
	out := List[ToolsetSummary]{Data: []ToolsetSummary{}, Meta: ListMeta{Page: pg.page, PageSize: pg.size, Total: len(all)}}
	lo, hi := pg.window(len(all))
	for _, info := range all[lo:hi] {
		out.Data = append(out.Data, s.listed(info))
	}
	writeJSON(w, http.StatusOK, out)
}

// GET /api/v1/platform/toolsets/buildTarget → 200 BuildTarget.
func (s *Server) buildTarget(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, BuildTarget{OS: runtime.GOOS, Arch: runtime.GOARCH})
}

// GET /api/v1/platform/toolsets/{name} → 200 ToolsetDetail.
func (s *Server) getToolset(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	info, err := s.info(name)
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.detail(info))
}

// DELETE /api/v1/platform/toolsets/{name}[?force=true] → 200
// ToolsetSummary (status removed).
func (s *Server) deleteToolset(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	force, ok := boolQuery(w, r, "force")
	if !ok {
		return
	}
	// Held until the store is done: an agent put meanwhile is refused
	// rather than slipping in after the check. The removal may wait for
	// a discovery; the agents' lock is not held meanwhile.
	end, users := s.agents.reserve(name, force)
	if end == nil {
		s.packageInUseDetail(w, name, users, "remove it")
		return
	}
	defer end()
	if info, err := s.store.Info(name); err != nil || info.Status == toolpkg.StatusRemoved {
		WriteError(w, http.StatusNotFound, "NotFound", "no such toolset: "+quotePath(name))
		return
	}
	if err := s.store.Remove(name); err != nil {
		s.storeError(w, r, err)
		return
	}
	s.distribute(name, false)
	info, err := s.store.Info(name)
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.summary(info))
}

// PUT /api/v1/platform/toolsets/{name}/package[?force=true] (body: the
// zip) → 202 ToolsetDetail (status pending).
func (s *Server) putPackage(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	if reservedNames[name] {
		WriteError(w, http.StatusBadRequest, "InvalidName", fmt.Sprintf("the name %q is reserved", name))
		return
	}
	force, ok := boolQuery(w, r, "force")
	if !ok {
		return
	}
	// Held until the store has the upload (and the toolset is pending):
	// an agent put meanwhile is refused rather than slipping in after
	// the check.
	end, users := s.agents.reserve(name, force)
	if end == nil {
		s.packageInUseDetail(w, name, users, "upload")
		return
	}
	defer end()
	f, size, done, ok := s.receiveZip(w, r)
	if !ok {
		return
	}
	defer done()
	info, err := s.startUpload(r, name, f, size)
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	w.Header().Set("Location", apiPrefix+"toolsets/"+name)
	writeJSON(w, http.StatusAccepted, s.detail(info))
}

// startUpload hands a spooled package to the store. The store waits for
// an earlier upload of the toolset to be discovered; the wait ends with
// the request or the server.
func (s *Server) startUpload(r *http.Request, name string, f *os.File, size int64) (toolpkg.Info, error) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	info, err := s.store.StartUpload(ctx, name, f, size)
	if err == nil {
		s.distribute(name, true)
		// Agents use it only when the upload was forced: the deployed
		// ones follow once the version is ready.
		if len(s.agents.usedBy(name)) > 0 {
			s.redeployWhenReady(name, info.Version)
		}
	}
	return info, err
}

// uploadSlot waits for one of the MaxConcurrentUploads slots.
func (s *Server) uploadSlot(w http.ResponseWriter, r *http.Request) (func(), bool) {
	select {
	case s.uploads <- struct{}{}:
		return func() { <-s.uploads }, true
	case <-r.Context().Done():
		WriteError(w, http.StatusServiceUnavailable, "Unavailable", "the request ended while waiting for an upload slot")
	case <-s.ctx.Done():
		WriteError(w, http.StatusServiceUnavailable, "Unavailable", "the server is shutting down")
	}
	return nil, false
}

// errTooLarge is a body above the limit.
var errTooLarge = errors.New("too large")

// spoolFault is a failure of the server's own to keep a body (its
// temporary folder, its disk): the client is not told its details.
type spoolFault struct{ err error }

func (f *spoolFault) Error() string { return "spooling an upload: " + f.err.Error() }
func (f *spoolFault) Unwrap() error { return f.err }

// readTracker notes the error reading its source gave, to tell it from
// one writing to the spool.
type readTracker struct {
	r   io.Reader
	err error
}

func (t *readTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}

// spool copies at most max bytes of r into a new temporary file and
// returns it with its size; errTooLarge as soon as r gives more, a
// *spoolFault when the server could not keep it.
func (s *Server) spool(r io.Reader, max int64) (*os.File, int64, error) {
	f, err := os.CreateTemp(s.tmpDir, "upload-*.zip")
	if err != nil {
		return nil, 0, &spoolFault{err}
	}
	src := &readTracker{r: io.LimitReader(r, max+1)}
	n, err := io.Copy(f, src)
	if err == nil && n > max {
		err = errTooLarge
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = errTooLarge
	}
	if err != nil && src.err == nil && !errors.Is(err, errTooLarge) {
		err = &spoolFault{err}
	}
	if err != nil {
		s.unspool(f)
		return nil, 0, err
	}
	return f, n, nil
}

// receiveZip reads an upload's body as the API takes a zip: bounded by
// Options.MaxPackageBytes (413 at once when a Content-Length says more),
// in one of the upload slots, spooled to a temporary file. done frees
// the slot and removes the file; on !ok the answer has been given.
func (s *Server) receiveZip(w http.ResponseWriter, r *http.Request) (f *os.File, size int64, done func(), ok bool) {
	max := s.opts.MaxPackageBytes
	if r.ContentLength > max {
		tooLarge(w, max)
		return nil, 0, nil, false
	}
	release, ok := s.uploadSlot(w, r)
	if !ok {
		return nil, 0, nil, false
	}
	f, size, err := s.spool(s.bodyLimit(w, r, max), max)
	if err != nil {
		release()
		s.spoolError(w, r, err, max)
		return nil, 0, nil, false
	}
	return f, size, func() { s.unspool(f); release() }, true
}

func (s *Server) unspool(f *os.File) {
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		s.log.Warn("platform: could not remove a temporary upload", "file", f.Name(), "error", err)
	}
}

func tooLarge(w http.ResponseWriter, max int64) {
	// What is left of the body is not read.
	w.Header().Set("Connection", "close")
	WriteError(w, http.StatusRequestEntityTooLarge, "PackageTooLarge", fmt.Sprintf("the package is larger than the limit of %d bytes", max))
}

func (s *Server) spoolError(w http.ResponseWriter, r *http.Request, err error, max int64) {
	if errors.Is(err, errTooLarge) {
		tooLarge(w, max)
		return
	}
	if timedOut(err) {
		s.requestTimeout(w)
		return
	}
	var sf *spoolFault
	if errors.As(err, &sf) {
		s.log.Error("platform: an upload could not be spooled", "method", r.Method, "path", r.URL.Path, "error", err)
		WriteError(w, http.StatusInternalServerError, "InternalError", "the server could not keep the upload; its log says why")
		return
	}
	WriteError(w, http.StatusBadRequest, "InvalidRequest", "reading the package: "+cut(err.Error()))
}

// GET /api/v1/platform/toolsets/{name}/package[?version=N] → 200
// application/zip.
func (s *Server) getPackage(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	v, ok := intQuery(w, r, "version", 0, 0, 1<<30)
	if !ok {
		return
	}
	rc, _, err := s.store.Package(name, v)
	if err != nil {
		if _, ierr := s.store.Info(name); v > 0 && ierr == nil && errors.Is(err, toolpkg.ErrNotFound) {
			WriteError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("toolset %q keeps no package of version %d (the store keeps the latest and the serving version's)", name, v))
			return
		}
		s.storeError(w, r, err)
		return
	}
	defer rc.Close()
	file := name + ".zip"
	if v > 0 {
		file = fmt.Sprintf("%s-v%d.zip", name, v)
	}
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", file))
	h.Set("Cache-Control", "no-store")
	http.ServeContent(w, r, "", time.Time{}, rc)
}

// ConfigBody is the body of the config routes' answers: the toolset-level
// configuration, secrets shown as "<REDACTED>".
type ConfigBody struct {
	Name   string         `json:"name"`
	Config map[string]any `json:"config"`
}

// PATCH /api/v1/platform/toolsets/{name}/config (body: a JSON merge
// patch) → 200 ConfigBody.
func (s *Server) patchConfig(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	var patch map[string]any
	if !s.decodeJSON(w, r, &patch) {
		return
	}
	if patch == nil {
		WriteError(w, http.StatusBadRequest, "InvalidRequest", "the body must be a JSON object (a merge patch)")
		return
	}
	cfg, err := s.store.SetConfig(name, patch)
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	s.distribute(name, false)
	writeJSON(w, http.StatusOK, ConfigBody{Name: name, Config: orEmptyMap(cfg)})
}

// GET /api/v1/platform/toolsets/{name}/config → 200 ConfigBody.
func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	cfg, err := s.store.Config(name)
	if err != nil {
		s.storeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ConfigBody{Name: name, Config: orEmptyMap(cfg)})
}

func orEmptyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
