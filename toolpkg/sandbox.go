package toolpkg

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mode is how tools are isolated from the host.
type Mode string

// The sandbox modes.
const (
	// ModeAuto picks the strongest mode that works on this machine: bwrap,
	// else prlimit, else direct.
	ModeAuto Mode = ""
	// ModeDirect runs tools as plain subprocesses: no isolation, no limits.
	ModeDirect Mode = "direct"
	// ModePrlimit runs tools under the profile's resource limits, set by
	// util-linux's prlimit(1), with no other isolation.
	ModePrlimit Mode = "prlimit"
	// ModeBwrap runs tools in a bubblewrap sandbox (user, PID, IPC and UTS
	// namespaces, and a network namespace for the restrictive profile), with
	// read-only system directories, the package read-only, a private /tmp,
	// a cleared environment, no capabilities, and the profile's limits.
	ModeBwrap Mode = "bwrap"
)

// ParseMode parses a sandbox mode: "auto" (or ""), "direct", "prlimit"
// (or the platform's spelling "prlimit-only") or "bwrap".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return ModeAuto, nil
	case "direct":
		return ModeDirect, nil
	case "prlimit", "prlimit-only":
		return ModePrlimit, nil
	case "bwrap", "bubblewrap":
		return ModeBwrap, nil
	}
	return "", fmt.Errorf("toolpkg: unknown sandbox mode %q; use auto, direct, prlimit or bwrap", s)
}

// Where the package and the work directory appear inside bwrap.
const (
	bwrapPkgDir  = "/toolset/pkg"
	bwrapWorkDir = "/toolset/work"
)

// toolPath is the PATH tools run with, in every mode.
const toolPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// sandbox starts tool processes in one mode.
type sandbox struct {
	mode    Mode
	bwrap   string // path of bwrap, for ModeBwrap
	prlimit string // path of prlimit, for ModePrlimit and ModeBwrap
}

// launch describes one tool process.
type launch struct {
	pkgDir  string // host path of the package version
	workDir string // host path of the work directory
	exe     string // the executable's path inside the package
	args    []string
	profile Profile
	limits  ResourceLimits
}

// paths returns where the package and the work directory appear to the
// tool.
func (sb *sandbox) paths(l launch) (pkg, work string) {
	if sb.mode == ModeBwrap {
		return bwrapPkgDir, bwrapWorkDir
	}
	return l.pkgDir, l.workDir
}

