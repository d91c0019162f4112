package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// Bounds of toolset apply: what it reads from the directories it is
// given, and how long it waits for the platform.
const (
	// maxApplyEntries bounds the files and directories walked.
	maxApplyEntries = 10000
	// maxApplyDepth bounds how deep a directory is walked.
	maxApplyDepth = 8
	// maxApplyDocuments bounds the documents taken.
	maxApplyDocuments = 1000
	// applyPoll is how often a toolset's discovery is asked after.
	applyPoll = 250 * time.Millisecond
)

// skippedDirs are never walked: they hold builds, dependencies or a
// repository's own data, never documents.
var skippedDirs = map[string]bool{".git": true, "dist": true, "node_modules": true, ".venv": true, "__pycache__": true}

// kindLine finds the top-level kind of a SAM document without parsing
// it: a file without one is not a document apply takes (a package's
// manifest.yaml, a CI file).
var kindLine = regexp.MustCompile(`(?m)^kind:[ \t]*["']?(agent|toolset|manifest)["']?[ \t]*(#.*)?\r?$`)

func cmdApply(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	platformAddr := fs.String("platform", "", "the platform's URL (required)")
	tokenFile := fs.String("token-file", "", "a file holding the bearer token (default: $TOOLSET_PLATFORM_TOKEN)")
	plan := fs.Bool("plan", false, "show what would change, change nothing")
	force := fs.Bool("force-toolset", false, "re-upload toolsets that agents use (the deployed ones are redeployed)")
	wait := fs.Duration("wait", 5*time.Minute, "how long to wait for each uploaded toolset's discovery")
	goos := fs.String("os", "", "target OS of the builds (default: $SAM_TOOL_TARGET_OS, else the platform's)")
	goarch := fs.String("arch", "", "target architecture of the builds (default: $SAM_TOOL_TARGET_ARCH, else the platform's)")
	pos, err := parse(fs, args, -1, "FILE|DIR...")
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("expected FILE|DIR...: the documents and toolset sources to apply")
	}
	if *platformAddr == "" {
		return usagef("--platform URL is required")
	}
	if *wait <= 0 {
		return usagef("--wait must be positive")
	}
	c, err := newPlatformClient(*platformAddr, *tokenFile)
	if err != nil {
		return err
	}
	want, err := gatherApply(pos)
	if err != nil {
		return err
	}
	a := &applier{c: c, want: want, force: *force, wait: *wait, stdout: stdout, stderr: stderr}
	if len(want.sources) > 0 {
		a.goos, a.goarch, err = packageTarget(ctx, *goos, *goarch, *platformAddr, *tokenFile, stderr)
		if err != nil {
			return err
		}
	}
	steps, err := a.plan(ctx)
	if err != nil {
		return err
	}
	changes := 0
	for _, s := range steps {
		fmt.Fprintln(stdout, printable(s.line()))
		if s.do != nil {
			changes++
		}
	}
	if changes == 0 {
		fmt.Fprintln(stdout, "nothing to change")
		return nil
	}
	if *plan {
		fmt.Fprintf(stdout, "%d change(s) planned; run without --plan to apply\n", changes)
		return nil
	}
	if blocked := blockedSteps(steps); len(blocked) > 0 {
		return errors.New(strings.Join(blocked, "\n"))
	}
	for _, s := range steps {
		if s.do == nil {
			continue
		}
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.what(), err)
		}
		fmt.Fprintf(stdout, "done: %s\n", printable(s.what()))
	}
	return nil
}

// applySet is what the documents and sources given to apply declare.
type applySet struct {
	toolsets map[string]*wantToolset
	agents   map[string]*wantAgent
	// order keeps the documents' order: toolsets, then agents.
	toolsetOrder, agentOrder []string
	// sources are the toolsets with a source to build.
	sources []string
}

