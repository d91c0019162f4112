// Command faulttool is the packaged tool the mesh's fault tests run: a
// call that is not idempotent (it appends a line to a file) and a call that
// only takes time.
package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg/pkgtool"
)

type appendIn struct {
	Path string `json:"path"`
	Line string `json:"line"`
	MS   int    `json:"ms"`
}

type workIn struct {
	MS int `json:"ms"`
}

func wait(ctx context.Context, ms int) error {
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return nil
	case <-ctx.Done():
		return errors.New("interrupted")
	}
}

func main() {
	appendTool := toolset.NewTool("append", "Append a line to a file, then wait ms milliseconds",
		func(ctx context.Context, in appendIn) (string, error) {
			f, err := os.OpenFile(in.Path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return "", err
			}
			_, err = f.WriteString(in.Line + "\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return "", err
			}
			toolset.ReportProgress(ctx, toolset.Progress{Message: "appended", Fraction: 0.5})
			if err := wait(ctx, in.MS); err != nil {
				return "", err
			}
			return "appended " + in.Line, nil
		})
	work := toolset.NewTool("work", "Work for ms milliseconds", func(ctx context.Context, in workIn) (string, error) {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "working", Fraction: -1})
		if err := wait(ctx, in.MS); err != nil {
			return "", err
		}
		return "worked", nil
	})
	pkgtool.Main(appendTool, work)
}
