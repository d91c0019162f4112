package agentfile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/gotoolset/toolset/toolpkg/skill"
)

// Role is the run value an entry's roles are matched against when the
// file names no other (roleKey): give a run
// toolset.WithValue(agentfile.Role, "staff"), or [Agent.WithRole] for any
// file. Its name is "role", so any toolset.NewKey[string]("role") reads and
// sets the same value.
var Role = toolset.NewKey[string]("role")

// Agent is a resolved agent file: its toolsets, ready for
// toolset.BuildTools(turn, agent.Name, agent.Toolsets...).
type Agent struct {
	// Name is the agent's name.
	Name string
	// Instructions is the file's instructions; the toolsets' own are
	// gathered with toolset.Instructions(ctx, agent.Toolsets...).
	Instructions string
	// Toolsets are the file's toolsets in order, composed and with their
	// policies, then the tool search of the deferred ones if any. Close
	// the Agent, not these: a local toolset belongs to the program.
	Toolsets []toolset.Toolset
	// RoleKey is the name of the run value the toolsets' roles are
	// matched against: the file's roleKey, or "role".
	RoleKey string

	closers []io.Closer
}

// WithRole returns the run option that gives a run role as the value the
// agent's roles are matched against (the file's roleKey, [Role] by
// default).
func (a *Agent) WithRole(role string) toolset.RunOption {
	name := Role.Name()
	if a != nil && a.RoleKey != "" {
		name = a.RoleKey
	}
	return toolset.WithValue(toolset.NewKey[string](name), role)
}

// Close ends the MCP clients the agent started (a command server is
// stopped). Local toolsets and the store are left alone.
func (a *Agent) Close() error {
	if a == nil {
		return nil
	}
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i].Close())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// Load reads, parses, checks and resolves the agent file at path. The
// caller closes the Agent.
func Load(ctx context.Context, path string, opts *Options) (*Agent, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	return f.Resolve(ctx, opts)
}

// ReadFile reads an agent file, at most MaxFileBytes of it and one byte
// more, so that Parse reports a bigger one.
func ReadFile(path string) ([]byte, error) {
	// Not opened unless it is a regular file: opening a named pipe waits
	// for a writer, a device may do anything.
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("agentfile: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("agentfile: %s is not a regular file", path)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agentfile: %w", err)
	}
	defer fh.Close()
	if st, err := fh.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("agentfile: %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("agentfile: reading %s: %w", path, err)
	}
	return data, nil
}

