// Command package builds a toolset package from the weather/ directory (a
// manifest and a Go tool), uploads it to a store in a temporary directory,
// attaches it to an agent beside a local toolset, and calls its tool the
// way a model would.
//
//	go run ./examples/package
package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

func main() {
	ctx := context.Background()

	section("1. Package weather/ (the Go tool is compiled for this machine)")
	var zip bytes.Buffer
	if _, err := toolpkg.Pack(ctx, sourceDir(), &zip, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("package: %d bytes\n", zip.Len())

	section("2. Upload it to a store; discovery runs <executable> --schema")
	dir, err := os.MkdirTemp("", "toolpkg-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := toolpkg.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	info, err := store.Upload(ctx, "weather", bytes.NewReader(zip.Bytes()), int64(zip.Len()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("status: %s, sandbox: %s, tools: %d\n", info.Status, store.Sandbox(), len(info.Tools))
	if info.Status != toolpkg.StatusReady {
		log.Fatalf("discovery failed: %v", info.Errors)
	}

	section("3. An agent with the package and a local toolset")
	// The agent's configuration of the package: the secret never shows in
	// errors or logs.
	weather := store.Toolset("weather", map[string]any{"units": "metric", "api_key": "sk-example"})
	local := toolset.NewFunction(toolset.NewTool("clock", "Tell the time.",
		func(context.Context, struct{}) (string, error) { return "12:00", nil }))
	tools, err := toolset.BuildTools(ctx, "forecaster", weather, local)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tools:", strings.Join(tools.Names(), ", "))

	section("4. The model calls weather__forecast")
	call(ctx, tools, "weather__forecast", `{"city": "Paris", "days": 2}`)

	section("5. A tool error goes back to the model")
	call(ctx, tools, "weather__forecast", `{"city": "Atlantis"}`)

	section("6. So do bad arguments, checked before the tool runs")
	call(ctx, tools, "weather__forecast", `{"city": "Paris", "days": 30}`)
}

func call(ctx context.Context, tools *toolset.ToolList, name, args string) {
	fmt.Printf("call %s %s\n", name, args)
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: []byte(args)})
	if err != nil {
		msg, forModel := toolset.ErrorText(err)
		if !forModel {
			log.Fatalf("the run stops: %v", err)
		}
		fmt.Printf("error sent back to the model: %s\n", msg)
		return
	}
	text, err := toolset.ResultText(res)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("result: %s\n", text)
}

// sourceDir finds weather/ whether the example runs from the repository's
// root or from its own folder.
func sourceDir() string {
	candidates := []string{filepath.Join("examples", "package", "weather"), "weather"}
	if _, file, _, ok := runtime.Caller(0); ok {
		candidates = append(candidates, filepath.Join(filepath.Dir(file), "weather"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(filepath.Join(c, "manifest.yaml")); err == nil {
			return c
		}
	}
	log.Fatalf("cannot find the weather/ package source (looked in %s)", strings.Join(candidates, ", "))
	return ""
}

func section(title string) {
	fmt.Printf("\n%s\n%s\n", title, strings.Repeat("-", len(title)))
}
