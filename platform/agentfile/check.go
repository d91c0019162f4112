package agentfile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/gotoolset/toolset/toolpkg/skill"
)

// Options say what the deployer has to resolve an agent file with.
type Options struct {
	// Local are the Go toolsets the program registers, by name, for the
	// file's local entries. Nil: [Check] leaves local entries unchecked
	// and [File.Resolve] refuses them; an empty map knows none.
	Local map[string]toolset.Toolset
	// Store holds the packaged toolsets of the file's package entries.
	// Nil: Packages gives them instead; without either, Check leaves
	// package entries unchecked and Resolve refuses them.
	Store *toolpkg.Store
	// Packages gives the packaged toolsets when Store is nil: toolsets
	// whose tools run elsewhere, such as the runtimes of a mesh, which a
	// client on the broker stands for.
	Packages Packages
	// MCP are options given to every MCP client Resolve makes (a logger,
	// timeouts, ...), after the file's own (its name, headers, policies),
	// so that the program's win where both set the same: a
	// mcptoolset.WithHTTPHeader here replaces the file's header of that
	// name, and a mcptoolset.WithToolOptions here replaces the file's
	// policies.
	MCP []mcptoolset.Option
	// HTTPClient is the client the file's MCP urls are reached with; nil:
	// http.DefaultClient. The file's headers are added to it with
	// mcptoolset.WithHTTPHeader, which sends them to the URL's origin
	// only.
	HTTPClient *http.Client
	// LookupEnv finds the variables ${NAME} refers to when Resolve
	// expands mcp.env and mcp.headers. Nil: none is found, so that a file
	// never reads the resolving process's environment unless the program
	// says which variables it may: a header of a file a user uploaded
	// would otherwise carry any of the process's secrets to the server
	// the file names. Give [AllowEnv] for the variables files may use,
	// or os.LookupEnv to resolve a file of your own.
	LookupEnv func(string) (string, bool)
	// Skills says whether a skill of the given name was uploaded, for
	// [Check] to check the file's attached skills (File.Skills). Nil:
	// they are not checked.
	Skills func(name string) bool
	// SkillSource gives the skill of each name the file attaches, for
	// [File.Resolve] to offer them to the agent: it appends the
	// skill.NewToolset of the attached skills, in the file's order, to
	// Agent.Toolsets (load_skill, read_skill_file, and each loaded
	// skill's tools as the skill has them: see skill.Skill.WithPackage).
	// An error, a nil skill or one of another name is a problem naming
	// the skill. Nil: a file that attaches skills does not resolve.
	SkillSource func(ctx context.Context, name string) (*skill.Skill, error)
}

// StoredConfigs is implemented by [Packages] that keep a toolset-level
// configuration of each toolset (as a [toolpkg.Store] does with
// SetConfig): Config returns it, secret values redacted or not, since
// [Check] only looks at which keys are set. A Packages that implements it
// has Check report a required configuration key of a tool that is set
// nowhere; one that does not leaves that unchecked, since the key may
// be set in a configuration Check cannot see.
type StoredConfigs interface {
	Config(name string) (map[string]any, error)
}

// Packages are packaged toolsets by name, as a [toolpkg.Store] has
// them: Info is a toolset's record (its status and tools, an error for
// one it does not have), ToolsetWithConfig the toolset with an agent's
// configuration, whose tools are named NAME__TOOL and follow new
// versions from turn to turn.
type Packages interface {
	Info(name string) (toolpkg.Info, error)
	ToolsetWithConfig(name string, cfg toolpkg.Config) toolset.Toolset
}

// PackageLister is what Packages may implement to list the toolsets they
// have, so that a misspelt package name gets the closest one as a
// suggestion. A store's Packages implement it.
type PackageLister interface {
	// PackageNames returns the names of the toolsets.
	PackageNames() []string
}

// storePackages are a store's toolsets as Packages.
type storePackages struct{ s *toolpkg.Store }

// PackageNames implements PackageLister.
func (p storePackages) PackageNames() []string { return StoreNames(p.s) }

// StoreNames returns the names of the store's toolsets, for a
// [PackageLister] of Packages made from a store.
func StoreNames(s *toolpkg.Store) []string {
	var names []string
	for _, info := range s.List() {
		names = append(names, info.Name)
	}
	return names
}

func (p storePackages) Info(name string) (toolpkg.Info, error) { return p.s.Info(name) }

func (p storePackages) ToolsetWithConfig(name string, cfg toolpkg.Config) toolset.Toolset {
	return p.s.ToolsetWithConfig(name, cfg)
}

func (p storePackages) Config(name string) (map[string]any, error) { return p.s.Config(name) }

// packages returns where package entries come from: the Store, else
// Packages, else nil.
func (o *Options) packages() Packages {
	switch {
	case o.Store != nil:
		return storePackages{o.Store}
	case o.Packages != nil:
		return o.Packages
	}
	return nil
}

