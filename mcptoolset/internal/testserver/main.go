// Command testserver is an MCP server over stdio for the tests of
// mcptoolset: with -sdk it serves fixture.SDKServer, written with the SDK
// alone; otherwise it serves fixture.Toolset through mcptoolset.NewServer.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"

	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	sdk := flag.Bool("sdk", false, "serve the SDK-native server")
	name := flag.String("name", "files", "server name")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	if *sdk {
		err = fixture.SDKServer(*name).Run(ctx, &mcp.StdioTransport{})
	} else {
		err = mcptoolset.NewServer(fixture.Toolset(), mcptoolset.WithImplementation(&mcp.Implementation{Name: *name, Version: "v1"})).ServeStdio(ctx)
	}
	if err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}
