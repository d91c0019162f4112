package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gotoolset/toolset/toolpkg"
)

// doctorTimeout bounds each probe of toolset doctor.
const doctorTimeout = 5 * time.Second

// check is one line of toolset doctor's report: what was looked at, what
// was found, and, when something is missing, how to get it.
type check struct {
	what, found, fix string
	ok               bool
	note             bool // a detail of the line before
}

// cmdDoctor reports what this machine gives the library: the sandbox mode
// tools run in and why, the Python interpreter and whether the user tools
// run as can reach it, and the programs the optional parts and their tests
// use (redis-server, chromium), and a broker if one is named. It fails
// only for bad usage: a missing part is reported, with its fix.
func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	mode := fs.String("sandbox", "auto", "the sandbox mode to check")
	pythonFlag(fs)
	bf := addBrokerFlags(fs, "a broker to reach, nats://host:port (default: none; the platform embeds its own)")
	redisAddr := fs.String("redis", "", "a Redis server to reach, host:port (default: none)")
	if _, err := parse(fs, args, 0, "no argument"); err != nil {
		return err
	}
	if err := bf.check(); err != nil {
		return err
	}
	m, err := toolpkg.ParseMode(*mode)
	if err != nil {
		return usagef("%v", err)
	}
	checks := sandboxChecks(toolpkg.Diagnose(&toolpkg.Options{Sandbox: m}))
	checks = append(checks,
		programCheck("redis", "Redis: durable runs, shared caches and rate limits (redistoolset) and their tests",
			"apt-get install redis-server", "redis-server"),
		programCheck("chromium", "the platform status page's browser tests",
			"apt-get install chromium", "chromium", "chromium-browser", "google-chrome"),
	)
	if *redisAddr != "" {
		checks = append(checks, redisCheck(ctx, *redisAddr))
	}
	if bf.url != "" {
		checks = append(checks, brokerCheck(ctx, bf))
	} else {
		checks = append(checks, check{what: "broker", ok: true,
			found: "none named: toolset platform embeds a NATS server (give --broker URL to check one)"})
	}
	missing, total := 0, 0
	for _, c := range checks {
		if c.note {
			fmt.Fprintf(stdout, "     %-10s %s\n", "", printable(c.found))
			continue
		}
		mark := "ok  "
		total++
		if !c.ok {
			mark, missing = "MISS", missing+1
		}
		fmt.Fprintf(stdout, "%s %-10s %s\n", mark, c.what, printable(c.found))
		if !c.ok && c.fix != "" {
			fmt.Fprintf(stdout, "     %-10s fix: %s\n", "", printable(c.fix))
		}
	}
	if missing > 0 {
		fmt.Fprintf(stdout, "%d of %d missing: what needs them is skipped or refused, as said above\n", missing, total)
	}
	return nil
}

// pythonFlag adds --python, the interpreter Python tools run with, given
// to the stores of the command through $TOOLSET_PYTHON (run restores the
// environment when the command returns).
func pythonFlag(fs *flag.FlagSet) {
	fs.Func("python", "the interpreter Python tools run with: a path or a command (default: $"+toolpkg.PythonEnv+", else $SAM_STR_PYTHON, else python3)", func(v string) error {
		if v == "" {
			return errors.New("empty")
		}
		return os.Setenv(toolpkg.PythonEnv, v)
	})
}

// sandboxChecks reports the sandbox and the Python interpreter of d.
func sandboxChecks(d toolpkg.Diagnosis) []check {
	sb := check{what: "sandbox", ok: d.SandboxErr == nil}
	if d.SandboxErr != nil {
		sb.found = d.SandboxErr.Error()
		sb.fix = "apt-get install bubblewrap util-linux, or --sandbox auto"
		return []check{sb}
	}
	sb.found = string(d.Sandbox)
	if d.SandboxReason != "" {
		sb.found += ": " + d.SandboxReason
	}
	if d.ToolUser >= 0 {
		sb.found += fmt.Sprintf("; tools run as uid %d", d.ToolUser)
	}
	out := []check{sb}
	for _, g := range d.Gaps {
		out = append(out, check{found: strings.TrimPrefix(g, "toolpkg: "), ok: true, note: true})
	}
	if d.Sandbox != toolpkg.ModeBwrap {
		out[0].ok = false
		out[0].fix = "apt-get install bubblewrap (and allow user namespaces): only the bwrap mode isolates tools from the host's files and network"
	}
	py := check{what: "python", ok: d.PythonErr == nil}
	from := "python3 on PATH"
	if d.PythonFrom != "" {
		from = d.PythonFrom
	}
	switch {
	case d.PythonErr != nil:
		py.found = fmt.Sprintf("%s: %v", from, d.PythonErr)
		py.fix = "apt-get install python3, or --python PATH (or $" + toolpkg.PythonEnv + ") naming one the tools' user can reach; packages of other runtimes are not affected"
	case d.PythonNote != "":
		py.found = d.Python + ": " + strings.TrimPrefix(d.PythonNote, "toolpkg: ")
	default:
		py.found = d.Python + " (" + from + ")"
		if d.ToolUser >= 0 {
			py.found += fmt.Sprintf(", in reach of uid %d", d.ToolUser)
		}
	}
	return append(out, py)
}

// programCheck reports the first of names found on PATH, with its
// version when it says one.
func programCheck(what, use, fix string, names ...string) check {
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			continue
		}
		found := p
		ctx, cancel := context.WithTimeout(context.Background(), doctorTimeout)
		out, err := exec.CommandContext(ctx, p, "--version").Output()
		cancel()
		if err == nil {
			if line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n"); line != "" {
				found += ": " + clip(line, 120)
			}
		}
		return check{what: what, found: found + " (" + use + ")", ok: true}
	}
	return check{what: what, found: "not installed: " + use + " are skipped", fix: fix}
}

// redisCheck reaches the Redis server at addr and asks it for a PONG.
func redisCheck(ctx context.Context, addr string) check {
	c := check{what: "redis at", fix: "start redis-server, or give the address it listens on"}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		c.found = fmt.Sprintf("%s: %v", addr, err)
		return c
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		c.found = fmt.Sprintf("%s: %v", addr, err)
		return c
	}
	line, err := bufio.NewReader(io.LimitReader(conn, 512)).ReadString('\n')
	switch {
	case err != nil:
		c.found = fmt.Sprintf("%s: no answer: %v", addr, err)
	case strings.TrimSpace(line) == "+PONG":
		c.found, c.ok, c.fix = addr+": answers PING", true, ""
	default:
		c.found = fmt.Sprintf("%s answered %q, not +PONG (a password, or not Redis)", addr, clip(strings.TrimSpace(line), 80))
	}
	return c
}

// brokerCheck connects to the broker of bf with its credentials.
func brokerCheck(ctx context.Context, bf *brokerFlags) check {
	c := check{what: "broker", fix: "start one (toolset platform --broker-listen ADDR, or nats-server), or check --broker and its credentials"}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	nc, err := bf.connect(ctx, "toolset-doctor", slog.New(slog.DiscardHandler))
	if err != nil {
		c.found = err.Error()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			c.found = fmt.Sprintf("%s: not reached in %v", redactURL(bf.url), doctorTimeout)
		}
		return c
	}
	defer nc.Close()
	c.found, c.ok, c.fix = nc.ConnectedUrlRedacted()+": connected", true, ""
	return c
}

// clip cuts s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