func (o *Options) lookupEnv() func(string) (string, bool) {
	if o != nil && o.LookupEnv != nil {
		return o.LookupEnv
	}
	return func(string) (string, bool) { return "", false }
}

// AllowEnv returns an [Options.LookupEnv] that finds only the named
// variables of the process's environment: each name is a variable's, or
// a prefix when it ends in "*" ("AGENT_*" allows AGENT_DOCS_TOKEN, not
// AGENT). Any other variable is as if unset.
func AllowEnv(names ...string) func(string) (string, bool) {
	names = slices.Clone(names)
	return func(name string) (string, bool) {
		for _, n := range names {
			if p, ok := strings.CutSuffix(n, "*"); ok && len(name) > len(p) && strings.HasPrefix(name, p) || n == name {
				return os.LookupEnv(name)
			}
		}
		return "", false
	}
}

// Check checks a parsed file against what the deployer has, and returns
// every problem at once as a *CheckError: a local toolset the registry
// does not have, a package the store does not have or whose status is not
// ready (deploying such an agent is refused), configuration the package's
// tools do not declare or of the wrong type, an excluded or renamed tool
// the package does not have, a prefix or rename that makes a tool name
// longer than 64 bytes, a tool of spec.tools (Entry.Only) the package
// does not have, a required configuration key of a package's tool that
// is set nowhere (neither by the agent, nor by the toolset's own
// configuration when the Packages are [StoredConfigs], nor by a
// default: the tool would be left out at run time), an attached skill
// [Options.Skills] does not know, and package tools offered to a run
// under the same name twice, which no turn of such a run could build. What opts does not give (no registry, no store)
// is not checked. MCP servers are not checked: Check, like [Parse],
// starts no process and opens no connection; it only reads the store's
// records.
func Check(ctx context.Context, f *File, opts *Options) error {
	if f == nil {
		return errors.New("agentfile: Check of a nil *File")
	}
	if opts == nil {
		opts = &Options{}
	}
	ps := &problems{file: f.Filename}
	pkgs := opts.packages()
	if opts.Skills != nil {
		for _, sk := range f.Skills {
			if known, err := skillKnown(opts.Skills, sk.Name); err != nil {
				ps.add(sk.Pos, "skill %s: %s", quote(sk.Name), err)
			} else if !known {
				ps.add(sk.Pos, "unknown skill %s: no skill of that name was uploaded", quote(sk.Name))
			}
		}
	}
	offered := map[string][]*Entry{}
	for i := range f.Toolsets {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("agentfile: checking %s: %w", f.Filename, err)
		}
		e := &f.Toolsets[i]
		switch {
		case e.Local != "" && opts.Local != nil:
			if ts, ok := opts.Local[e.Local]; !ok || ts == nil {
				ps.add(e.position("local"), "unknown local toolset %s; this program has %s", quote(e.Local), known(opts.Local))
			}
		case e.Package != nil && pkgs != nil:
		names:
			for _, name := range checkPackage(ps, e, pkgs) {
				for _, other := range offered[name] {
					if sharesRuns(e, other) {
						ps.add(e.position("package"), "the tool name %s is offered twice, here and by the toolset at line %d; give one a prefix",
							quote(name), other.Pos.Line)
						break names
					}
				}
				offered[name] = append(offered[name], e)
			}
		}
	}
	return ps.err()
}

// skillKnown calls the program's Skills, a panic an error.
func skillKnown(known func(string) bool, name string) (ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("looking it up panicked: %v", v)
		}
	}()
	return known(name), nil
}

// sharesRuns says whether some run is shown the tools of both entries.
func sharesRuns(a, b *Entry) bool {
	if len(a.Roles) == 0 || len(b.Roles) == 0 {
		return true
	}
	for _, r := range a.Roles {
		if slices.Contains(b.Roles, r) {
			return true
		}
	}
	return false
}

