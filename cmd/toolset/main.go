// Command toolset builds, checks and runs packaged toolsets: zips with a
// manifest.yaml and tool executables (see package toolpkg).
//
//	toolset init NAME --lang go|python [DIR] [--sdk-replace REPO]
//	toolset package DIR -o OUT.zip [--os OS] [--arch ARCH] [--platform|--url URL [--token-file FILE]] [--name NAME] [--dist DIST]
//	toolset validate ZIP
//	toolset inspect ZIP [--json] [--sandbox MODE]
//	toolset call ZIP TOOL 'JSON' [--config KEY=VALUE]... [--sandbox MODE]
//	toolset call --broker URL TOOLSET TOOL 'JSON' [--config KEY=VALUE]...
//	toolset serve ZIP [--config KEY=VALUE]... [--sandbox MODE] [--http ADDR [--token-file FILE | --insecure-no-auth | --oauth-issuer URL --oauth-audience AUD] [--run-key-file FILE]]
//	toolset serve --agent FILE [--store DIR | --broker URL] [--role ROLE] [--http ADDR ...]
//	toolset serve --agent NAME --platform URL [--platform-token-file FILE] [--secrets FILE]
//		[--store DIR | --broker URL] [--role ROLE] [--http ADDR ...]
//	toolset agent check FILE [--store DIR | --platform URL [--token-file FILE]]
//	toolset agent tools FILE [--role ROLE] [--store DIR | --broker URL] [--json]
//	toolset platform --store DIR [--listen ADDR] [--token-file FILE] [--insecure-no-auth]
//		[--broker URL | --broker-listen ADDR] [--no-runtime]
//	toolset platform token create NAME --scope SCOPES [--platform URL] [--token-file FILE]
//	toolset platform token list [--json] | revoke NAME [--platform URL] [--token-file FILE]
//	toolset runtime --broker URL [--dir DIR] [--max-calls N] [--sandbox MODE]
//
// # The mesh
//
// The platform, the runtimes that run the tools and the agents that call
// them can be processes of their own, on machines of their own, which
// meet only on a NATS broker (see package mesh). toolset platform runs
// one by default, embedded (JetStream under DIR/.platform/broker), and a
// runtime in the same process (its store under DIR/.platform/runtime), so
// that one command still runs everything; --broker-listen ADDR exposes
// the embedded broker to other machines, --broker URL uses another broker
// instead, and --no-runtime leaves the tools to the runtimes elsewhere.
// The platform hands each toolset its discovery found ready to the
// runtimes, and shows it ready once one of them confirmed its every tool.
// toolset runtime adds a runtime (its store under --dir, by default one
// per broker under the user's cache directory): the runtimes share the
// calls, so each adds capacity. The agent commands take --broker URL
// instead of --store DIR to take their packages from the runtimes.
//
// The broker's credentials never go on the command line, where other
// users of the machine read them, nor in the logs: --broker-token-file,
// --broker-creds (a NATS .creds file), --broker-nkey (a seed file),
// --broker-ca (TLS), or the environment: TOOLSET_BROKER_TOKEN,
// TOOLSET_BROKER_USER and TOOLSET_BROKER_PASSWORD, TOOLSET_BROKER_CREDS,
// TOOLSET_BROKER_NKEY_SEED_FILE, TOOLSET_BROKER_CA, TOOLSET_BROKER_CERT
// and TOOLSET_BROKER_KEY. A --broker URL with a user or password in it
// is refused. An embedded broker exposed on an address other than
// loopback requires a token. On SIGINT or SIGTERM a runtime stops taking
// calls, gives those running --shutdown-timeout (default 10s), then
// cancels them.
//
// Exit codes: 0 success, 1 failure, 2 bad usage. Errors go to stderr.
//
// # Serving over HTTP
//
// toolset serve --http ADDR serves a package's tools (or, with --agent
// FILE, the toolsets of an agent file, see package platform/agentfile) as
// an MCP server over streamable HTTP at http://ADDR/mcp, so that the tools
// can run on runner machines apart from the agents, behind any HTTP load
// balancer. Every
// request to /mcp must carry "Authorization: Bearer TOKEN", a token of
// --token-file (one per line, each at least 16 bytes; blank lines and
// lines starting with "#" left out) or the one of $TOOLSET_PLATFORM_TOKEN;
// others get 401 with a JSON error. Without a token the command refuses to start,
// unless --insecure-no-auth (for local use only) says to serve without
// one. GET /healthz answers "ok" without a token, for load balancers' health
// checks. Once listening, the command prints "listening on http://HOST:PORT/mcp"
// on stderr (so --http 127.0.0.1:0 picks a free port). A runner listening
// on a loopback address refuses (403) a request whose Host header is not a
// loopback one, as the MCP SDK guards against DNS rebinding: a proxy on the
// same machine must pass the runner's own host, or the runner listen on
// another address. With --insecure-no-auth, wherever it listens, the
// runner refuses (403) a request whose Host is not an IP address or
// localhost, so that a web page cannot reach it by DNS rebinding.
//
// Each client conversation is one run (see mcptoolset.RunContextFunc):
// what a run keeps (tools a tool search revealed, failure budgets,
// run-scoped caches) lasts across the conversation's requests. A client
// before MCP 2026-07-28 has a session (Mcp-Session-Id) on the runner that
// it initialized with, whose run ID is "mcp-" and the session's ID; the
// session ends after an hour without a request. A 2026-07-28 client has no
// session: each result gives it a run handle, signed by the runner's key,
// which it sends back with its next requests (mcptoolset's client does).
// The key is a random one of the process, or, with --run-key-file FILE,
// the file's content (at least 32 bytes, white space around it left out),
// so that replicas sharing the file accept each other's handles. The runs
// of handles are kept in the runner's memory (a shared run store, such as
// package redistoolset's, needs a dependency the command does not have): a
// handle taken to another replica begins the run there afresh. A session,
// and a handle, is bound to a keyed digest of the token its client sent
// (keyed with the run key, or a secret of the process without one): a
// client with another token gets 403 in the session, and its handle
// refused ("invalid run handle"), as is a handle another key signed or one
// changed. Without a token (--insecure-no-auth) a handle is a bearer
// secret. Behind a load balancer, a client with a session must reach the
// runner that holds it; a 2026-07-28 client may reach any.
//
// The artifacts a call saves (files the tool writes to output/, data
// objects, the whole of a large result, <tool>_output.txt) are scoped to
// the call's run, by its ID, which the runner mints: a call loads (by an
// artifact parameter) only what a call of the same run saved, whatever it
// names, and nothing names another run's scope (an artifact name has no
// slash or ".."). They are saved under names with a random suffix
// (report-<24 hex digits>.csv, <tool>_output-<24 hex digits>.txt), the
// names the result shows the model, so that none is guessed. Each run's
// values are app_name, the package's (or agent's) name, and user_id, the
// token's keyed digest, from which no guess of the token can be checked; with --agent, the role of --role too. A cache of scope
// process (an agent file's default) still gives one client's result to
// every client that makes the same call: a tool whose results must not be
// shared needs cache scope run, or none. Progress notifications reach the
// client on the response to its call; tools/list_changed reaches a
// session, and a 2026-07-28 client on its subscriptions/listen stream.
//
// Requests are bounded: 4096 connections open at once, idle ones
// included (beyond, new ones wait to be accepted); the header (64 KiB,
// 10 s); the body (4 MiB, else 413; 30 s) of one JSON-RPC message (a
// batch, which would run its calls at once, is refused with 400); the
// calls handled at once, each a process, by --max-calls (default 32 per
// CPU), their bodies by 32 MiB in all, and the notification streams
// (subscriptions/listen, a session's GET) by 1024, with bodies of 64 KiB at most (else 503, with
// Retry-After, so that a load balancer tries another runner); and the
// response by the longest tool timeout and a minute. The runner does not
// share the calls out fairly between clients: a load balancer in front
// of it can. On
// SIGINT or SIGTERM the command stops accepting, gives the calls in
// flight --shutdown-timeout (default 10s) to finish, then cancels them,
// which ends their tools' processes, and closes its store (a ZIP's
// temporary store is removed).
//
// Agents reach the runners with mcptoolset.NewHTTP and the token in
// mcptoolset.WithHTTPHeader (sent to the runners' origin only):
//
//	tools := mcptoolset.NewHTTP("https://runners.example.com/mcp",
//		mcptoolset.WithHTTPHeader("Authorization", "Bearer "+token))
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const usage = `usage: toolset <command> [arguments]

Commands:
  init NAME --lang go|python [DIR] [--sdk-replace REPO]
        scaffold a toolset in DIR (default: .): DIR/toolsets/NAME.yaml and
        DIR/toolsets/NAME/src/ (a tool, manifest.yaml and build.sh) that
        toolset package builds as it is
  package DIR -o OUT.zip [--os OS] [--arch ARCH] [--platform|--url URL [--token-file FILE]]
        [--name NAME] [--dist DIST]
        build the source directory DIR (which holds manifest.yaml) into
        DIST/<os>-<arch>/ (default DIST: DIR/dist) and zip it: DIR/build.sh
        if present, run by its #! line (chmod +x) with $SAM_TOOL_NAME,
        $SAM_TOOL_BUILD_OUT (the directory it fills), $SAM_TOOL_TARGET_OS,
        $SAM_TOOL_TARGET_ARCH and $SAM_TOOL_SDK_VERSION; else Go tools
        cross-compiled with CGO_ENABLED=0 (./cmd/NAME if present); else
        pip install --target .../python from requirements.txt, else
        pyproject.toml; else DIR's files as they are. The target: --os and
        --arch, else $SAM_TOOL_TARGET_OS and _ARCH, else the platform's at
        URL, else this machine's (the reference platform's CLI defaults to
        linux/arm64)
  validate ZIP
        check a package's structure and manifest without running anything
  inspect ZIP [--json] [--sandbox MODE] [--name NAME]
        validate, run discovery (<executable> --schema) and print each tool
  call ZIP TOOL JSON [--config KEY=VALUE]... [--sandbox MODE] [--name NAME]
        run one tool with the JSON arguments and print its result
  call --broker URL TOOLSET TOOL JSON [--config KEY=VALUE]...
        the same, on a runtime of the broker at URL that serves TOOLSET
  serve ZIP [--config KEY=VALUE]... [--sandbox MODE] [--name NAME]
        [--http ADDR [--token-file FILE | --insecure-no-auth |
        --oauth-issuer URL --oauth-audience AUD [--oauth-resource URL]] [--run-key-file FILE]
        [--shutdown-timeout D] [--max-calls N]]
        serve the package's tools as an MCP server over stdin and stdout, or
        with --http over streamable HTTP at http://ADDR/mcp, for clients
        sending Authorization: Bearer TOKEN (a TOKEN of --token-file, one per
        line, or $TOOLSET_PLATFORM_TOKEN); GET /healthz needs no token. Each
        client conversation is one run, bound to its token: a session before
        MCP 2026-07-28, a run handle signed with the key of --run-key-file
        (at least 32 bytes, shared by replicas; default a random key) from
        it, the runs kept in memory (no shared run store); the artifacts a
        call saves are its run's alone, under names with a random suffix.
        With --oauth-issuer the tokens are OAuth access tokens (JWTs) of
        that authorization server, checked against the keys its metadata
        names (signature, iss, aud --oauth-audience, exp); a 401 points to
        the protected resource metadata at
        /.well-known/oauth-protected-resource/mcp, and a token's scopes are
        its runs' scopes, which the tools' required_scopes need.
        A tool whose timeout is over 300 seconds is served as an MCP task to
        clients that declare the Tasks extension: the call returns at once,
        and the client polls it
  serve --agent FILE [--store DIR | --broker URL] [--role ROLE] [--sandbox MODE] [--http ADDR ...]
        serve the toolsets of an agent file (packages from the store in DIR
        or the runtimes on the broker at URL, MCP servers, composed as the
        file says) instead of one ZIP; every
        request's run has role ROLE. The file's ${NAME} and its servers'
        environment come from this one, but for $TOOLSET_PLATFORM_TOKEN
  serve --agent NAME --platform URL [--platform-token-file FILE] [--secrets FILE] [--store DIR | --broker URL] ...
        serve the agent deployed as NAME on the platform at URL: its
        effective document (GET /api/v1/platform/agents/NAME/effective),
        each tool it lists with its configuration, the toolsets' secrets
        from the store or runtimes, the agent's own from the --secrets
        JSON file (keys such as agent/TOOLSET/TOOL/KEY); the platform's
        token from --platform-token-file or $TOOLSET_PLATFORM_TOKEN. The
        skills it attaches come from GET /api/v1/platform/skills/NAME/archive
        (load_skill, read_skill_file); their bundled tools run, with
        --store, in a store of the run's own
  agent check FILE [--store DIR | --platform URL [--token-file FILE]]
        check an agent file (see package platform/agentfile) and print each
        problem as FILE:LINE:COL: message; with --store, its packages
        against the store in DIR, which no other process may hold open;
        with --platform, on the running platform at URL, which checks it
        as it would deploy it but stores nothing (the bearer token comes
        from FILE or $TOOLSET_PLATFORM_TOKEN). Starts nothing: MCP servers
        are not contacted
  agent tools FILE [--role ROLE] [--store DIR | --broker URL] [--sandbox MODE] [--json]
        resolve the agent, starting its MCP servers (their ${NAME} from
        this environment), and print the tools the model sees in a run of
        role ROLE: names and descriptions, with --json their parameters too
        Local toolsets are registered by the Go program that runs an agent:
        both agent commands leave them out, with a note on stderr
  platform --store DIR [--listen ADDR] [--token-file FILE] [--insecure-no-auth] [--sandbox MODE]
        [--broker URL | --broker-listen ADDR] [--no-runtime] [--max-calls N]
        serve the platform: its JSON API under /api/v1/platform/ and its
        status page at /, for the store in DIR, until SIGINT or SIGTERM;
        the bearer token comes from FILE or $TOOLSET_PLATFORM_TOKEN. It
        hands its toolsets to the runtimes through a broker of its own,
        embedded (--broker-listen ADDR: reachable from other machines), or
        the one at URL, and runs a runtime in process unless --no-runtime
  platform token create NAME --scope SCOPES | list [--json] | revoke NAME [--platform URL] [--token-file FILE]
        manage the tokens of the running platform at URL (default
        http://127.0.0.1:8080) with an admin token from FILE or
        $TOOLSET_PLATFORM_TOKEN: create prints the new token's secret, shown
        this once; SCOPES is a comma-separated list of read (every token
        reads), publish (toolsets, skills), agents (agents, their deploys)
        and admin (everything, the tokens too); revoke ends the token and
        its page sessions at once
  runtime --broker URL [--dir DIR] [--max-calls N] [--sandbox MODE] [--id ID] [--shutdown-timeout D]
        run the tools of the toolsets the platform publishes on the broker,
        for the agents that call them there, until SIGINT or SIGTERM
  doctor [--sandbox MODE] [--python PATH] [--broker URL] [--redis ADDR]
        say what this machine gives: the sandbox mode tools run in and why,
        the Python interpreter and whether the tools' user can reach it,
        redis-server and chromium, and the broker and Redis server named;
        each missing part with its fix

Broker credentials (with --broker, and for --broker-listen's token), from
files or the environment only: --broker-token-file FILE, --broker-creds
FILE, --broker-nkey FILE, --broker-ca FILE; $TOOLSET_BROKER_TOKEN,
$TOOLSET_BROKER_USER and $TOOLSET_BROKER_PASSWORD, $TOOLSET_BROKER_CREDS,
$TOOLSET_BROKER_NKEY_SEED_FILE, $TOOLSET_BROKER_CA, _CERT and _KEY.
--namespace NS (default toolset) names the mesh's subjects.

Sandbox modes: auto (default: the strongest that works here), bwrap, prlimit, direct.
Every command that runs packages takes --python PATH, the interpreter Python
tools run with (default: $TOOLSET_PYTHON, else $SAM_STR_PYTHON, else python3,
or /usr/bin/python3 when the python3 on PATH is out of the tools' user's reach).
Exit codes: 0 success, 1 failure, 2 bad usage.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exit codes
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError is bad command-line usage: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// run runs the command line args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			fmt.Fprint(stderr, usage)
			return exitUsage
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"init":     cmdInit,
		"package":  cmdPackage,
		"validate": cmdValidate,
		"inspect":  cmdInspect,
		"call":     cmdCall,
		"serve":    cmdServe,
		"agent":    cmdAgent,
		"platform": cmdPlatform,
		"runtime":  cmdRuntime,
		"apply":    cmdApply,
		"doctor":   cmdDoctor,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "toolset: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	// --python names the interpreter through the environment, for this
	// command only.
	if old, ok := os.LookupEnv(toolpkg.PythonEnv); ok {
		defer os.Setenv(toolpkg.PythonEnv, old)
	} else {
		defer os.Unsetenv(toolpkg.PythonEnv)
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "toolset %s: %s\n\n%s", args[0], ue.msg, usage)
		return exitUsage
	default:
		// "toolset CMD:" already says what the core's "toolset:" would.
		msg := strings.TrimPrefix(err.Error(), "toolset: ")
		fmt.Fprintf(stderr, "toolset %s: %s\n", args[0], printable(msg))
		return exitFailure
	}
}

// printable makes text from a package safe to show on a terminal:
// control characters (but newline and tab), which could move the
// cursor, retitle the window or write the clipboard, and the characters
// that reorder text on screen are shown as escapes. Invalid UTF-8 is
// shown as \x escapes too.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == utf8.RuneError:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// parse parses flags that may come before, between or after the
// positional arguments, and checks the number of positional arguments
// (unless want is negative).
func parse(fs *flag.FlagSet, args []string, want int, names string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			pos = append(pos, rest[1:]...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if want >= 0 && len(pos) != want {
		return nil, usagef("expected %s, got %d argument(s)", names, len(pos))
	}
	return pos, nil
}

func cmdPackage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("package", flag.ContinueOnError)
	out := fs.String("o", "", "the zip to write")
	goos := fs.String("os", "", "target OS (default: $SAM_TOOL_TARGET_OS, else the platform's with --platform, else this machine's)")
	goarch := fs.String("arch", "", "target architecture (default: $SAM_TOOL_TARGET_ARCH, else the platform's with --platform, else this machine's)")
	dist := fs.String("dist", "", "where to make <os>-<arch>/ (default: DIR/dist)")
	name := fs.String("name", "", "the toolset's name, $SAM_TOOL_NAME (default: DIR's base name, its parent's for toolsets/NAME/src)")
	platformAddr := fs.String("platform", "", "the URL of a platform to build for (GET .../toolsets/buildTarget)")
	fs.StringVar(platformAddr, "url", "", "the same as --platform, as SAM's CLI spells it")
	tokenFile := fs.String("token-file", "", "with --platform: a file holding the bearer token (default: $TOOLSET_PLATFORM_TOKEN)")
	pos, err := parse(fs, args, 1, "DIR")
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef("-o OUT.zip is required")
	}
	if *tokenFile != "" && *platformAddr == "" {
		return usagef("--token-file is for --platform")
	}
	*goos, *goarch, err = packageTarget(ctx, *goos, *goarch, *platformAddr, *tokenFile, stderr)
	if err != nil {
		return err
	}
	res, err := toolpkg.Build(ctx, pos[0], &toolpkg.BuildOptions{Name: *name, GOOS: *goos, GOARCH: *goarch, Out: *dist, Log: stderr})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := toolpkg.ZipDir(res.Dir, &buf); err != nil {
		return err
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "built %s (%s)\nwrote %s (%d bytes, %d executable(s))\n", res.Dir, res.Method, *out, buf.Len(), len(res.Manifest.Executables))
	return nil
}

func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	pos, err := parse(fs, args, 1, "ZIP")
	if err != nil {
		return err
	}
	m, err := validateFile(pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: valid package with %d executable(s)\n", pos[0], len(m.Executables))
	for _, e := range m.Executables {
		rt := string(e.Runtime)
		if rt == "" {
			rt = "runtime inferred"
		}
		fmt.Fprintf(stdout, "  %s: %s (%s, profile %s, timeout %ds)\n", e.Key, printable(e.Path), rt, e.Profile, e.TimeoutSeconds)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(stdout, "warning: %s: %s\n", toolpkg.ManifestName, printable(w.String()))
	}
	return nil
}

func validateFile(path string) (*toolpkg.Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return toolpkg.ValidateZip(f, fi.Size(), nil)
}

// session is a package uploaded into a temporary store.
type session struct {
	store *toolpkg.Store
	dir   string
	name  string
	info  toolpkg.Info
}

func (s *session) close() {
	s.store.Close()
	os.RemoveAll(s.dir)
}

// openPackage uploads the zip into a temporary store and runs discovery.
// artifacts are the store's artifact options (nil: the defaults).
func openPackage(ctx context.Context, zipPath, name, mode string, artifacts *toolpkg.ArtifactOptions, stderr io.Writer) (*session, error) {
	m, err := toolpkg.ParseMode(mode)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if name == "" {
		name = nameFromPath(zipPath)
	}
	if err := toolpkg.CheckName(name); err != nil {
		return nil, usagef("%v (set one with --name)", err)
	}
	if _, err := os.Stat(zipPath); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "toolset-store-")
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := toolpkg.Open(dir, &toolpkg.Options{Sandbox: m, Logger: logger, Artifacts: artifacts})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &session{store: st, dir: dir, name: name}
	s.info, err = st.UploadFile(ctx, name, zipPath)
	if err != nil {
		s.close()
		return nil, err
	}
	if s.info.Status != toolpkg.StatusReady {
		s.close()
		return nil, fmt.Errorf("discovery failed:\n  - %s", strings.Join(s.info.Errors, "\n  - "))
	}
	return s, nil
}

var invalidNameChars = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// nameFromPath derives a toolset name from a zip's file name.
func nameFromPath(p string) string {
	base := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
	base = strings.Trim(invalidNameChars.ReplaceAllString(base, "_"), "_-")
	if len(base) > 40 {
		base = base[:40]
	}
	if base == "" {
		return "pkg"
	}
	return base
}

func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the discovery results as JSON")
	mode := fs.String("sandbox", "auto", "sandbox mode")
	pythonFlag(fs)
	name := fs.String("name", "", "toolset name (default: from the zip's file name)")
	pos, err := parse(fs, args, 1, "ZIP")
	if err != nil {
		return err
	}
	s, err := openPackage(ctx, pos[0], *name, *mode, nil, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	info := hideSecretDefaults(s.info)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	exes := map[string]toolpkg.Executable{}
	for _, e := range s.info.Executables {
		exes[e.Key] = e
	}
	fmt.Fprintf(stdout, "toolset %q: %d tool(s), sandbox %s\n", s.name, len(info.Tools), s.store.Sandbox())
	for _, t := range info.Tools {
		e := exes[t.Executable]
		fmt.Fprintf(stdout, "\n%s__%s\n  %s\n", s.name, t.Name, printable(t.Description))
		fmt.Fprintf(stdout, "  executable: %s (%s, %s), profile %s, timeout %s\n", e.Key, printable(e.File), e.Runtime, e.Profile, t.Timeout())
		if len(t.Config) > 0 {
			fmt.Fprintln(stdout, "  config:")
			for _, c := range t.Config {
				var attrs []string
				attrs = append(attrs, c.Type)
				if c.Required {
					attrs = append(attrs, "required")
				}
				if c.Secret {
					attrs = append(attrs, "secret")
				}
				if c.Default != nil && !c.Secret {
					attrs = append(attrs, printable(fmt.Sprintf("default %v", c.Default)))
				}
				line := fmt.Sprintf("    %s (%s)", printable(c.Key), strings.Join(attrs, ", "))
				if c.Description != "" {
					line += ": " + printable(c.Description)
				}
				fmt.Fprintln(stdout, line)
			}
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, t.Parameters, "    ", "  "); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  parameters:\n    %s\n", printable(pretty.String()))
	}
	return nil
}

// hideSecretDefaults returns info with the default of every configuration
// key that any tool declares secret replaced by "[secret]", and such keys
// marked secret in every tool.
func hideSecretDefaults(info toolpkg.Info) toolpkg.Info {
	secret := map[string]bool{}
	for _, t := range info.Tools {
		for _, c := range t.Config {
			if c.Secret {
				secret[c.Key] = true
			}
		}
	}
	tools := make([]toolpkg.ToolInfo, len(info.Tools))
	for i, t := range info.Tools {
		t.Config = append([]toolpkg.ConfigField(nil), t.Config...)
		for j, c := range t.Config {
			if secret[c.Key] {
				c.Secret = true
				if c.Default != nil {
					c.Default = "[secret]"
				}
				t.Config[j] = c
			}
		}
		tools[i] = t
	}
	info.Tools = tools
	return info
}

// pkgFlags are the flags of the commands that load and run a package.
type pkgFlags struct {
	config     configFlags
	mode, name *string
}

func packageFlags(fs *flag.FlagSet) *pkgFlags {
	pf := &pkgFlags{}
	fs.Var(&pf.config, "config", "a configuration value KEY=VALUE (repeat it)")
	pf.mode = fs.String("sandbox", "auto", "sandbox mode")
	pythonFlag(fs)
	pf.name = fs.String("name", "", "toolset name (default: from the zip's file name)")
	return pf
}

// configFlags collects repeated --config KEY=VALUE.
type configFlags []string

func (c *configFlags) String() string { return strings.Join(*c, ",") }

func (c *configFlags) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("--config %q: expected KEY=VALUE", v)
	}
	*c = append(*c, v)
	return nil
}

func cmdCall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	pf := packageFlags(fs)
	bf := addBrokerFlags(fs, "call a tool of the runtimes on the broker at URL: TOOLSET TOOL JSON instead of ZIP TOOL JSON")
	pos, err := parse(fs, args, 3, "ZIP TOOL JSON (or --broker URL TOOLSET TOOL JSON)")
	if err != nil {
		return err
	}
	if err := checkBrokerUse(fs, bf); err != nil {
		return err
	}
	if !json.Valid([]byte(pos[2])) {
		return usagef("the arguments %q are not valid JSON; quote them, e.g. '{\"city\": \"Paris\"}'", pos[2])
	}
	if bf.url != "" {
		if set := flagsSet(fs); set["sandbox"] || set["name"] {
			return usagef("--sandbox and --name go with a ZIP: with --broker the runtimes run the tool")
		}
		return callOnMesh(ctx, bf, pos[0], pos[1], pos[2], pf.config, stdout, stderr)
	}
	s, err := openPackage(ctx, pos[0], *pf.name, *pf.mode, nil, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	config, err := s.config(pf.config)
	if err != nil {
		return err
	}
	return callTool(ctx, s.store.Toolset(s.name, config), s.name, pos[1], pos[2], "in the package", stdout)
}

// callTool calls one tool of the toolset name (TOOL or name__TOOL) with
// the JSON arguments and prints its result; where says where the tools
// are, for the error naming a tool that is not there.
func callTool(ctx context.Context, ts toolset.Toolset, name, tool, args, where string, stdout io.Writer) error {
	full := tool
	if !strings.HasPrefix(full, name+"__") {
		full = name + "__" + tool
	}
	run := toolset.NewRun(fmt.Sprintf("cli-%d", time.Now().UnixNano()), toolset.WithValues(map[string]any{"app_name": "toolset-cli"}))
	defer run.End()
	ctx = run.Turn(ctx)
	tools, err := toolset.BuildTools(ctx, "toolset-cli", ts)
	if err != nil {
		return err
	}
	if _, ok := tools.Lookup(full); !ok {
		if keys := missingConfig(ts, strings.TrimPrefix(full, name+"__")); len(keys) > 0 {
			flags := make([]string, len(keys))
			for i, k := range keys {
				flags[i] = "--config " + k + "=VALUE"
			}
			return fmt.Errorf("tool %s needs %s: it is %s, left out while that required configuration is not set; give %s",
				strings.TrimPrefix(full, name+"__"), strings.Join(keys, " and "), where, strings.Join(flags, " "))
		}
		names := tools.Names()
		sort.Strings(names)
		// The turn's own answer to an unknown name holds its suggestions.
		var unknown *toolset.UnknownToolError
		if _, err := tools.Execute(ctx, toolset.ToolCall{Name: full, Args: json.RawMessage(`{}`)}); errors.As(err, &unknown) && len(unknown.Suggestions) > 0 {
			return fmt.Errorf("no tool %q %s; did you mean %q? its tools: %s", tool, where, strings.TrimPrefix(unknown.Suggestions[0], name+"__"), strings.Join(names, ", "))
		}
		return fmt.Errorf("no tool %q %s; its tools: %s", tool, where, strings.Join(names, ", "))
	}
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: full, Args: json.RawMessage(args)})
	if err != nil {
		if msg, ok := toolset.ErrorText(err); ok {
			return fmt.Errorf("the tool returned an error (a model would see it):\n%s", msg)
		}
		return err
	}
	text, err := toolset.ResultText(res)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, printable(text))
	return nil
}

// missingConfig returns the required configuration keys without a value
// that leave the tool out of ts, when ts says (a package's toolset does,
// after its tools were listed), or nil.
func missingConfig(ts toolset.Toolset, tool string) []string {
	p, ok := ts.(interface {
		Policies() map[string]toolpkg.ToolPolicy
	})
	if !ok {
		return nil
	}
	return p.Policies()[tool].Missing
}

// config turns --config KEY=VALUE flags into configuration values, typed
// by the package's config schema; unknown keys are passed on for the
// toolset to report.
func (s *session) config(cfg configFlags) (map[string]any, error) {
	return configValues(s.info.Tools, cfg)
}

// configValues turns --config KEY=VALUE flags into configuration values,
// typed by the tools' config schemas; unknown keys are passed on for the
// toolset to report.
func configValues(tools []toolpkg.ToolInfo, cfg configFlags) (map[string]any, error) {
	fields := map[string]toolpkg.ConfigField{}
	for _, t := range tools {
		for _, f := range t.Config {
			fields[f.Key] = f
		}
	}
	config := map[string]any{}
	for _, kv := range cfg {
		k, v, _ := strings.Cut(kv, "=")
		f, ok := fields[k]
		if !ok {
			config[k] = v // reported as an unknown key below
			continue
		}
		val, err := toolpkg.ParseConfigValue(f, v)
		if err != nil {
			return nil, usagef("--config %v", err)
		}
		config[k] = val
	}
	return config, nil
}

// cmdServe serves the package's tools as an MCP server on stdio, until the
// client disconnects or the process is interrupted, or with --http over
// streamable HTTP (see serveHTTP). Logs go to stderr, since stdout carries
// the protocol.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	pf := packageFlags(fs)
	hf := addHTTPFlags(fs)
	af := addAgentFlags(fs)
	pos, err := parse(fs, args, -1, "ZIP")
	if err != nil {
		return err
	}
	ha, err := hf.auth()
	if err != nil {
		return err
	}
	if err := checkBrokerUse(fs, af.broker); err != nil {
		return err
	}
	if af.file != "" {
		return serveAgent(ctx, pos, af, pf, hf, ha, stdout, stderr)
	}
	if af.platform != "" || af.platformToken != "" || af.secrets != "" {
		return usagef("--platform, --platform-token-file and --secrets go with --agent NAME")
	}
	if af.role != "" || af.store != "" || af.broker.url != "" {
		// A ZIP's tools know no roles: --role would hide none of them.
		return usagef("--role, --store and --broker go with --agent FILE")
	}
	if len(pos) != 1 {
		return usagef("expected ZIP (or --agent FILE), got %d argument(s)", len(pos))
	}
	var artifacts *toolpkg.ArtifactOptions
	if hf.addr != "" {
		artifacts = serveArtifacts()
	}
	s, err := openPackage(ctx, pos[0], *pf.name, *pf.mode, artifacts, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	config, err := s.config(pf.config)
	if err != nil {
		return err
	}
	ts := s.store.Toolset(s.name, config)
	// Check the configuration now rather than on the client's first request.
	if _, err := toolset.BuildTools(ctx, s.name, ts); err != nil {
		return err
	}
	opts := []mcptoolset.ServerOption{
		mcptoolset.WithImplementation(&mcp.Implementation{Name: s.name, Version: fmt.Sprint(s.info.Version)}),
		mcptoolset.WithAgent(s.name),
	}
	if hf.addr != "" {
		opts = append(opts, runServerOptions(s.name, ha.runKey)...)
	}
	opts = append(opts, mcptoolset.WithTasks(packagedLongRunning(s.info)))
	srv := mcptoolset.NewServer(ts, opts...)
	defer srv.Close() // the tasks still running are cancelled
	return serveMCP(ctx, srv, hf, ha, longestTimeout(s.info), stdout, stderr)
}

// longRunningAfter is the timeout beyond which a packaged tool is long
// running: one whose author raised it past the default.
const longRunningAfter = toolpkg.DefaultTimeoutSeconds * time.Second

// packagedLongRunning returns the WithTasks function of serve: a tool of
// the package whose timeout is over longRunningAfter, or any tool marked
// with mcptoolset.MetaLongRunning, is served as an MCP task to clients
// that declare the Tasks extension.
func packagedLongRunning(info toolpkg.Info) func(toolset.Tool) bool {
	long := map[string]bool{}
	for _, t := range info.Tools {
		if t.Timeout() > longRunningAfter {
			long[t.Name] = true
		}
	}
	return func(t toolset.Tool) bool {
		return t.Metadata[mcptoolset.MetaLongRunning] == "true" || long[t.Metadata["toolpkg.tool"]]
	}
}

// serveMCP serves srv on stdio, or over HTTP with --http.
func serveMCP(ctx context.Context, srv *mcptoolset.Server, hf *httpFlags, ha httpAuth, callBound time.Duration, stdout, stderr io.Writer) error {
	if hf.addr != "" {
		h := &httpServer{srv: srv, tokens: ha.tokens, bindingKey: ha.runKey, callBound: callBound, logger: warnLogger(stderr), maxCalls: int64(hf.maxCalls)}
		if ha.oauthIssuer != "" {
			oc, err := oauthConfig(ctx, ha)
			if err != nil {
				return err
			}
			h.oauth = oc
		}
		return serveHTTP(ctx, h, hf, stderr)
	}
	err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if ctx.Err() != nil {
		return nil // interrupted: a normal way to stop serving
	}
	return err
}

// stdin is the input of serve; tests replace it.
var stdin io.Reader = os.Stdin

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
