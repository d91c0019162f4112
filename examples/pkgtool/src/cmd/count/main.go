// Command count is the packaged form of the wordcount tool: pkgtool.Main
// answers "count --schema" and runs "count runner_args.json" as the
// package protocol asks.
package main

import (
	"github.com/gotoolset/toolset/examples/pkgtool/wordcount"
	"github.com/gotoolset/toolset/toolpkg/pkgtool"
)

func main() {
	pkgtool.Main(wordcount.New())
}