// known lists a registry's names for a message, bounded.
func known(m map[string]toolset.Toolset) string {
	if len(m) == 0 {
		return "none"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	more := ""
	if len(names) > 20 {
		more = fmt.Sprintf(" and %d more", len(names)-20)
		names = names[:20]
	}
	return strings.Join(names, ", ") + more
}

// checkPackage checks a package entry against the record of it, and
// returns the names the model is offered its tools under, when they are
// known and valid.
func checkPackage(ps *problems, e *Entry, pkgs Packages) []string {
	name := e.Package.Name
	info, err := packageInfo(pkgs, name)
	if err != nil {
		if errors.Is(err, toolpkg.ErrNotFound) {
			msg := fmt.Sprintf("unknown package %s: the store has no toolset of that name", quote(name))
			if near := closestPackage(pkgs, name); near != "" {
				msg += fmt.Sprintf("; did you mean %s?", quote(near))
			}
			ps.add(e.position("package"), "%s", msg)
		} else {
			ps.add(e.position("package"), "package %s: %s", quote(name), textcut.Clip(err.Error(), maxQuotedError))
		}
		return nil
	}
	if info.Status != toolpkg.StatusReady {
		msg := fmt.Sprintf("package %s is not ready (status %s); an agent is deployed only with ready toolsets", quote(name), info.Status)
		if info.Status == toolpkg.StatusFailed && len(info.Errors) > 0 {
			msg += fmt.Sprintf("; its discovery failed: %s", quote(info.Errors[0]))
			if len(info.Errors) > 1 {
				msg += fmt.Sprintf(" and %d more errors", len(info.Errors)-1)
			}
		}
		ps.add(e.position("package"), "%s", msg)
		return nil
	}
	tools := map[string]toolpkg.ToolInfo{}
	declared := map[string][]toolpkg.ConfigField{}
	var names []string
	for _, t := range info.Tools {
		tools[t.Name] = t
		names = append(names, t.Name)
		for _, cf := range t.Config {
			declared[cf.Key] = append(declared[cf.Key], cf)
		}
	}
	toolList := strings.Join(names, ", ")
	cfg := e.Package.Config
	for _, k := range sortedKeys(cfg.Toolset) {
		if contains(toolpkg.ReservedConfigKeys, k) {
			continue
		}
		fields, ok := declared[k]
		if !ok {
			ps.add(e.position("config:"+k), "package %s: no tool takes the configuration key %s", quote(name), quote(k))
			continue
		}
		for _, cf := range fields {
			if msg := typeProblem(cf, cfg.Toolset[k]); msg != "" {
				ps.add(e.position("config:"+k), "package %s: %s %s", quote(name), quote(k), msg)
				break
			}
		}
	}
	for _, tool := range sortedKeys(cfg.Tools) {
		t, ok := tools[tool]
		if !ok {
			ps.add(e.position("tools:"+tool), "package %s has no tool %s; its tools: %s", quote(name), quote(tool), toolList)
			continue
		}
		for _, k := range sortedKeys(cfg.Tools[tool]) {
			if contains(toolpkg.ReservedConfigKeys, k) {
				continue
			}
			i := slices.IndexFunc(t.Config, func(cf toolpkg.ConfigField) bool { return cf.Key == k })
			if i < 0 {
				ps.add(e.position("tools:"+tool+":"+k), "package %s: tool %s takes no configuration key %s", quote(name), quote(tool), quote(k))
				continue
			}
			if msg := typeProblem(t.Config[i], cfg.Tools[tool][k]); msg != "" {
				ps.add(e.position("tools:"+tool+":"+k), "package %s: tool %s: %s %s", quote(name), quote(tool), quote(k), msg)
			}
		}
	}
	for _, tool := range cfg.Exclude {
		if _, ok := tools[tool]; !ok {
			ps.add(e.position("exclude:"+tool), "package %s has no tool %s to exclude; its tools: %s", quote(name), quote(tool), toolList)
		}
	}
	for _, o := range e.Only {
		if tool, ok := strings.CutPrefix(o, name+"__"); !ok || !slices.Contains(names, tool) {
			ps.add(e.position("only:"+o), "package %s has no tool %s (its tools are named %s__TOOL: %s)", quote(name), quote(o), name, toolList)
		}
	}
	// The names the model sees: <package>__<tool>, renamed, prefixed.
	exposed := map[string]bool{}
	for _, t := range info.Tools {
		full := name + "__" + t.Name
		if !slices.Contains(cfg.Exclude, t.Name) && (len(e.Only) == 0 || slices.Contains(e.Only, full)) {
			exposed[full] = true
		}
	}
	checkRequired(ps, e, pkgs, info, exposed)
	for _, from := range sortedKeys(e.Rename) {
		if tool, ok := strings.CutPrefix(from, name+"__"); !ok || !slices.Contains(names, tool) {
			ps.add(e.position("rename:"+from), "rename: package %s has no tool %s (its tools are named %s__TOOL)", quote(name), quote(from), name)
		}
	}
	return checkNames(ps, e, exposed)
}

// checkRequired reports the required configuration keys of the tools
// the entry offers (exposed) that no layer sets: not the agent's values
// for the tool, not its toolset-level values, not the toolset's stored
// configuration, not a default. Unchecked when pkgs keeps no stored
// configuration Check can read.
func checkRequired(ps *problems, e *Entry, pkgs Packages, info toolpkg.Info, exposed map[string]bool) {
	sc, ok := pkgs.(StoredConfigs)
	if !ok {
		return
	}
	name := e.Package.Name
	stored, err := storedConfig(sc, name)
	if err != nil {
		ps.add(e.position("package"), "package %s: reading its configuration: %s", quote(name), textcut.Clip(err.Error(), maxQuotedError))
		return
	}
	cfg := e.Package.Config
	for _, t := range info.Tools {
		if !exposed[name+"__"+t.Name] {
			continue
		}
		var missing []string
		for _, cf := range t.Config {
			if !cf.Required || cf.Default != nil || cfg.Tools[t.Name][cf.Key] != nil || cfg.Toolset[cf.Key] != nil || stored[cf.Key] != nil {
				continue
			}
			k := quote(cf.Key)
			if cf.Secret {
				k += " (a secret)"
			}
			missing = append(missing, k)
		}
		if len(missing) > 0 {
			ps.add(e.position("package"), "package %s: tool %s needs %s, set nowhere: not in the agent's configuration, the toolset's, nor by a default; the tool would be left out",
				quote(name), quote(t.Name), strings.Join(missing, " and "))
		}
	}
}

// storedConfig calls sc.Config, a panic an error: the Packages may be
// the program's own.
func storedConfig(sc StoredConfigs, name string) (cfg map[string]any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("reading it panicked: %v", v)
		}
	}()
	return sc.Config(name)
}

