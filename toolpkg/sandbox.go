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
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Mode is how tools are isolated from the host.
//
// A package is untrusted: its manifest, its --schema output, its
// processes and every file they write. [Options.Sandbox] picks how tools
// are isolated ([ModeBwrap], [ModePrlimit] or [ModeDirect]); the default,
// [ModeAuto], is the strongest that works on the machine. In every mode:
//
//   - result.json is opened without following links and without blocking,
//     must be a regular file and is read up to 16 MB; its content never
//     appears in an error beyond a short, printable, redacted preview;
//   - a tool's schema may not reference anything outside itself;
//   - what a package declares is bounded before it is used: [MaxTools]
//     tools, [MaxDescriptionBytes] per description, [MaxConfigFields]
//     configuration keys per tool, [MaxSecretBytes] of secret keys
//     and defaults, [MaxToolDefinitionBytes] of tool definitions; a
//     manifest's aliases cannot make checking it costly;
//   - manifest numbers are range-checked, and a store bounds what a
//     package may ask for ([Limits.MaxTimeoutSeconds],
//     [Limits.MaxResourceLimits]);
//   - every process a call starts ends with it (result, error, timeout or
//     cancellation), even one that left the process group: the tool is
//     the first process of a PID namespace. Where the kernel refuses
//     namespaces, a warning says so at start-up and only the process
//     group is killed.
//
// What the modes add:
//
//	                              direct   prlimit   bwrap
//	resource limits (CPU, file
//	size, open files, processes)  no       yes       yes
//	runs as nobody (65534) when
//	the host is root              no       yes       yes
//	max_processes per call        no       yes (1)   yes
//	network cut off (restrictive) no       no        yes
//	host files hidden             no       no        yes
//	hidden from other calls (3)   no       no        yes
//	total writes bounded          no       no        yes (2)
//	memory bounded                no       no        no (4)
//
// (1) counted per call when a user namespace can be made; else over every
// process of the user tools run as. (2) The work directory and /tmp are
// each a tmpfs of max_write_mb; the only host files a tool writes are
// result.json and its standard output and error, made by the host and
// each bounded by max_file_size_mb, the status pipe, and its toolset's
// scratch directory (whose total size is not bounded) (a tool that renames a file over
// result.json fails under bwrap). (3) Outside
// bwrap, the tools of every call run as one user and see the host's /proc:
// a tool can find another call's work directory (its command line names
// runner_args.json), read its arguments and configuration, secrets
// included, and replace its files. Use bwrap when packages of different
// trust share a store. (4) No mode limits the memory a tool allocates
// (the address-space limit breaks Go binaries): run the host under a
// memory cgroup (systemd's MemoryMax=, a container's limit) to bound it.
// The standard and permissive profiles share the host's network, its
// local services and abstract Unix sockets included.
//
// Under root, uid 0 is exempt from the process limit, so tools run as
// [ToolUID]: the store's directory and those above it must be searchable
// by that user (Open says so when they are not). What a mode cannot
// enforce is logged once, as a warning, when a store opens; a package
// that asks for the restrictive profile outside bwrap is warned about at
// upload.
type Mode string

