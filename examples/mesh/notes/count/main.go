// Command count is the packaged tool of the mesh example: it counts the
// words and lines of a text, saying what it does as it goes (progress
// that reaches the caller across the broker).
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg/pkgtool"
)

type countIn struct {
	Text string `json:"text" jsonschema:"description=The text to count"`
}

func main() {
	words := toolset.NewTool("words", "Count the words and lines of a text.",
		func(ctx context.Context, in countIn) (string, error) {
			toolset.ReportProgress(ctx, toolset.Progress{Message: "splitting lines", Fraction: 0.25})
			lines := strings.Split(strings.TrimRight(in.Text, "\n"), "\n")
			toolset.ReportProgress(ctx, toolset.Progress{Message: "counting words", Fraction: 0.75})
			n := len(strings.Fields(in.Text))
			return fmt.Sprintf("%d words on %d %s", n, len(lines), plural(len(lines), "line")), nil
		})
	pkgtool.Main(words)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