// packageInfo calls pkgs.Info, a panic an error: Packages may be the
// program's own. A record of another toolset is an error too.
func packageInfo(pkgs Packages, name string) (info toolpkg.Info, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("reading its record panicked: %v", v)
		}
	}()
	info, err = pkgs.Info(name)
	if err == nil && info.Name != name {
		err = fmt.Errorf("the record read is of another toolset, %s", quote(info.Name))
	}
	return info, err
}

// maxQuotedError bounds an error's text quoted in a problem.
const maxQuotedError = 512

// checkNames reports the tool names the entry's rename and prefix would
// make invalid or the same, and returns the names, or nil if some are.
func checkNames(ps *problems, e *Entry, exposed map[string]bool) []string {
	out := make([]string, 0, len(exposed))
	seen := make(map[string]bool, len(exposed))
	for _, n := range sortedKeys(exposed) {
		from := n
		if to, ok := e.Rename[n]; ok {
			n = to
		}
		full := e.prefixed(n)
		if !toolNameRE.MatchString(full) {
			ps.add(e.position("prefix"), "prefix %s makes the tool name %s, longer than 64 bytes", quote(e.Prefix), quote(full))
			return nil
		}
		if seen[full] {
			at := e.position("rename:" + from)
			if _, ok := e.Rename[from]; !ok {
				at = e.position("rename:" + renamedTo(e.Rename, n))
			}
			ps.add(at, "rename makes two tools named %s", quote(full))
			return nil
		}
		seen[full] = true
		out = append(out, full)
	}
	return out
}

// renamedTo returns the source name rename maps to to.
func renamedTo(rename map[string]string, to string) string {
	for from, t := range rename {
		if t == to {
			return from
		}
	}
	return ""
}

// typeProblem says how v does not fit the field's type, as the store
// would coerce it (text for integers and booleans is parsed), or "". It
// never shows the value.
func typeProblem(f toolpkg.ConfigField, v any) string {
	if s, ok := v.(string); ok && f.Type != "string" {
		if _, err := toolpkg.ParseConfigValue(f, s); err != nil {
			return fmt.Sprintf("must be %s, and the string given is not one", article(f.Type))
		}
		return ""
	}
	ok := false
	switch f.Type {
	case "string":
		_, ok = v.(string)
	case "boolean":
		_, ok = v.(bool)
	case "integer":
		switch x := v.(type) {
		case int64:
			ok = true
		case float64:
			ok = x == math.Trunc(x) && math.Abs(x) < 1<<53
		}
	default:
		return ""
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("must be %s, not %s", article(f.Type), goKind(v))
}

func article(t string) string {
	if t == "integer" {
		return "an integer"
	}
	return "a " + t
}

func goKind(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// closestPackage returns the name of pkgs closest to name, if pkgs list
// their names and one is close enough to be a misspelling: at most a
// third of its length, and four, edits away. A lister that panics lists
// nothing.
func closestPackage(pkgs Packages, name string) (near string) {
	l, ok := pkgs.(PackageLister)
	if !ok {
		return ""
	}
	defer func() {
		if recover() != nil {
			near = ""
		}
	}()
	best := min((len(name)+1)/3, 4) + 1
	for _, n := range l.PackageNames() {
		if len(n) > 2*maxNameBytes {
			continue
		}
		if d := editDistance(name, n, best); d < best {
			best, near = d, n
		}
	}
	return near
}

// editDistance is the Levenshtein distance of a and b in bytes, or limit
// once it is at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		low := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			low = min(low, cur[j])
		}
		if low >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