// The sandbox modes.
const (
	// ModeAuto picks the strongest mode that works on this machine: bwrap,
	// else prlimit, else direct.
	ModeAuto Mode = ""
	// ModeDirect runs tools as plain subprocesses, as this process's user:
	// no isolation, no limits; only a PID namespace, where the kernel
	// allows one, so that their processes end with the call.
	ModeDirect Mode = "direct"
	// ModePrlimit runs tools under the profile's resource limits, set by
	// util-linux's prlimit(1), in a PID (and user) namespace of their own,
	// as ToolUID when the host is root; no other isolation.
	ModePrlimit Mode = "prlimit"
	// ModeBwrap runs tools in a bubblewrap sandbox (user, PID, IPC and UTS
	// namespaces, and a network namespace for the restrictive profile), as
	// uid and gid 65534, with read-only system directories, the package
	// read-only, the work directory and /tmp as size-limited tmpfs, a
	// cleared environment, no capabilities, and the profile's limits.
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

// ToolUID and ToolGID are the user and group tools run as when the host
// runs as root, in the prlimit and bwrap modes: nobody and nogroup, as the
// reference platform does. Root is exempt from the process limit, and a
// tool has no business with root's files.
const (
	ToolUID = 65534
	ToolGID = 65534
)

// sandbox starts tool processes in one mode.
type sandbox struct {
	mode    Mode
	bwrap   string // path of bwrap, for ModeBwrap
	prlimit string // path of prlimit, for ModePrlimit and ModeBwrap
	// runAs is who tools run as (ToolUID when the host is root, in the
	// prlimit and bwrap modes); nil keeps the host's user.
	runAs *syscall.Credential
	// pidns: in the direct and prlimit modes, each tool is the first
	// process of a PID namespace of its own, so that every process it
	// starts (in a new session too) dies with it. bwrap makes its own.
	pidns bool
	// userns: that namespace comes with a user namespace (needed when the
	// host is not root, and so that the process limit counts the
	// processes of this call alone).
	userns bool
}

// sysProcAttr returns how to start the first process of a launch.
func (sb *sandbox) sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if sb.mode == ModeBwrap {
		a.Credential = sb.runAs
		return a
	}
	if sb.pidns {
		a.Cloneflags |= syscall.CLONE_NEWPID
	}
	if sb.userns {
		uid, gid := os.Getuid(), os.Getgid()
		if sb.runAs != nil {
			uid, gid = int(sb.runAs.Uid), int(sb.runAs.Gid)
		}
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = os.Geteuid() == 0
	}
	a.Credential = sb.runAs
	return a
}

// owner returns who tools run as, for the files they must write; ok is
// false when that is the host's user.
func (sb *sandbox) owner() (uid, gid int, ok bool) {
	if sb.runAs == nil {
		return 0, 0, false
	}
	return int(sb.runAs.Uid), int(sb.runAs.Gid), true
}

// launch describes one tool process.
type launch struct {
	pkgDir  string // host path of the package version
	workDir string // host path of the work directory
	exe     string // the executable's path inside the package
	args    []string
	profile Profile
	limits  ResourceLimits
	// stderrMargin is how many bytes of stderr to read beyond what is
	// shown, so that a secret cut by the tail is still found.
	stderrMargin int64
	// collectOutput: under bwrap, the files the tool leaves in output/
	// are written as a tar archive to standard output (outputWrapper).
	collectOutput bool
	// python, when set, runs exe as a Python script with this
	// interpreter, pythonPath on PYTHONPATH after <package>/python.
	python     *interpreter
	pythonPath []string
	// env is more of the tool's environment, NAME=value.
	env []string
	// grace is how long the tool has between SIGTERM and SIGKILL when
	// its time is up or its call is canceled; 0: SIGKILL at once.
	grace time.Duration
	// binds are host files or directories the tool sees at a path of
	// its own under bwrap (the status pipe, the scratch directory);
	// outside bwrap it is given their host paths.
	binds []bind
}