// wantToolset is a toolset as the documents declare it.
type wantToolset struct {
	name string
	// doc is its kind: toolset document, nil when only a source names it.
	doc *agentfile.ToolsetDoc
	// where is the document's file, or the source's directory.
	where string
	// src is its source directory, "" when it has none here.
	src string
}

// wantAgent is an agent as the documents declare it.
type wantAgent struct {
	name  string
	file  *agentfile.File
	where string
	// source is the agent's document as the platform is sent it.
	source []byte
	// line is where a manifest's agent begins in it; 0 for a document
	// of its own, whose lines are the platform's.
	line int
}

// gatherApply reads the files and directories given: every problem of
// every document at once.
func gatherApply(paths []string) (*applySet, error) {
	g := &gatherer{set: &applySet{toolsets: map[string]*wantToolset{}, agents: map[string]*wantAgent{}}}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			g.fail(err)
			continue
		}
		switch {
		case fi.IsDir() && isSource(p):
			g.source(p)
		case fi.IsDir():
			// A directory named by a link is walked where it leads: the
			// user named it. Links found inside are not followed.
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			g.walk(p)
		case fi.Mode().IsRegular():
			g.file(p, true)
		default:
			g.fail(fmt.Errorf("%s: neither a file nor a directory (a pipe or a device is never read)", p))
		}
	}
	g.pairSources()
	if len(g.errs) > 0 {
		return nil, errors.New(strings.Join(g.errs, "\n"))
	}
	if len(g.set.toolsets)+len(g.set.agents) == 0 {
		return nil, fmt.Errorf("no document of kind agent, toolset or manifest, and no toolset source (a directory with %s), in %s", toolpkg.ManifestName, strings.Join(paths, ", "))
	}
	return g.set, nil
}

// gatherer collects documents and sources, and the problems found.
type gatherer struct {
	set     *applySet
	errs    []string
	entries int
	docs    int
	// srcs are the source directories found, by the name Build gives
	// them, with where they were found.
	srcs     map[string]string
	srcOrder []string
}

func (g *gatherer) fail(err error) { g.errs = append(g.errs, printable(err.Error())) }

// isSource tells whether dir is a toolset source: it holds a manifest.
func isSource(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, toolpkg.ManifestName))
	return err == nil && fi.Mode().IsRegular()
}

// sourceName is the name toolpkg.Build gives a source directory: its
// base name, its parent's for toolsets/NAME/src.
func sourceName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	name := filepath.Base(abs)
	if name == "src" {
		name = filepath.Base(filepath.Dir(abs))
	}
	return name
}

// walk takes the documents and sources under root, within the bounds;
// symbolic links are not followed.
func (g *gatherer) walk(root string) {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			g.fail(err)
			return nil
		}
		g.entries++
		if g.entries > maxApplyEntries {
			return fmt.Errorf("%s: more than %d files and directories: give the documents' directory, not a larger one", root, maxApplyEntries)
		}
		if d.IsDir() {
			if p != root && (skippedDirs[d.Name()] || strings.Count(strings.TrimPrefix(p, root), string(filepath.Separator)) > maxApplyDepth) {
				return filepath.SkipDir
			}
			if p != root && isSource(p) {
				g.source(p)
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			g.file(p, false)
		}
		return nil
	})
	if err != nil {
		g.fail(err)
	}
}

// source notes a toolset source directory.
func (g *gatherer) source(dir string) {
	name := sourceName(dir)
	if err := toolpkg.CheckName(name); err != nil {
		g.fail(fmt.Errorf("%s: a toolset source whose name %q is not a toolset's: %w", dir, name, err))
		return
	}
	if g.srcs == nil {
		g.srcs = map[string]string{}
	}
	if prev, ok := g.srcs[name]; ok {
		g.fail(fmt.Errorf("%s: a second source of toolset %s (the first: %s)", dir, name, prev))
		return
	}
	g.srcs[name] = dir
	g.srcOrder = append(g.srcOrder, name)
}

