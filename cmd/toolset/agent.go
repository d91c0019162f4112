package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mesh"
	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/gotoolset/toolset/toolpkg/skill"
)

func cmdAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("expected check or tools")
	}
	switch args[0] {
	case "check":
		return cmdAgentCheck(ctx, args[1:], stdout, stderr)
	case "tools":
		return cmdAgentTools(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		return flag.ErrHelp
	}
	return usagef("unknown agent command %q: expected check or tools", args[0])
}

// problemsError reports an agent file with problems, which are printed
// already.
type problemsError struct {
	file string
	n    int
}

func (e *problemsError) Error() string {
	if e.n == 1 {
		return fmt.Sprintf("%s: 1 problem", e.file)
	}
	return fmt.Sprintf("%s: %d problems", e.file, e.n)
}

// printProblems prints the problems of err, if it is a *CheckError, one a
// line, and returns the error to exit with.
func printProblems(file string, err error, stdout io.Writer) error {
	var ce *agentfile.CheckError
	if !errors.As(err, &ce) {
		return err
	}
	for _, p := range ce.Problems {
		fmt.Fprintln(stdout, printable(p.String()))
	}
	return &problemsError{file: file, n: len(ce.Problems)}
}

// printWarnings prints what the file holds that is kept but not acted
// on, or spelled in an older way, one a line: "FILE:LINE:COL: warning:
// MESSAGE". A warning never fails the command.
func printWarnings(ws []agentfile.Problem, w io.Writer) {
	for _, p := range ws {
		p.Message = "warning: " + p.Message
		fmt.Fprintln(w, printable(p.String()))
	}
}

// readAgent reads and parses an agent file, printing its problems on
// stdout and its warnings, as notes, on stderr.
func readAgent(path string, stdout, stderr io.Writer) (*agentfile.File, error) {
	f, _, err := readAgentData(path, stdout, stderr)
	return f, err
}

// readAgentData is readAgent that returns the file's bytes too.
func readAgentData(path string, stdout, stderr io.Writer) (*agentfile.File, []byte, error) {
	data, err := agentfile.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := agentfile.Parse(data, path)
	if err != nil {
		var ce *agentfile.CheckError
		if errors.As(err, &ce) {
			printWarnings(ce.Warnings, stderr)
		}
		return nil, nil, printProblems(path, err, stdout)
	}
	printWarnings(f.Warnings, stderr)
	return f, data, nil
}

// withoutLocal returns f without its local entries, noting each on
// stderr: a local toolset is registered by a program, so this command
// cannot know it.
func withoutLocal(f *agentfile.File, stderr io.Writer) *agentfile.File {
	out := *f
	out.Toolsets = nil
	for _, e := range f.Toolsets {
		if e.Local != "" {
			fmt.Fprintf(stderr, "%s:%d:%d: note: local toolset %q is registered by the program that runs the agent; left out here\n",
				printable(f.Filename), e.Pos.Line, e.Pos.Column, printable(e.Local))
			continue
		}
		out.Toolsets = append(out.Toolsets, e)
	}
	return &out
}

// openAgentStore opens the store in dir, or returns nil for "".
// resolveOwnAgent resolves an agent file that is the user's own, as are
// the commands it runs: its ${NAME} references read this process's
// environment, but for the platform's bearer token, which lets anyone
// run the tools of every runner and platform that shares it: neither
// ${NAME} nor the environment of an MCP server's command gets it. Local
// entries are left out, with a note on stderr.
func resolveOwnAgent(ctx context.Context, f *agentfile.File, src *packageSource, skills func(context.Context, string) (*skill.Skill, error), stderr io.Writer, mcp ...mcptoolset.Option) (*agentfile.Agent, error) {
	if err := os.Unsetenv(platform.TokenEnv); err != nil {
		return nil, err
	}
	// Nor do the broker's credentials reach them.
	for _, k := range []string{mesh.EnvBrokerToken, mesh.EnvBrokerPassword, mesh.EnvBrokerCreds, mesh.EnvBrokerNKeySeed, mesh.EnvBrokerKey} {
		if err := os.Unsetenv(k); err != nil {
			return nil, err
		}
	}
	o := &agentfile.Options{LookupEnv: os.LookupEnv, MCP: mcp, SkillSource: skills}
	if src != nil {
		o.Store = src.store
		if src.mesh != nil {
			o.Packages = src.mesh.packages()
		}
	}
	return withoutLocal(f, stderr).Resolve(ctx, o)
}

// packageSource is where an agent's packages come from: a store of this
// machine, the runtimes on a broker, or neither.
type packageSource struct {
	store *toolpkg.Store
	mesh  *meshClient
}

// openPackageSource opens the store in dir, or with --broker a client of
// the runtimes; neither for "" and no --broker.
func openPackageSource(ctx context.Context, dir, mode string, bf *brokerFlags, artifacts *toolpkg.ArtifactOptions, stderr io.Writer) (*packageSource, error) {
	src := &packageSource{}
	if bf.url != "" {
		mc, err := bf.client(ctx, warnLogger(stderr))
		if err != nil {
			return nil, err
		}
		src.mesh = mc
		return src, nil
	}
	store, err := openAgentStore(dir, mode, artifacts)
	if err != nil {
		return nil, err
	}
	src.store = store
	return src, nil
}

