// Command gopkg is a packaged tool executable written with pkgtool, for
// the tests of toolpkg.
package main

import (
	"github.com/gotoolset/toolset/toolpkg/internal/demotools"
	"github.com/gotoolset/toolset/toolpkg/pkgtool"
)

func main() { pkgtool.MainWith(demotools.Options, demotools.Tools...) }