// file reads one document; named says the user gave it by name, so that
// a file that is not a document is a problem rather than skipped.
func (g *gatherer) file(p string, named bool) {
	f, err := os.Open(p)
	if err != nil {
		g.fail(err)
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, agentfile.MaxFileBytes+1))
	f.Close()
	if err != nil {
		g.fail(err)
		return
	}
	if len(data) > agentfile.MaxFileBytes {
		if named {
			g.fail(fmt.Errorf("%s: larger than %d bytes, the most a document may be", p, agentfile.MaxFileBytes))
		}
		return
	}
	if !named && !kindLine.Match(data) {
		return
	}
	g.docs++
	if g.docs > maxApplyDocuments {
		if g.docs == maxApplyDocuments+1 {
			g.fail(fmt.Errorf("more than %d documents", maxApplyDocuments))
		}
		return
	}
	doc, err := agentfile.ParseDocument(data, p)
	if err != nil {
		g.fail(err)
		return
	}
	switch doc.Kind {
	case agentfile.KindToolset:
		g.toolset(doc.Toolset, p)
	case agentfile.KindManifest:
		for _, t := range doc.Manifest.Toolsets {
			g.toolset(t, p)
		}
		if len(doc.Manifest.Agents) > 0 {
			sources, lines, err := manifestAgents(data)
			if err != nil || len(sources) != len(doc.Manifest.Agents) {
				if err == nil {
					err = errors.New("its agents could not be told apart")
				}
				g.fail(fmt.Errorf("%s: %w", p, err))
				return
			}
			for i, a := range doc.Manifest.Agents {
				g.agent(a, p, sources[i], lines[i])
			}
		}
	default:
		g.agent(doc.Agent, p, data, 0)
	}
}

func (g *gatherer) toolset(t *agentfile.ToolsetDoc, where string) {
	if prev, ok := g.set.toolsets[t.Name]; ok {
		g.fail(fmt.Errorf("%s:%d: toolset %s is declared twice (the first in %s)", where, t.Pos.Line, t.Name, prev.where))
		return
	}
	g.set.toolsets[t.Name] = &wantToolset{name: t.Name, doc: t, where: where}
	g.set.toolsetOrder = append(g.set.toolsetOrder, t.Name)
}

func (g *gatherer) agent(f *agentfile.File, where string, source []byte, line int) {
	if err := toolpkg.CheckName(f.Name); err != nil {
		g.fail(fmt.Errorf("%s: the agent's name %q cannot name an agent on the platform: use 1 to 64 letters, digits, '_' or '-', starting with a letter or digit", where, f.Name))
		return
	}
	if prev, ok := g.set.agents[f.Name]; ok {
		g.fail(fmt.Errorf("%s: agent %s is declared twice (the first in %s)", where, f.Name, prev.where))
		return
	}
	g.set.agents[f.Name] = &wantAgent{name: f.Name, file: f, where: where, source: source, line: line}
	g.set.agentOrder = append(g.set.agentOrder, f.Name)
}

// pairSources gives each source its toolset: the document of that name,
// or a toolset of its own when no document names it.
func (g *gatherer) pairSources() {
	for _, name := range g.srcOrder {
		dir := g.srcs[name]
		t, ok := g.set.toolsets[name]
		if !ok {
			t = &wantToolset{name: name, where: dir}
			g.set.toolsets[name] = t
			g.set.toolsetOrder = append(g.set.toolsetOrder, name)
		}
		t.src = dir
		g.set.sources = append(g.set.sources, name)
	}
}