// Resolve checks the file ([Check]) and makes its toolsets: local ones
// from opts.Local, MCP clients (which connect, and start a command, on
// first use), packages from opts.Store (else opts.Packages) as
// ToolsetWithConfig(name, config), which follow the store so that a
// re-upload is used from the agent's next turn. Each entry is then
// limited to its Only tools, given its policies, renamed, prefixed and
// filtered by roles, in this order. A local entry without opts.Local, a package entry without
// opts.Store or opts.Packages and an unset ${NAME} are problems in the
// returned *CheckError. The file's attached skills come from
// opts.SkillSource, offered by one skill toolset after the others;
// attached skills without a SkillSource are problems too.
func (f *File) Resolve(ctx context.Context, opts *Options) (*Agent, error) {
	if f == nil {
		return nil, errors.New("agentfile: Resolve of a nil *File")
	}
	if opts == nil {
		opts = &Options{}
	}
	if err := Check(ctx, f, opts); err != nil {
		return nil, err
	}
	ps := &problems{file: f.Filename}
	a := &Agent{Name: f.Name, Instructions: f.Instructions, RoleKey: cmp.Or(f.RoleKey, Role.Name())}
	roleKey := toolset.NewKey[string](a.RoleKey)
	var deferred []toolset.Toolset
	for i := range f.Toolsets {
		e := &f.Toolsets[i]
		src := a.source(ps, e, opts)
		if src == nil {
			continue
		}
		ts := src
		if len(e.Only) > 0 {
			ts = toolset.NewFiltered(ts, only(slices.Clone(e.Only)))
		}
		if e.hasPolicies() && e.MCP == nil {
			origin := "agent:" + f.Name + "/toolsets[" + strconv.Itoa(i) + "]"
			// The tools are made elsewhere (a local toolset, a package):
			// each is offered again with the entry's policies. A tool made
			// again for a changed definition keeps the failure budget and
			// rate window of the one before, by its origin.
			p := e.policies()
			ts = toolset.NewGuarded(ts, func(t toolset.Tool) []toolset.ToolOption {
				return append(p.options(&t), toolset.WithOrigin(origin))
			})
		}
		if len(e.Rename) > 0 {
			ts = toolset.NewRenamed(ts, e.Rename)
		}
		if e.Prefix != "" {
			if strings.HasSuffix(e.Prefix, "_") || strings.HasSuffix(e.Prefix, "-") {
				ts = toolset.NewPrefixed(ts, e.Prefix, toolset.WithSeparator(""))
			} else {
				ts = toolset.NewPrefixed(ts, e.Prefix)
			}
		}
		if len(e.Roles) > 0 {
			ts = toolset.NewFiltered(ts, hasRole(roleKey, slices.Clone(e.Roles)))
		}
		a.Toolsets = append(a.Toolsets, ts)
		if e.Deferred {
			deferred = append(deferred, ts)
		}
	}
	skills := resolveSkills(ctx, ps, f, opts)
	if err := ps.err(); err != nil {
		_ = a.Close()
		return nil, err
	}
	if len(deferred) > 0 {
		a.Toolsets = append(a.Toolsets, toolset.NewToolSearch(toolset.NewCombined(deferred...)))
	}
	if skills != nil {
		a.Toolsets = append(a.Toolsets, skills)
	}
	return a, nil
}

// resolveSkills makes the toolset of the file's attached skills from
// opts.SkillSource; nil for a file that attaches none, or with problems
// added.
func resolveSkills(ctx context.Context, ps *problems, f *File, opts *Options) toolset.Toolset {
	if len(f.Skills) == 0 {
		return nil
	}
	if opts.SkillSource == nil {
		for _, ref := range f.Skills {
			ps.add(ref.Pos, "skill %s is attached, but this program gives no skills (Options.SkillSource)", quote(ref.Name))
		}
		return nil
	}
	var skills []*skill.Skill
	for _, ref := range f.Skills {
		sk, err := skillOf(ctx, opts.SkillSource, ref.Name)
		switch {
		case err != nil:
			ps.add(ref.Pos, "skill %s: %s", quote(ref.Name), err)
		case sk == nil:
			ps.add(ref.Pos, "skill %s: the program's SkillSource gave no skill", quote(ref.Name))
		case sk.Name() != ref.Name:
			ps.add(ref.Pos, "skill %s: the program's SkillSource gave skill %s", quote(ref.Name), quote(sk.Name()))
		default:
			skills = append(skills, sk)
		}
	}
	if len(skills) < len(f.Skills) {
		return nil
	}
	ts, err := skill.NewToolset(skills...)
	if err != nil {
		ps.add(f.Skills[0].Pos, "the attached skills: %s", err)
		return nil
	}
	return ts
}

// skillOf calls the program's SkillSource, a panic an error.
func skillOf(ctx context.Context, src func(context.Context, string) (*skill.Skill, error), name string) (sk *skill.Skill, err error) {
	defer func() {
		if v := recover(); v != nil {
			sk, err = nil, fmt.Errorf("the program's SkillSource panicked: %v", v)
		}
	}()
	return src(ctx, name)
}

// only shows the tools named in names.
func only(names []string) toolset.Predicate {
	return func(_ context.Context, t toolset.Tool) (bool, error) {
		return slices.Contains(names, t.Name), nil
	}
}