// bind is a host path shown inside the bwrap sandbox, writable.
type bind struct {
	host, inside string
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
// streams, its process group and its cancellation, and closes its
// ExtraFiles once it started.
func (sb *sandbox) command(ctx context.Context, l launch) (*exec.Cmd, error) {
	pkg, work := sb.paths(l)
	argv := append([]string{filepath.Join(pkg, filepath.FromSlash(l.exe))}, l.args...)
	env := []string{"PATH=" + toolPath, "HOME=" + work, "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}
	if l.python != nil {
		// The interpreter runs the script: its "#!" line names the
		// build machine's. -s: no user site directory.
		argv = append([]string{l.python.exe, "-s"}, argv...)
		pp := append([]string{filepath.Join(pkg, "python")}, l.pythonPath...)
		env = append(env, "PYTHONPATH="+strings.Join(pp, ":"), "PYTHONNOUSERSITE=1", "PYTHONUNBUFFERED=1")
	}
	env = append(env, l.env...)
	var files []*os.File
	switch sb.mode {
	case ModeBwrap:
		// prlimit runs inside, once bwrap made the user namespace: the
		// process limit then counts this call's processes alone.
		env = append(env, "TMPDIR=/tmp")
		if l.collectOutput {
			argv = outputWrapper(argv)
		}
		argv = append(prlimitArgs(sb.prlimit, l.limits), argv...)
		// What the sandbox shows beyond its system directories is
		// opened here and passed as descriptors: the user tools run as
		// may not reach it on the host (a pyenv interpreter under
		// /root), and a path could be swapped for a link between a
		// check and bwrap's mount.
		var extra []string
		add := func(flag, host, inside string) error {
			f, err := openPath(host)
			if err != nil {
				return err
			}
			files = append(files, f)
			extra = append(extra, flag, strconv.Itoa(2+len(files)), inside)
			return nil
		}
		var err error
		if l.python != nil {
			for _, r := range l.python.roots {
				if err = add("--ro-bind-fd", r, r); err != nil {
					break
				}
			}
		}
		for _, b := range l.binds {
			if err != nil {
				break
			}
			err = add("--bind-fd", b.host, b.inside)
		}
		if err != nil {
			closeAll(files)
			return nil, err
		}
		args := sb.bwrapArgs(l.profile, l.pkgDir, l.workDir, env, l.limits.MaxWriteMB)
		args = append(args[:len(args)-1:len(args)-1], append(extra, "--")...)
		argv = append(args, argv...)
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
	cmd.ExtraFiles = files
	return cmd, nil
}

// openPath opens p without following a final symlink, for bwrap to
// mount: a descriptor that grants nothing but naming the file.
func openPath(p string) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
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

// bwrapArgs returns the bwrap command line up to the tool's argv. The
// work directory and /tmp are size-limited tmpfs of writeMB megabytes
// each: a tool cannot fill the host's disk or memory. Only result.json
// (created by the host, and limited by the file size limit),
// runner_args.json and input/ (read-only) are the host's work directory;
// the files of output/ leave the sandbox as an archive on standard output
// (see outputWrapper).
func (sb *sandbox) bwrapArgs(p Profile, pkgDir, workDir string, env []string, writeMB int) []string {
	args := []string{sb.bwrap,
		"--unshare-user", "--uid", strconv.Itoa(ToolUID), "--gid", strconv.Itoa(ToolGID),
		"--unshare-pid", "--unshare-ipc", "--unshare-uts",
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
	size := strconv.FormatInt(int64(max(writeMB, 1))<<20, 10)
	args = append(args,
		"--proc", "/proc", "--dev", "/dev",
		"--size", size, "--tmpfs", "/tmp",
		"--ro-bind", pkgDir, bwrapPkgDir,
		"--size", size, "--tmpfs", bwrapWorkDir,
		// input/ holds the call's artifacts, read-only; output/ is the
		// host's, so that the files written there can be saved.
		"--dir", bwrapWorkDir+"/input", "--dir", bwrapWorkDir+"/output",
		// input/ holds the call's artifacts, read-only.
		"--ro-bind-try", filepath.Join(workDir, "input"), bwrapWorkDir+"/input",
		"--ro-bind-try", filepath.Join(workDir, "runner_args.json"), bwrapWorkDir+"/runner_args.json",
		"--bind-try", filepath.Join(workDir, "result.json"), bwrapWorkDir+"/result.json",
		"--ro-bind-try", filepath.Join(workDir, "config.json"), bwrapWorkDir+"/config.json",
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
// automatic choice is probed and logged once per process, and so is what
// the mode cannot enforce on this machine.
func newSandbox(mode Mode, logger *slog.Logger) (*sandbox, error) {
	var sb *sandbox
	switch mode {
	case ModeDirect:
		sb = &sandbox{mode: ModeDirect}
		sb.probeNamespaces()
	case ModePrlimit:
		p, err := findPrlimit()
		if err != nil {
			return nil, err
		}
		sb = &sandbox{mode: ModePrlimit, prlimit: p, runAs: toolCredential()}
		sb.probeNamespaces()
	case ModeBwrap:
		var err error
		if sb, err = bwrapSandbox(); err != nil {
			return nil, err
		}
	case ModeAuto:
		detectOnce.Do(func() {
			detected, detectWhy = detect()
			logger.Info("toolpkg: sandbox mode selected", "mode", string(detected.mode), "reason", detectWhy)
		})
		sb = detected
	default:
		return nil, fmt.Errorf("toolpkg: unknown sandbox mode %q", mode)
	}
	for _, w := range sb.gaps() {
		warnOnce(logger, w, "mode", string(sb.mode))
	}
	return sb, nil
}

// gaps says what the sandbox cannot enforce on this machine.
func (sb *sandbox) gaps() []string {
	var out []string
	switch sb.mode {
	case ModeBwrap:
		return nil
	case ModeDirect:
		out = append(out, "toolpkg: the direct sandbox mode enforces no resource limits and no isolation; tools run as this process's user")
	case ModePrlimit:
		out = append(out, "toolpkg: the prlimit sandbox mode cannot cut off the network, hide the host's files or bound the total bytes a tool writes; only bwrap can")
		if !sb.userns {
			out = append(out, "toolpkg: no user namespace here: max_processes counts every process of the user tools run as, not those of one call")
		}
	}
	if !sb.pidns {
		out = append(out, "toolpkg: no PID namespace here: a process a tool starts in a new session (setsid) can outlive its call")
	}
	return out
}

var warned sync.Map

// warnOnce logs a warning once per process.
func warnOnce(logger *slog.Logger, msg string, args ...any) {
	if _, dup := warned.LoadOrStore(msg, true); !dup {
		logger.Warn(msg, args...)
	}
}

// toolCredential returns who tools run as: ToolUID and ToolGID when the
// host runs as root, else nil (the host's user).
func toolCredential() *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: ToolUID, Gid: ToolGID, Groups: []uint32{}}
}

// probeNamespaces finds out whether tools can have a PID namespace (and a
// user namespace) of their own here, by starting one.
func (sb *sandbox) probeNamespaces() {
	root := os.Geteuid() == 0
	try := func(pidns, userns bool) bool {
		probe := *sb
		probe.pidns, probe.userns = pidns, userns
		cmd := exec.Command("/bin/sh", "-c", "echo $$")
		cmd.SysProcAttr = probe.sysProcAttr()
		out, err := cmd.Output()
		return err == nil && strings.TrimSpace(string(out)) == "1"
	}
	switch {
	case (root && sb.runAs == nil) && try(true, false):
		sb.pidns = true
	case try(true, true):
		sb.pidns, sb.userns = true, true
	case root && try(true, false):
		// Root without user namespaces: the process limit counts every
		// process of ToolUID.
		sb.pidns = true
	}
}

// detect picks the strongest mode that works here.
func detect() (*sandbox, string) {
	sb, err := bwrapSandbox()
	if err == nil {
		return sb, "bubblewrap works on this machine"
	}
	why := err.Error()
	if p, perr := findPrlimit(); perr == nil {
		sb := &sandbox{mode: ModePrlimit, prlimit: p, runAs: toolCredential()}
		sb.probeNamespaces()
		return sb, "no bubblewrap sandbox: " + why
	} else {
		why += "; " + perr.Error()
	}
	sb = &sandbox{mode: ModeDirect}
	sb.probeNamespaces()
	return sb, "no isolation available: " + why
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
// starts, with the namespaces the restrictive profile uses, as the user
// tools run as, with prlimit inside.
func bwrapSandbox() (*sandbox, error) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("toolpkg: bwrap (bubblewrap) not found: %w", err)
	}
	pl, err := findPrlimit()
	if err != nil {
		return nil, fmt.Errorf("toolpkg: bwrap mode needs prlimit for resource limits: %w", err)
	}
	sb := &sandbox{mode: ModeBwrap, bwrap: bw, prlimit: pl, runAs: toolCredential()}
	dir, err := os.MkdirTemp("", "toolpkg-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if !searchable(os.TempDir(), sb.runAs) {
		return nil, fmt.Errorf("toolpkg: bwrap probe: uid %d cannot reach %s", ToolUID, os.TempDir())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := sb.bwrapArgs(Restrictive, dir, dir, []string{"PATH=" + toolPath}, 1)
	args = append(args, prlimitArgs(pl, ResourceLimits{MaxProcesses: 16})...)
	args = append(args, "/bin/sh", "-c", "echo $$")
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = sb.sysProcAttr()
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("toolpkg: bwrap cannot start a sandbox here: %v: %s", err, bytes.TrimSpace(out))
	}
	// In its own PID namespace the shell has a small PID.
	if pid, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || pid > 16 {
		return nil, fmt.Errorf("toolpkg: bwrap probe printed %q, not a PID of a new namespace", out)
	}
	return sb, nil
}

// searchable reports whether the user of cred (nil: this process's) can
// reach path: search permission on it and every directory above it.
func searchable(path string, cred *syscall.Credential) bool {
	if cred == nil {
		return true
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for p := abs; ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return false
		}
		m := st.Mode
		ok := m&0o001 != 0 ||
			(st.Uid == cred.Uid && m&0o100 != 0) ||
			(st.Gid == cred.Gid && m&0o010 != 0)
		if !ok {
			return false
		}
		if p == "/" || p == filepath.Dir(p) {
			return true
		}
	}
}