// manifestAgents returns the YAML of each agent of a manifest, as the
// platform is sent it: the document has been read already, so it is
// within the bounds; an agent that uses an anchor or an alias is
// refused, since it would not stand alone.
func manifestAgents(data []byte) (docs [][]byte, lines []int, err error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, err
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 {
		return nil, nil, errors.New("not one document")
	}
	agents := mapValue(mapValue(root.Content[0], "resources"), "agents")
	if agents == nil || agents.Kind != yaml.SequenceNode {
		return nil, nil, errors.New("no list resources.agents")
	}
	for _, n := range agents.Content {
		if hasAlias(n) {
			return nil, nil, fmt.Errorf("line %d: an agent of a manifest may not use YAML anchors or aliases: each is sent to the platform on its own", n.Line)
		}
		b, err := yaml.Marshal(n)
		if err != nil {
			return nil, nil, err
		}
		docs = append(docs, b)
		lines = append(lines, n.Line)
	}
	return docs, lines, nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return true
	}
	return slices.ContainsFunc(n.Content, hasAlias)
}

// applier plans and applies a set against a platform.
type applier struct {
	c            *platformClient
	want         *applySet
	force        bool
	wait         time.Duration
	goos, goarch string
	stdout       io.Writer
	stderr       io.Writer
	users        map[string][]string // toolset → agents that use it, on the platform
	uploaded     map[string]bool     // toolsets whose package apply uploads, and waits for
}

// applyStep is one line of the plan, and what applying it does (nil: an
// unchanged resource).
type applyStep struct {
	verb, kind, name, detail string
	blocked                  string
	do                       func(context.Context) error
}

func (s *applyStep) what() string { return s.verb + " " + s.kind + " " + s.name }

func (s *applyStep) line() string {
	mark := "~"
	switch {
	case s.do == nil:
		mark = "="
	case strings.HasPrefix(s.verb, "create"):
		mark = "+"
	case strings.Contains(s.verb, "deploy"):
		mark = ">"
	}
	l := mark + " " + s.what()
	if s.detail != "" {
		l += ": " + s.detail
	}
	if s.blocked != "" {
		l += " (" + s.blocked + ")"
	}
	return l
}

// blockedSteps are the reasons nothing is applied.
func blockedSteps(steps []*applyStep) []string {
	var out []string
	for _, s := range steps {
		if s.blocked != "" {
			out = append(out, s.what()+": "+s.blocked)
		}
	}
	return out
}

// plan asks the platform what it has and says what applying changes, in
// the order it is done: toolsets (created, uploaded, configured), then
// agents (created or updated, then deployed).
func (a *applier) plan(ctx context.Context) ([]*applyStep, error) {
	if err := a.loadUsers(ctx); err != nil {
		return nil, err
	}
	a.uploaded = map[string]bool{}
	// A toolset's configuration is set once its upload's discovery has
	// settled: before, the platform cannot tell its secrets from the
	// rest, and keeps every value sealed. The agents come once the
	// toolsets they name are ready.
	var steps, waits, configs []*applyStep
	for _, name := range a.want.toolsetOrder {
		ss, cfg, err := a.planToolset(ctx, a.want.toolsets[name])
		if err != nil {
			return nil, err
		}
		steps = append(steps, ss...)
		if a.uploaded[name] {
			waits = append(waits, &applyStep{verb: "wait for", kind: "toolset", name: name, detail: "its discovery",
				do: func(ctx context.Context) error { return a.waitReady(ctx, name) }})
		}
		if cfg != nil {
			configs = append(configs, cfg)
		}
	}
	steps = append(append(steps, waits...), configs...)
	var deploys []*applyStep
	for _, name := range a.want.agentOrder {
		s, d, err := a.planAgent(ctx, a.want.agents[name])
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
		if d != nil {
			deploys = append(deploys, d)
		}
	}
	return append(steps, deploys...), nil
}

