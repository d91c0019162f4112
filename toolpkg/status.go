package toolpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
)

// The bounds of what a tool's status pipe delivers.
const (
	// maxStatusLine bounds a line of the status pipe; longer ones are
	// skipped.
	maxStatusLine = 4096
	// maxStatusMessage bounds the message of one progress report.
	maxStatusMessage = 1024
	// maxStatusReports bounds the progress reports of one call; the
	// lines beyond are counted and dropped.
	maxStatusReports = 1000
	// statusDrain is how long the pipe is read once the tool ended, for
	// the lines it wrote last.
	statusDrain = 200 * time.Millisecond
)

// statusPipeName is the name of the FIFO in a call's work directory.
const statusPipeName = "status.pipe"

// statusReader reads a call's status pipe: JSON lines {"status": "..."}
// that become progress reports on the call's context. The tool never
// waits for it: the host holds both ends open from before the tool
// starts, so the tool's non-blocking writes succeed while the pipe has
// room, and the reader drains it as fast as it fills.
type statusReader struct {
	r, w *os.File
	done chan struct{}

	mu      sync.Mutex
	reports int
	skipped int // lines that were not a status, or too long
	dropped int // statuses beyond maxStatusReports
}

// makeStatusPipe creates the FIFO at p, owned by the user tools run as.
func (s *Store) makeStatusPipe(p string) error {
	if err := unix.Mkfifo(p, 0o600); err != nil {
		return &os.PathError{Op: "mkfifo", Path: p, Err: err}
	}
	if uid, gid, ok := s.sb.owner(); ok {
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// readStatus opens the FIFO at p and reads it until stop, reporting each
// status to ctx's progress callback with secrets hidden.
func readStatus(ctx context.Context, p string, sec *secrets) (*statusReader, error) {
	// Opened without following a link: the host made the FIFO, but the
	// tool can write to the directory it is in (outside bwrap).
	rfd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(rfd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		unix.Close(rfd)
		return nil, &os.PathError{Op: "open", Path: p, Err: errors.New("not the FIFO the host made")}
	}
	wfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(rfd), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(rfd)
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	sr := &statusReader{r: os.NewFile(uintptr(rfd), p), w: os.NewFile(uintptr(wfd), p), done: make(chan struct{})}
	go sr.loop(ctx, sec)
	return sr, nil
}

// stop ends the reading once the tool ended: what is left in the pipe is
// read for a short while, then both ends are closed.
func (sr *statusReader) stop() (reports, skipped, dropped int) {
	sr.w.Close()
	// A process the tool left behind may hold the write end: the reader
	// gives up after statusDrain.
	_ = sr.r.SetReadDeadline(time.Now().Add(statusDrain))
	<-sr.done
	sr.r.Close()
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return sr.reports, sr.skipped, sr.dropped
}

func (sr *statusReader) loop(ctx context.Context, sec *secrets) {
	defer close(sr.done)
	buf := make([]byte, 32<<10)
	var line []byte
	long := false // the line being read is too long and is skipped
	for {
		n, err := sr.r.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			part := chunk
			if i >= 0 {
				part = chunk[:i]
			}
			if !long && len(line)+len(part) <= maxStatusLine {
				line = append(line, part...)
			} else {
				long, line = true, line[:0]
			}
			if i < 0 {
				break
			}
			if long {
				sr.count(&sr.skipped)
			} else {
				sr.line(ctx, line, sec)
			}
			line, long = line[:0], false
			chunk = chunk[i+1:]
		}
		if err != nil {
			// EOF (every writer gone), the drain deadline, or a closed
			// file. A last line without its newline counts.
			if len(line) > 0 && !long {
				sr.line(ctx, line, sec)
			}
			return
		}
	}
}

func (sr *statusReader) count(n *int) {
	sr.mu.Lock()
	*n++
	sr.mu.Unlock()
}

// line handles one line of the pipe.
func (sr *statusReader) line(ctx context.Context, line []byte, sec *secrets) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var msg struct {
		Status *string `json:"status"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Status == nil {
		sr.count(&sr.skipped)
		return
	}
	sr.mu.Lock()
	if sr.reports >= maxStatusReports {
		sr.dropped++
		sr.mu.Unlock()
		return
	}
	sr.reports++
	sr.mu.Unlock()
	text := sec.text(strings.ToValidUTF8(*msg.Status, "\uFFFD"))
	text = textcut.Prefix(text, maxStatusMessage)
	toolset.ReportProgress(ctx, toolset.Progress{Message: text, Fraction: -1})
}
