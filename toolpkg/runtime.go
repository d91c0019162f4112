package toolpkg

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// ExecKind is what an executable's file is, found by inspecting it.
type ExecKind string

// The kinds of executable.
const (
	// KindNative is an ELF binary for this machine's OS and architecture,
	// run as it is.
	KindNative ExecKind = "native"
	// KindPython is a Python script: its "#!" line names a Python
	// interpreter, or it has none and ends in .py or the manifest says
	// runtime: python. It runs with the store's interpreter
	// ([Options.Python]) and <package>/python on PYTHONPATH; its "#!"
	// line, which names the build machine's interpreter, is ignored.
	KindPython ExecKind = "python"
	// KindScript is any other script, run through its "#!" line (which
	// must name an interpreter the sandbox has, such as /bin/sh).
	KindScript ExecKind = "script"
)

// maxHeader is how much of an executable is read to tell what it is.
const maxHeader = 512

// inspectExecutable tells what the file at p is. A binary for another OS
// or architecture, or a file that is no executable at all, is an error
// saying so.
func inspectExecutable(p string, declared Runtime) (ExecKind, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("is not a regular file")
	}
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, maxHeader)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	return classify(head[:n], path.Base(p), declared)
}

// hostPlatform is the OS and architecture tools must be built for.
func hostPlatform() string { return runtime.GOOS + "/" + runtime.GOARCH }

// classify tells what an executable is from its first bytes.
func classify(head []byte, name string, declared Runtime) (ExecKind, error) {
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return elfKind(head)
	case isMachO(head):
		return "", fmt.Errorf("is a Mach-O binary (macOS)%s; this runtime runs %s binaries: build it with GOOS=linux GOARCH=%s",
			machOArch(head), hostPlatform(), runtime.GOARCH)
	case bytes.HasPrefix(head, []byte("MZ")):
		return "", fmt.Errorf("is a PE binary (Windows); this runtime runs %s binaries: build it with GOOS=linux GOARCH=%s",
			hostPlatform(), runtime.GOARCH)
	case bytes.HasPrefix(head, []byte("#!")):
		if isPythonShebang(head) {
			return KindPython, nil
		}
		return KindScript, nil
	case declared == RuntimePython || strings.HasSuffix(name, ".py"):
		return KindPython, nil
	}
	return "", fmt.Errorf("is neither a binary for %s nor a script with a \"#!\" line (it starts %s)", hostPlatform(), quoteStart(head, 16))
}

// elfMachines maps GOARCH to its ELF machine and class (1: 32-bit, 2:
// 64-bit).
var elfMachines = map[string]struct {
	machine uint16
	class   byte
}{
	"386": {3, 1}, "amd64": {62, 2}, "arm": {40, 1}, "arm64": {183, 2},
	"riscv64": {243, 2}, "ppc64le": {21, 2}, "ppc64": {21, 2}, "s390x": {22, 2},
	"loong64": {258, 2}, "mips64le": {8, 2}, "mips64": {8, 2}, "mipsle": {8, 1}, "mips": {8, 1},
}

// elfMachineNames names the ELF machines a package is likely built for.
var elfMachineNames = map[uint16]string{
	3: "386", 62: "amd64", 40: "arm", 183: "arm64", 243: "riscv64", 21: "ppc64",
	22: "s390x", 258: "loong64", 8: "mips",
}

// elfOSABIs names the ELF OS ABIs other than Linux's (0 and 3).
var elfOSABIs = map[byte]string{
	1: "hpux", 2: "netbsd", 6: "solaris", 7: "aix", 9: "freebsd", 12: "openbsd",
}

func elfKind(head []byte) (ExecKind, error) {
	if len(head) < 20 {
		return "", fmt.Errorf("is a truncated ELF file")
	}
	class, data, osabi := head[4], head[5], head[7]
	var order binary.ByteOrder = binary.LittleEndian
	if data == 2 {
		order = binary.BigEndian
	}
	machine := order.Uint16(head[18:20])
	arch, known := elfMachineNames[machine]
	if !known {
		arch = fmt.Sprintf("machine %d", machine)
	}
	if class == 1 && arch == "arm64" {
		arch = "arm"
	}
	osName := "linux"
	if n, ok := elfOSABIs[osabi]; ok {
		osName = n
	} else if osabi != 0 && osabi != 3 {
		osName = fmt.Sprintf("OS ABI %d", osabi)
	}
	want := elfMachines[runtime.GOARCH]
	if osName != "linux" || machine != want.machine || class != want.class {
		return "", fmt.Errorf("is an ELF binary for %s/%s (%d-bit); this runtime runs %s binaries: build it with GOOS=linux GOARCH=%s",
			osName, arch, 32*int(class), hostPlatform(), runtime.GOARCH)
	}
	return KindNative, nil
}

func isMachO(head []byte) bool {
	if len(head) < 8 {
		return false
	}
	switch binary.BigEndian.Uint32(head) {
	case 0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe:
		return true
	case 0xcafebabe: // a universal binary, or a Java class file
		return binary.BigEndian.Uint32(head[4:]) < 20
	}
	return false
}

// machOArch names a Mach-O file's architecture, as " for arm64", or "".
func machOArch(head []byte) string {
	if len(head) < 8 {
		return ""
	}
	var cpu uint32
	switch binary.BigEndian.Uint32(head) {
	case 0xcefaedfe, 0xcffaedfe:
		cpu = binary.LittleEndian.Uint32(head[4:])
	case 0xfeedface, 0xfeedfacf:
		cpu = binary.BigEndian.Uint32(head[4:])
	default:
		return " (universal)"
	}
	switch cpu {
	case 0x01000007:
		return " for amd64"
	case 0x0100000c:
		return " for arm64"
	}
	return ""
}