// loadUsers lists the platform's agents, for the toolsets each uses.
func (a *applier) loadUsers(ctx context.Context) error {
	const pageSize = 100
	a.users = map[string][]string{}
	for page := 1; ; page++ {
		var l platform.List[platform.AgentSummary]
		ok, err := a.c.getJSON(ctx, []string{"api/v1/platform/agents"}, url.Values{"page": {fmt.Sprint(page)}, "pageSize": {fmt.Sprint(pageSize)}}, &l)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the platform at %s has no agents API (404): is it a toolset platform?", a.c.base)
		}
		if len(l.Data) > pageSize {
			return fmt.Errorf("the platform at %s listed %d agents on a page of %d: more agents than asked", a.c.base, len(l.Data), pageSize)
		}
		for _, ag := range l.Data {
			for _, p := range ag.Packages {
				// Only the toolsets applied are asked after.
				if a.want.toolsets[p] != nil {
					a.users[p] = append(a.users[p], ag.Name)
				}
			}
		}
		if len(l.Data) < pageSize || page*pageSize >= l.Meta.Total || page >= 1000 {
			return nil
		}
	}
}

func (a *applier) planToolset(ctx context.Context, t *wantToolset) (steps []*applyStep, config *applyStep, err error) {
	var cur platform.ToolsetDetail
	exists, err := a.c.getJSON(ctx, []string{"api/v1/platform/toolsets", t.name}, nil, &cur)
	if err != nil {
		return nil, nil, err
	}
	if exists && cur.DiscoveryStatus == toolpkg.StatusRemoved {
		exists = false
	}
	name := t.name
	if !exists && t.src == "" {
		steps = append(steps, &applyStep{verb: "create", kind: "toolset", name: name, detail: "no package yet", do: func(ctx context.Context) error {
			return a.expect(ctx, http.MethodPost, []string{"api/v1/platform/toolsets"}, nil, "application/json", []byte(`{"name":"`+name+`"}`), http.StatusCreated)
		}})
	}
	if t.src != "" {
		zip, err := a.build(ctx, t)
		if err != nil {
			return nil, nil, err
		}
		same := false
		if exists && cur.Version > 0 {
			stored, err := a.c.do(ctx, http.MethodGet, []string{"api/v1/platform/toolsets", name, "package"}, nil, "", nil, toolpkg.DefaultMaxZipBytes)
			if err != nil {
				return nil, nil, err
			}
			if stored.status != http.StatusOK {
				return nil, nil, a.c.unexpected(stored)
			}
			same = sha256.Sum256(stored.body) == sha256.Sum256(zip)
		}
		switch {
		case same:
			steps = append(steps, &applyStep{verb: "keep", kind: "toolset", name: name, detail: fmt.Sprintf("package unchanged (version %d, %s)", cur.Version, cur.DiscoveryStatus)})
		default:
			verb, detail := "create", fmt.Sprintf("upload the package built from %s (%d bytes)", t.src, len(zip))
			if exists {
				verb, detail = "re-upload", fmt.Sprintf("the package built from %s changed (%d bytes; version %d is %s)", t.src, len(zip), cur.Version, cur.DiscoveryStatus)
			}
			s := &applyStep{verb: verb, kind: "toolset", name: name, detail: detail}
			users := a.users[name]
			if exists && len(users) > 0 {
				if a.force {
					s.detail += "; agents using it, redeployed: " + strings.Join(users, ", ")
				} else {
					s.blocked = "used by agents " + strings.Join(users, ", ") + ": give --force-toolset to re-upload it"
				}
			}
			force := a.force
			s.do = func(ctx context.Context) error {
				q := url.Values{}
				if force {
					q.Set("force", "true")
				}
				return a.expect(ctx, http.MethodPut, []string{"api/v1/platform/toolsets", name, "package"}, q, "application/zip", zip, http.StatusAccepted)
			}
			steps = append(steps, s)
			a.uploaded[name] = true
		}
	}
	if t.doc != nil {
		config = a.planConfig(t, cur.Config)
	}
	if len(steps) == 0 && config == nil {
		steps = append(steps, &applyStep{verb: "keep", kind: "toolset", name: name, detail: string(cur.DiscoveryStatus)})
	}
	return steps, config, nil
}