func (p *packageSource) close() {
	if p.store != nil {
		p.store.Close()
	}
	p.mesh.close()
}

func openAgentStore(dir, mode string, artifacts *toolpkg.ArtifactOptions) (*toolpkg.Store, error) {
	if dir == "" {
		return nil, nil
	}
	m, err := toolpkg.ParseMode(mode)
	if err != nil {
		return nil, usagef("%v", err)
	}
	s, err := toolpkg.Open(dir, &toolpkg.Options{Sandbox: m, Logger: slog.New(slog.DiscardHandler), Artifacts: artifacts})
	if errors.Is(err, toolpkg.ErrStoreInUse) {
		return nil, fmt.Errorf("%w\n(a running platform owns its store: to use its packages, give --platform URL instead of --store)", err)
	}
	return s, err
}

func cmdAgentCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent check", flag.ContinueOnError)
	storeDir := fs.String("store", "", "the store the agent's packages come from")
	platformAddr := fs.String("platform", "", "the URL of a running platform to check the agent on")
	tokenFile := fs.String("token-file", "", "with --platform: a file holding the bearer token (default: $"+platform.TokenEnv+")")
	pos, err := parse(fs, args, 1, "FILE")
	if err != nil {
		return err
	}
	var base *url.URL
	switch {
	case *platformAddr != "" && *storeDir != "":
		return usagef("--platform and --store together: choose one")
	case *tokenFile != "" && *platformAddr == "":
		return usagef("--token-file is for --platform")
	case *platformAddr != "":
		if base, err = platformURL(*platformAddr); err != nil {
			return err
		}
	}
	// A file that does not parse is reported here, the platform not
	// contacted.
	f, data, err := readAgentData(pos[0], stdout, stderr)
	if err != nil {
		return err
	}
	if base != nil {
		// The platform leaves local entries unchecked too.
		withoutLocal(f, stderr)
		return checkOnPlatform(ctx, base, *tokenFile, f, data, stdout)
	}
	// Checking runs no tool: the plain mode needs no sandbox probe.
	store, err := openAgentStore(*storeDir, string(toolpkg.ModeDirect), nil)
	if err != nil {
		return err
	}
	if store != nil {
		defer store.Close()
	} else if len(f.Packages()) > 0 {
		fmt.Fprintf(stderr, "%s: note: packages not checked: give --store DIR or --platform URL\n", printable(f.Filename))
	}
	if err := agentfile.Check(ctx, withoutLocal(f, stderr), &agentfile.Options{Store: store}); err != nil {
		return printProblems(pos[0], err, stdout)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}

// agentTool is one tool as --json prints it.
type agentTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

func cmdAgentTools(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent tools", flag.ContinueOnError)
	storeDir := fs.String("store", "", "the store the agent's packages come from")
	mode := fs.String("sandbox", "auto", "sandbox mode of the store's tools")
	role := fs.String("role", "", "the role of the run (the run value the file's roleKey names, \"role\" by default)")
	asJSON := fs.Bool("json", false, "print the tools as JSON, with their parameters")
	bf := addBrokerFlags(fs, "the broker's URL: the agent's packages are the runtimes' there, instead of a store's")
	pos, err := parse(fs, args, 1, "FILE")
	if err != nil {
		return err
	}
	if err := checkBrokerUse(fs, bf); err != nil {
		return err
	}
	if bf.url != "" && *storeDir != "" {
		return usagef("--store and --broker together: choose one")
	}
	f, err := readAgent(pos[0], stdout, stderr)
	if err != nil {
		return err
	}
	src, err := openPackageSource(ctx, *storeDir, *mode, bf, nil, stderr)
	if err != nil {
		return err
	}
	defer src.close()
	a, err := resolveOwnAgent(ctx, f, src, nil, stderr)
	if err != nil {
		return printProblems(pos[0], err, stdout)
	}
	defer a.Close()
	var opts []toolset.RunOption
	if *role != "" {
		opts = append(opts, a.WithRole(*role))
	}
	run := toolset.NewRun("toolset-agent-tools", opts...)
	defer run.End()
	tools, err := toolset.BuildTools(run.Turn(ctx), a.Name, a.Toolsets...)
	if err != nil {
		return err
	}
	if *asJSON {
		list := []agentTool{}
		for t := range tools.All() {
			params, err := t.ParametersJSON()
			if err != nil {
				return err
			}
			list = append(list, agentTool{Name: t.Name, Description: t.Description, Parameters: params})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	fmt.Fprintf(stdout, "agent %q: %d tool(s)\n", printable(a.Name), tools.Len())
	for t := range tools.All() {
		fmt.Fprintf(stdout, "\n%s\n  %s\n", t.Name, printable(t.Description))
	}
	return nil
}
