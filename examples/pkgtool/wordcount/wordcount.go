// Package wordcount holds a tool written once with the toolset library:
// the example's program runs it in its own process, and src/cmd/count
// makes it a packaged tool's executable.
package wordcount

import (
	"context"
	"errors"
	"strings"

	"github.com/gotoolset/toolset"
)

// New returns the tool, the same value for both ways of running it.
func New() toolset.Tool {
	return toolset.NewTool("count_words", "Count the words of a text and find the longest.", CountWords)
}

// Args are the tool's arguments; the JSON Schema the model sees is
// reflected from them, in process and in the package alike.
type Args struct {
	Text string `json:"text" jsonschema:"the text to count the words of"`
}

// Count is the tool's result.
type Count struct {
	Words   int    `json:"words"`
	Longest string `json:"longest"`
}

// MaxText bounds the text a call may send.
const MaxText = 1 << 20

// CountWords is the tool's handler: it counts the words of a text and
// finds the longest.
func CountWords(_ context.Context, in Args) (Count, error) {
	if len(in.Text) > MaxText {
		return Count{}, errors.New("text too long: at most 1 MiB")
	}
	var c Count
	for _, w := range strings.Fields(in.Text) {
		c.Words++
		if len(w) > len(c.Longest) {
			c.Longest = w
		}
	}
	return c, nil
}