// planConfig compares the document's spec.config with the platform's:
// the document is the whole configuration, so a key it lacks is unset.
// A secret the platform shows redacted cannot be compared: a document
// that gives its value sets it again; one that gives "<REDACTED>" keeps
// it.
func (a *applier) planConfig(t *wantToolset, cur map[string]any) *applyStep {
	patch := map[string]any{}
	var set, unset []string
	for k, v := range t.doc.Config {
		old, ok := cur[k]
		if ok && (jsonEqual(old, v) || v == toolpkg.RedactedValue) {
			continue
		}
		if v == toolpkg.RedactedValue {
			continue // nothing stored to keep
		}
		patch[k] = v
		set = append(set, k)
	}
	for k := range cur {
		if _, ok := t.doc.Config[k]; !ok {
			patch[k] = nil
			unset = append(unset, k)
		}
	}
	if len(patch) == 0 {
		return nil
	}
	slices.Sort(set)
	slices.Sort(unset)
	var parts []string
	if len(set) > 0 {
		parts = append(parts, "set "+strings.Join(set, ", "))
	}
	if len(unset) > 0 {
		parts = append(parts, "unset "+strings.Join(unset, ", "))
	}
	name := t.name
	body, err := json.Marshal(patch)
	if err != nil {
		return &applyStep{verb: "configure", kind: "toolset", name: name, blocked: "its configuration is not JSON: " + err.Error()}
	}
	return &applyStep{verb: "configure", kind: "toolset", name: name, detail: strings.Join(parts, "; "), do: func(ctx context.Context) error {
		return a.expect(ctx, http.MethodPatch, []string{"api/v1/platform/toolsets", name, "config"}, nil, "application/merge-patch+json", body, http.StatusOK)
	}}
}

// build builds a toolset's source for the platform's target, its output
// on stderr, and returns the zip.
func (a *applier) build(ctx context.Context, t *wantToolset) ([]byte, error) {
	res, err := toolpkg.Build(ctx, t.src, &toolpkg.BuildOptions{Name: t.name, GOOS: a.goos, GOARCH: a.goarch, Log: a.stderr})
	if err != nil {
		return nil, fmt.Errorf("building toolset %s from %s: %w", t.name, t.src, err)
	}
	var buf bytes.Buffer
	if err := toolpkg.ZipDir(res.Dir, &buf); err != nil {
		return nil, fmt.Errorf("zipping toolset %s: %w", t.name, err)
	}
	return buf.Bytes(), nil
}

func (a *applier) planAgent(ctx context.Context, w *wantAgent) (step, deploy *applyStep, err error) {
	var cur platform.AgentDetail
	exists, err := a.c.getJSON(ctx, []string{"api/v1/platform/agents", w.name}, nil, &cur)
	if err != nil {
		return nil, nil, err
	}
	name, source := w.name, w.source
	put := func(ctx context.Context) error {
		err := a.expect(ctx, http.MethodPut, []string{"api/v1/platform/agents", name}, nil, "application/yaml", source, http.StatusOK, http.StatusCreated)
		if err != nil && w.line > 0 {
			err = fmt.Errorf("%w\n(the lines are those of the agent as sent on its own; its entry begins at %s:%d)", err, w.where, w.line)
		}
		return err
	}
	changed := true
	switch {
	case !exists:
		step = &applyStep{verb: "create", kind: "agent", name: name, detail: "from " + w.where, do: put}
	case a.sameAgent(ctx, w, cur.Source):
		step = &applyStep{verb: "keep", kind: "agent", name: name, detail: "unchanged"}
		changed = false
	default:
		step = &applyStep{verb: "update", kind: "agent", name: name, detail: "its document differs from the platform's", do: put}
	}
	// SAM's spec.deploy: true asks for the agent to be deployed; an agent
	// deployed already is deployed again when it or a toolset it uses
	// changed (a forced re-upload redeploys it on the platform's side).
	wantDeploy := w.file.Deploy != nil && *w.file.Deploy
	var changedUses []string
	for _, p := range w.file.Packages() {
		if a.uploaded[p] {
			changedUses = append(changedUses, p)
		}
	}
	if wantDeploy && (changed || !cur.Deployed || len(changedUses) > 0) {
		detail := "spec.deploy is true"
		if len(changedUses) > 0 {
			detail += "; toolsets changed: " + strings.Join(changedUses, ", ")
		}
		deploy = &applyStep{verb: "deploy", kind: "agent", name: name, detail: detail, do: func(ctx context.Context) error {
			return a.expect(ctx, http.MethodPost, []string{"api/v1/platform/agents", name, "deploy"}, nil, "", nil, http.StatusOK)
		}}
	}
	return step, deploy, nil
}