// hasRole shows a toolset to runs whose role, the value of key, is one of
// roles.
func hasRole(key toolset.Key[string], roles []string) toolset.Predicate {
	return func(ctx context.Context, _ toolset.Tool) (bool, error) {
		return slices.Contains(roles, key.Get(ctx)), nil
	}
}

// source makes the entry's source toolset, or reports why it cannot.
func (a *Agent) source(ps *problems, e *Entry, opts *Options) toolset.Toolset {
	switch {
	case e.Local != "":
		if opts.Local == nil {
			ps.add(e.position("local"), "local toolset %s: this program registers no local toolsets", quote(e.Local))
			return nil
		}
		return opts.Local[e.Local] // Check made sure it is there
	case e.Package != nil:
		pkgs := opts.packages()
		if pkgs == nil {
			ps.add(e.position("package"), "package %s: no store to take it from", quote(e.Package.Name))
			return nil
		}
		ts, err := packageToolset(pkgs, e.Package.Name, e.Package.Config)
		if err != nil {
			ps.add(e.position("package"), "package %s: %s", quote(e.Package.Name), textcut.Clip(err.Error(), maxQuotedError))
			return nil
		}
		return ts
	case e.MCP != nil:
		return a.mcp(ps, e, opts)
	}
	ps.add(e.Pos, "a toolset without a source")
	return nil
}

// packageToolset calls pkgs.ToolsetWithConfig, a panic or a nil
// toolset an error: Packages may be the program's own.
func packageToolset(pkgs Packages, name string, cfg toolpkg.Config) (ts toolset.Toolset, err error) {
	defer func() {
		if v := recover(); v != nil {
			ts, err = nil, fmt.Errorf("making its toolset panicked: %v", v)
		}
	}()
	ts = pkgs.ToolsetWithConfig(name, cfg)
	if ts == nil {
		return nil, errors.New("no toolset was made of it")
	}
	return ts, nil
}

// mcp makes the entry's MCP client.
func (a *Agent) mcp(ps *problems, e *Entry, opts *Options) toolset.Toolset {
	m := e.MCP
	at := e.position("mcp")
	lookup := opts.lookupEnv()
	var mopts []mcptoolset.Option
	if m.Name != "" {
		mopts = append(mopts, mcptoolset.WithName(m.Name))
	}
	if e.hasPolicies() {
		to := e.toolOptions()
		mopts = append(mopts, mcptoolset.WithToolOptions(func(*mcp.Tool) []toolset.ToolOption { return to }))
	}
	expandAll := func(what string, in map[string]string) (map[string]string, bool) {
		out := make(map[string]string, len(in))
		for _, k := range sortedKeys(in) {
			v, bad := expand(in[k], lookup)
			if bad != "" {
				ps.add(at, "%s %s: %s", what, quote(k), bad)
				return nil, false
			}
			out[k] = v
		}
		return out, true
	}
	if len(m.Command) > 0 {
		env, ok := expandAll("mcp.env", m.Env)
		if !ok {
			return nil
		}
		cmd := exec.Command(m.Command[0], m.Command[1:]...)
		cmd.Env = os.Environ()
		for _, k := range sortedKeys(env) {
			cmd.Env = append(cmd.Env, k+"="+env[k])
		}
		ts := mcptoolset.NewCommand(cmd, append(mopts, opts.MCP...)...)
		a.closers = append(a.closers, ts)
		return ts
	}
	headers, ok := expandAll("mcp.headers", m.Headers)
	if !ok {
		return nil
	}
	for _, k := range sortedKeys(headers) {
		mopts = append(mopts, mcptoolset.WithHTTPHeader(k, headers[k]))
	}
	if opts.HTTPClient != nil {
		mopts = append(mopts, mcptoolset.WithHTTPClient(opts.HTTPClient))
	}
	ts := mcptoolset.NewHTTP(m.URL, append(mopts, opts.MCP...)...)
	a.closers = append(a.closers, ts)
	return ts
}
