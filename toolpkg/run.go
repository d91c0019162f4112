package toolpkg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gotoolset/toolset/internal/textcut"
)

// procResult is what became of one tool process.
type procResult struct {
	exitCode int            // -1 when killed by a signal
	signal   syscall.Signal // the signal that killed it, or 0
	timedOut bool
	cpu      time.Duration
	wall     time.Duration
	stdout   []byte // at most the requested number of bytes
	stdoutN  int64  // how many bytes it printed
	stderr   string // its last bytes, not marked
	// stderrCut is how many bytes of stderr came before those.
	stderrCut int64
}

// stderrText returns the end of the process's standard error, secrets
// hidden, at most maxStderr bytes marked when cut. The secrets are
// hidden before the cut, in bytes read beyond it, so that none is cut in
// two with its end shown.
func (r procResult) stderrText(sec *secrets) string {
	s := sec.text(r.stderr)
	cut := r.stderrCut
	if tail := textcut.Suffix(s, maxStderr); len(tail) < len(s) {
		cut += int64(len(s) - len(tail))
		s = tail
	}
	if cut > 0 {
		s = fmt.Sprintf("[%d earlier bytes cut]\n", cut) + s
	}
	return s
}

// maxStderr caps the stderr shown in errors.
const maxStderr = 4096

// runProcess runs l to completion or until timeout or ctx ends, whichever
// comes first, and then kills its whole process group. A tool's children
// never outlive the call: the tool is the first process of a PID
// namespace (its own, or bwrap's), whose processes the kernel kills when
// it ends, however they left its process group. Standard output and error go to files in dir, not
// pipes, so a child that keeps them open cannot hold the call up.
func (sb *sandbox) runProcess(ctx context.Context, l launch, timeout time.Duration, dir string, maxStdout int64) (procResult, error) {
	var res procResult
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		return res, err
	}
	defer outF.Close()
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		return res, err
	}
	defer errF.Close()

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, err := sb.command(runCtx, l)
	if err != nil {
		return res, err
	}
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = outF, errF
	cmd.SysProcAttr = sb.sysProcAttr()
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	if l.grace > 0 {
		// SIGTERM first, as the platform's SDKs expect (it cancels the
		// tool's context); SIGKILL once the grace is over.
		cmd.Cancel = func() error { return sb.terminate(cmd.Process.Pid) }
		cmd.WaitDelay = l.grace
	}
	start := time.Now()
	err = cmd.Start()
	closeAll(cmd.ExtraFiles)
	if err != nil {
		return res, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	waitErr := cmd.Wait()
	res.wall = time.Since(start)
	// Whatever the tool left running in its group goes too.
	_ = killGroup(cmd.Process.Pid)

	ps := cmd.ProcessState
	if ps == nil {
		return res, waitErr
	}
	res.cpu = ps.UserTime() + ps.SystemTime()
	res.exitCode = ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.signal = ws.Signal()
	}
	if sb.mode == ModeBwrap && res.signal == 0 && res.exitCode > 128 && res.exitCode < 128+65 {
		// bwrap reports a command killed by a signal as 128+signal.
		res.signal = syscall.Signal(res.exitCode - 128)
	}
	if ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		res.timedOut = true
	}
	res.stdout, res.stdoutN, err = readCapped(outF, maxStdout)
	if err != nil {
		return res, err
	}
	// Read more than is shown, for the secrets that end in what is.
	res.stderr, res.stderrCut, err = readTail(errF, maxStderr+l.stderrMargin)
	if err != nil {
		return res, err
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// terminate sends SIGTERM to the tool started as pid: its process group,
// or under bwrap, whose own processes would die of it and take the tool
// with them at once, the processes bwrap started.
func (sb *sandbox) terminate(pid int) error {
	if sb.mode != ModeBwrap {
		err := syscall.Kill(-pid, syscall.SIGTERM)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	// bwrap, then bwrap as the PID namespace's init, then the tool.
	for _, p := range descendants(pid, 2) {
		_ = syscall.Kill(p, syscall.SIGTERM)
	}
	return nil
}

// descendants returns the processes below pid, from depth minDepth on
// (1: its children), read from /proc.
func descendants(pid, minDepth int) []int {
	des, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, de := range des {
		p, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	level := []int{pid}
	for depth := 1; len(level) > 0 && depth < 64; depth++ {
		var next []int
		for _, p := range level {
			next = append(next, children[p]...)
		}
		if depth >= minDepth {
			out = append(out, next...)
		}
		level = next
	}
	return out
}

// parentOf returns the parent of process p, from /proc/<p>/stat.
func parentOf(p int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces and ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// killGroup kills the process group led by pid.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// readCapped reads at most max bytes from the start of f and returns them
// with f's size.
func readCapped(f *os.File, limit int64) ([]byte, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	n := min(fi.Size(), limit)
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	return b, fi.Size(), nil
}

// readTail returns the last limit bytes of f, and how many came before.
func readTail(f *os.File, limit int64) (string, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	size := fi.Size()
	off := max(0, size-limit)
	b := make([]byte, size-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return "", 0, err
	}
	return string(b), off, nil
}

// describeExit words how a process ended, for errors.
func (r procResult) describeExit(limits ResourceLimits) string {
	cpuLimit := time.Duration(limits.MaxCPUSeconds) * time.Second
	switch {
	case r.signal == syscall.SIGXCPU:
		return fmt.Sprintf("killed by SIGXCPU: CPU time limit of %ds reached", limits.MaxCPUSeconds)
	case r.signal == syscall.SIGKILL && cpuLimit > 0 && r.cpu >= cpuLimit*9/10:
		return fmt.Sprintf("killed by SIGKILL after %.1fs of CPU time: CPU time limit of %ds reached", r.cpu.Seconds(), limits.MaxCPUSeconds)
	case r.signal == syscall.SIGKILL && cpuLimit > 0 && r.wall >= cpuLimit*9/10/time.Duration(runtime.NumCPU()):
		// Under bwrap the tool is a grandchild whose CPU time is not
		// reported to us; the kernel sends SIGKILL at the hard CPU limit.
		return fmt.Sprintf("killed by SIGKILL after %.1fs: most likely the CPU time limit of %ds was reached", r.wall.Seconds(), limits.MaxCPUSeconds)
	case r.signal == syscall.SIGXFSZ:
		return fmt.Sprintf("killed by SIGXFSZ: file size limit of %d MB reached", limits.MaxFileSizeMB)
	case r.signal != 0:
		return "killed by " + signalName(r.signal)
	}
	return fmt.Sprintf("exit code %d", r.exitCode)
}

// signalName names a signal as a person reading an error expects.
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGSEGV: "SIGSEGV",
		syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGILL: "SIGILL",
		syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP", syscall.SIGPIPE: "SIGPIPE",
	}
	if n, ok := names[s]; ok {
		return fmt.Sprintf("%s (%s)", n, s)
	}
	return fmt.Sprintf("signal %d (%s)", int(s), s)
}