// sameAgent tells whether the platform's agent is the document: the
// platform stores an agent with its secret values redacted, so the
// document is sent to its check (which stores nothing) to see what
// would be stored. Only a document that the check stores as it is, and
// which is what the platform has, is the same: one that holds secret
// values sets them again, since they cannot be compared.
func (a *applier) sameAgent(ctx context.Context, w *wantAgent, stored string) bool {
	if strings.TrimSpace(stored) != strings.TrimSpace(string(w.source)) {
		return false
	}
	ans, err := a.c.do(ctx, http.MethodPost, []string{"api/v1/platform/agents", w.name, "check"}, nil, "application/yaml", w.source, maxPlatformAnswer)
	if err != nil || ans.status != http.StatusOK {
		return false
	}
	var d platform.AgentDetail
	return json.Unmarshal(ans.body, &d) == nil && strings.TrimSpace(d.Source) == strings.TrimSpace(string(w.source))
}

// waitReady waits for a toolset's discovery to settle: an error when it
// failed, with the platform's reasons.
func (a *applier) waitReady(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeoutCause(ctx, a.wait, fmt.Errorf("its discovery did not settle within %s (--wait)", a.wait))
	defer cancel()
	tick := time.NewTicker(applyPoll)
	defer tick.Stop()
	for {
		var cur platform.ToolsetDetail
		ok, err := a.c.getJSON(ctx, []string{"api/v1/platform/toolsets", name}, nil, &cur)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("the platform has no such toolset (404)")
		}
		switch cur.DiscoveryStatus {
		case toolpkg.StatusReady:
			return nil
		case toolpkg.StatusFailed:
			return fmt.Errorf("discovery failed: %s", bounded(strings.Join(cur.DiscoveryErrors, "; ")))
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
}

// expect sends a request and wants one of the statuses.
func (a *applier) expect(ctx context.Context, method string, path []string, q url.Values, contentType string, body []byte, want ...int) error {
	ans, err := a.c.do(ctx, method, path, q, contentType, body, maxPlatformAnswer)
	if err != nil {
		return err
	}
	if slices.Contains(want, ans.status) {
		return nil
	}
	if ans.status == http.StatusUnauthorized {
		return a.c.unauthorized("")
	}
	var eb platform.ErrorBody
	if json.Unmarshal(ans.body, &eb) == nil && eb.Error.Code != "" {
		msg := fmt.Sprintf("the platform answered %d %s: %s", ans.status, eb.Error.Code, bounded(eb.Error.Message))
		for _, p := range eb.Error.Problems {
			where := ""
			if p.Line > 0 {
				where = fmt.Sprintf("line %d: ", p.Line)
			}
			msg += "\n  " + where + bounded(p.Message)
		}
		return errors.New(msg)
	}
	return a.c.unexpected(ans)
}

// jsonEqual compares two configuration values as JSON does: a YAML
// integer and the platform's JSON number are the same value.
func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	var x, y any
	if err1 != nil || err2 != nil || json.Unmarshal(ja, &x) != nil || json.Unmarshal(jb, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