var pythonCmd = regexp.MustCompile(`^python[0-9.]*$`)

// isPythonShebang reports whether the "#!" line at the start of head names
// a Python interpreter, directly or through env.
func isPythonShebang(head []byte) bool {
	line, _, _ := bytes.Cut(head[2:], []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return false
	}
	if path.Base(fields[0]) == "env" {
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				return pythonCmd.MatchString(path.Base(f))
			}
		}
		return false
	}
	return pythonCmd.MatchString(path.Base(fields[0]))
}

// PythonEnv is the environment variable that names the interpreter Python
// tools run with, when [Options.Python] does not; the reference platform's
// SAM_STR_PYTHON is read after it.
const PythonEnv = "TOOLSET_PYTHON"

// pythonEnv is the reference platform runtime's name for PythonEnv.
const pythonEnv = "SAM_STR_PYTHON"

// interpreter is the Python that Python tools run with.
type interpreter struct {
	// exe is the real interpreter (sys.executable), not a wrapper such
	// as a pyenv shim.
	exe string
	// roots are the directories it needs (sys.prefix, sys.base_prefix)
	// outside the system directories every sandbox shows.
	roots []string
}

// pythonQuery asks an interpreter where it lives.
const pythonQuery = "import sys; print(sys.executable); print(sys.prefix); print(sys.base_prefix); print(sys.version_info[0])"

// resolvePython finds the interpreter named by name (a path or a command
// on PATH), asking it for its real executable and prefix, so that a shim
// (pyenv) or a symlink is seen through.
func resolvePython(name string) (*interpreter, error) {
	exe, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("the Python interpreter %q was not found: %w; set Options.Python or %s", name, err, PythonEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-c", pythonQuery)
	cmd.Dir = "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("the Python interpreter %s does not run: %v: %s", exe, err, quoteStart(bytes.TrimSpace(stderr.Bytes()), 200))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 || !filepath.IsAbs(lines[0]) {
		return nil, fmt.Errorf("the Python interpreter %s gave no usable sys.executable (it printed %s)", exe, quoteStart(out, 200))
	}
	if lines[3] != "3" {
		return nil, fmt.Errorf("the Python interpreter %s is Python %s; tools need Python 3", exe, quoteShort(lines[3]))
	}
	in := &interpreter{exe: filepath.Clean(lines[0])}
	for _, p := range lines[1:3] {
		p = filepath.Clean(p)
		if !filepath.IsAbs(p) || systemDir(p) || contains(in.roots, p) {
			continue
		}
		in.roots = append(in.roots, p)
	}
	if !systemDir(in.exe) && !under(in.exe, in.roots) {
		in.roots = append(in.roots, filepath.Dir(in.exe))
	}
	return in, nil
}

// systemDirs are what every bwrap sandbox shows read-only.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

func systemDir(p string) bool { return under(p, systemDirs) }

// under reports whether p is one of dirs or inside one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// reachable checks that the user tools run as can run the interpreter:
// outside bwrap it runs from the host's file system, and bwrap, which
// runs as that user, resolves what it mounts by path on the host.
func (in *interpreter) reachable(sb *sandbox) error {
	dirs := append([]string{filepath.Dir(in.exe)}, in.roots...)
	for _, d := range dirs {
		if !searchable(d, sb.runAs) {
			return fmt.Errorf("the Python interpreter %s is out of reach of uid %d, whom tools run as in the %s sandbox mode (%s or a directory above it is closed to that user): "+
				"set Options.Python or %s to an interpreter that user can reach, such as /usr/bin/python3", in.exe, ToolUID, sb.mode, d, PythonEnv)
		}
	}
	return nil
}

// pythonName returns the interpreter a store runs Python tools with, and
// where the name came from.
func (o *Options) pythonName() (name, from string) {
	if o.Python != "" {
		return o.Python, "Options.Python"
	}
	for _, env := range []string{PythonEnv, pythonEnv} {
		if v := os.Getenv(env); v != "" {
			return v, "$" + env
		}
	}
	return "python3", ""
}

// systemPython is the interpreter tried when the python3 on PATH is out of
// reach of the user tools run as.
const systemPython = "/usr/bin/python3"

// findPython finds the interpreter of opts and checks that the user tools
// run as in sb can reach it. When no interpreter was named and the python3
// on PATH is out of that user's reach (a per-user Python of root's, such
// as pyenv's), the system one is used if that user can reach it; note
// then says so.
func findPython(opts *Options, sb *sandbox) (in *interpreter, note string, err error) {
	name, from := opts.pythonName()
	in, err = resolvePython(name)
	if err == nil {
		err = in.reachable(sb)
	}
	if err == nil || from != "" {
		return in, "", err
	}
	sys, serr := resolvePython(systemPython)
	if serr != nil || sys.reachable(sb) != nil {
		return nil, "", err
	}
	if in != nil {
		err = fmt.Errorf("the python3 on PATH, %s, is out of reach of uid %d, whom tools run as in the %s sandbox mode", in.exe, ToolUID, sb.mode)
	}
	return sys, fmt.Sprintf("toolpkg: %v; Python tools run with %s instead (set Options.Python or %s to choose)", err, sys.exe, PythonEnv), nil
}

// python returns the store's interpreter, found once.
func (s *Store) python() (*interpreter, error) {
	s.pyOnce.Do(func() {
		var note string
		s.py, note, s.pyErr = findPython(&s.opts, s.sb)
		if note != "" {
			warnOnce(s.log, note)
		}
		if s.pyErr == nil {
			s.log.Info("toolpkg: Python tools run with "+s.py.exe, "roots", s.py.roots)
		}
	})
	return s.py, s.pyErr
}