// command returns the command that runs l. The caller sets its standard
// streams, its process group and its cancellation.
func (sb *sandbox) command(ctx context.Context, l launch) *exec.Cmd {
	pkg, work := sb.paths(l)
	argv := append([]string{filepath.Join(pkg, filepath.FromSlash(l.exe))}, l.args...)
	env := []string{"PATH=" + toolPath, "HOME=" + work, "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}
	switch sb.mode {
	case ModeBwrap:
		env = append(env, "TMPDIR=/tmp")
		argv = append(sb.bwrapArgs(l.profile, l.pkgDir, l.workDir, env), argv...)
		argv = append(prlimitArgs(sb.prlimit, l.limits), argv...)
		env = []string{"PATH=" + toolPath}
	case ModePrlimit:
		env = append(env, "TMPDIR="+os.TempDir())
		argv = append(prlimitArgs(sb.prlimit, l.limits), argv...)
	default:
		env = append(env, "TMPDIR="+os.TempDir())
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = l.workDir
	return cmd
}

// prlimitArgs returns the prlimit(1) prefix that sets the limits (soft and
// hard alike) and runs the rest of the command line. The address-space
// limit is never set: it breaks Go binaries, which reserve large virtual
// ranges up front.
func prlimitArgs(prlimit string, l ResourceLimits) []string {
	const mb = 1 << 20
	args := []string{prlimit}
	add := func(flag string, v int64) {
		if v > 0 {
			args = append(args, fmt.Sprintf("--%s=%d", flag, v))
		}
	}
	add("cpu", int64(l.MaxCPUSeconds))
	add("fsize", int64(l.MaxFileSizeMB)*mb)
	add("nofile", int64(l.MaxOpenFiles))
	add("nproc", int64(l.MaxProcesses))
	add("stack", int64(l.MaxStackSizeMB)*mb)
	return append(args, "--")
}

// etcFiles are the parts of /etc a tool sees under the restrictive and
// standard profiles: what the dynamic linker, name resolution, TLS and
// locale need, and nothing that holds host secrets.
var etcFiles = []string{
	"alternatives", "ca-certificates", "ca-certificates.conf", "gai.conf", "group", "host.conf",
	"hosts", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "mime.types",
	"nsswitch.conf", "os-release", "passwd", "protocols", "resolv.conf", "services", "ssl",
}

// bwrapArgs returns the bwrap command line up to the tool's argv.
func (sb *sandbox) bwrapArgs(p Profile, pkgDir, workDir string, env []string) []string {
	args := []string{sb.bwrap,
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--hostname", "toolset",
	}
	if !p.Network() {
		args = append(args, "--unshare-net")
	}
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	if p == Permissive {
		args = append(args, "--ro-bind", "/etc", "/etc", "--ro-bind-try", "/opt", "/opt")
	} else {
		for _, f := range etcFiles {
			args = append(args, "--ro-bind-try", "/etc/"+f, "/etc/"+f)
		}
	}
	args = append(args,
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--ro-bind", pkgDir, bwrapPkgDir,
		"--bind", workDir, bwrapWorkDir,
		"--chdir", bwrapWorkDir,
		"--clearenv",
	)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	return append(args, "--")
}

// Sandbox detection runs once per process.
var (
	detectOnce sync.Once
	detected   *sandbox
	detectWhy  string
)

// newSandbox returns the sandbox for mode, checking that it works. The
// automatic choice is probed and logged once per process.
func newSandbox(mode Mode, logger *slog.Logger) (*sandbox, error) {
	switch mode {
	case ModeDirect:
		return &sandbox{mode: ModeDirect}, nil
	case ModePrlimit:
		p, err := findPrlimit()
		if err != nil {
			return nil, err
		}
		return &sandbox{mode: ModePrlimit, prlimit: p}, nil
	case ModeBwrap:
		sb, err := bwrapSandbox()
		if err != nil {
			return nil, err
		}
		return sb, nil
	case ModeAuto:
		detectOnce.Do(func() {
			detected, detectWhy = detect()
			logger.Info("toolpkg: sandbox mode selected", "mode", string(detected.mode), "reason", detectWhy)
		})
		return detected, nil
	}
	return nil, fmt.Errorf("toolpkg: unknown sandbox mode %q", mode)
}

// detect picks the strongest mode that works here.
func detect() (*sandbox, string) {
	sb, err := bwrapSandbox()
	if err == nil {
		return sb, "bubblewrap works on this machine"
	}
	why := err.Error()
	if p, perr := findPrlimit(); perr == nil {
		return &sandbox{mode: ModePrlimit, prlimit: p}, "no bubblewrap sandbox: " + why
	} else {
		why += "; " + perr.Error()
	}
	return &sandbox{mode: ModeDirect}, "no isolation available: " + why
}

func findPrlimit() (string, error) {
	p, err := exec.LookPath("prlimit")
	if err != nil {
		return "", fmt.Errorf("toolpkg: prlimit (util-linux) not found: %w", err)
	}
	out, err := exec.Command(p, "--nofile=64", "--", "/bin/sh", "-c", "ulimit -n").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "64" {
		return "", fmt.Errorf("toolpkg: prlimit does not work here: %v %s", err, bytes.TrimSpace(out))
	}
	return p, nil
}

// bwrapSandbox finds bwrap and prlimit and checks that a sandbox really
// starts, with the namespaces the restrictive profile uses.
func bwrapSandbox() (*sandbox, error) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("toolpkg: bwrap (bubblewrap) not found: %w", err)
	}
	pl, err := findPrlimit()
	if err != nil {
		return nil, fmt.Errorf("toolpkg: bwrap mode needs prlimit for resource limits: %w", err)
	}
	sb := &sandbox{mode: ModeBwrap, bwrap: bw, prlimit: pl}
	dir, err := os.MkdirTemp("", "toolpkg-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := sb.bwrapArgs(Restrictive, dir, dir, []string{"PATH=" + toolPath})
	args = append(args, "/bin/sh", "-c", "echo $$")
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("toolpkg: bwrap cannot start a sandbox here: %v: %s", err, bytes.TrimSpace(out))
	}
	// In its own PID namespace the shell has a small PID.
	if pid, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || pid > 16 {
		return nil, fmt.Errorf("toolpkg: bwrap probe printed %q, not a PID of a new namespace", out)
	}
	return sb, nil
}
