// Command pkgtool runs one tool two ways and shows that both give the same
// result: in this process, and packaged, from a zip that the toolset
// command built (the tool then runs as a subprocess, in the store's
// sandbox). From the repository's root:
//
//	go run ./cmd/toolset package examples/pkgtool/src -o /tmp/text.zip --dist /tmp/text-dist
//	go run ./examples/pkgtool /tmp/text.zip
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/examples/pkgtool/wordcount"
	"github.com/gotoolset/toolset/toolpkg"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: pkgtool PACKAGE.zip")
	}
	if err := run(context.Background(), os.Args[1], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

const args = `{"text": "the quick brown fox jumps over the lazy dog"}`

func run(ctx context.Context, zip string, w io.Writer) error {
	// In process: the tool is a value of this program.
	local, err := toolset.BuildTools(ctx, "agent", toolset.NewFunction(wordcount.New()))
	if err != nil {
		return err
	}
	res, err := local.Execute(ctx, toolset.ToolCall{Name: "count_words", Args: json.RawMessage(args)})
	if err != nil {
		return err
	}
	inProcess, err := json.Marshal(res) // a wordcount.Count
	if err != nil {
		return err
	}

	// Packaged: a store checks the zip, runs "count --schema" to discover
	// the tool, and runs each call as a new process.
	dir, err := os.MkdirTemp("", "pkgtool-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := toolpkg.Open(dir, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	info, err := store.UploadFile(ctx, "text", zip)
	if err != nil {
		return err
	}
	if info.Status != toolpkg.StatusReady {
		return fmt.Errorf("discovery failed: %v", info.Errors)
	}
	remote, err := toolset.BuildTools(ctx, "agent", store.Toolset("text", nil))
	if err != nil {
		return err
	}
	// The package's tools are named <toolset>__<tool>.
	res, err = remote.Execute(ctx, toolset.ToolCall{Name: "text__count_words", Args: json.RawMessage(args)})
	if err != nil {
		return err
	}
	out, ok := res.(*toolpkg.Result)
	if !ok {
		return fmt.Errorf("unexpected result %T", res)
	}
	var packaged bytes.Buffer // the tool's data, as result.json carried it
	if err := json.Compact(&packaged, out.Data); err != nil {
		return err
	}

	fmt.Fprintf(w, "in process: %s\n", inProcess)
	fmt.Fprintf(w, "packaged (sandbox %s): %s\n", store.Sandbox(), packaged.Bytes())
	if !bytes.Equal(inProcess, packaged.Bytes()) {
		return fmt.Errorf("the two results differ")
	}
	return nil
}
