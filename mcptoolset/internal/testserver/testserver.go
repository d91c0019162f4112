// Package testserver is an MCP server over stdio for the tests of
// mcptoolset, which run their test binary again as it (see [Main]): with
// -sdk it serves fixture.SDKServer, written with the SDK
// alone; otherwise it serves fixture.Toolset through mcptoolset.NewServer.
// With -hang-list it never answers tools/list, as a hostile or broken
// server may do. With -orphan FILE it first starts a long-lived child that
// keeps its stderr open, and writes the child's PID to FILE, as a server
// run through a launcher (npx, uvx) may leave one behind. With
// -exit-at-start CODE it writes a line to stderr and exits with CODE before
// reading anything, as a server missing its configuration does; with
// -crash-on METHOD it does so on its first request of that method
// (tools/call, tools/list) instead, with the code of -crash-code.
package testserver

import (
	"context"
	"flag"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strconv"

	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Main runs the server with the flags of the command line, and returns
// once it is done; it exits the process itself where a flag says so.
func Main() {
	sdk := flag.Bool("sdk", false, "serve the SDK-native server")
	name := flag.String("name", "files", "server name")
	hangList := flag.Bool("hang-list", false, "never answer tools/list")
	orphan := flag.String("orphan", "", "start a child that keeps stderr open and write its PID to this file")
	exitAtStart := flag.Int("exit-at-start", -1, "write a line to stderr and exit with this code at once")
	crashOn := flag.String("crash-on", "", "write a line to stderr and exit with -crash-code on the first request of this method")
	crashCode := flag.Int("crash-code", 70, "the exit code of -crash-on")
	noise := flag.Int("noise", 0, "with -exit-at-start, first write this many bytes of terminal escapes and invalid UTF-8")
	flag.Parse()
	if *exitAtStart >= 0 {
		junk := []byte("\x1b[2J\xff\x00")
		for n := *noise; n > 0; n -= len(junk) {
			os.Stderr.Write(junk[:min(n, len(junk))])
		}
		os.Stderr.WriteString("testserver: fatal: no API key in $FILES_TOKEN\n")
		os.Exit(*exitAtStart)
	}
	if *orphan != "" {
		child := exec.Command("sleep", "60")
		child.Stderr = os.Stderr
		if err := child.Start(); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*orphan, []byte(strconv.Itoa(child.Process.Pid)), 0o600); err != nil {
			log.Fatal(err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch {
	case *crashOn != "":
		s := fixture.SDKServer(*name)
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == *crashOn {
					os.Stderr.WriteString("testserver: panic: out of file handles\n")
					os.Exit(*crashCode)
				}
				return next(ctx, method, req)
			}
		})
		err = s.Run(ctx, &mcp.StdioTransport{})
	case *hangList:
		s := fixture.SDKServer(*name)
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" {
					select {} // ignores even cancellation
				}
				return next(ctx, method, req)
			}
		})
		// The stuck handler would keep Run from returning: exit when the
		// client closes stdin instead.
		err = s.Run(ctx, &mcp.IOTransport{Reader: exitAtEOF{os.Stdin}, Writer: os.Stdout})
	case *sdk:
		err = fixture.SDKServer(*name).Run(ctx, &mcp.StdioTransport{})
	default:
		err = mcptoolset.NewServer(fixture.Toolset(), mcptoolset.WithImplementation(&mcp.Implementation{Name: *name, Version: "v1"})).ServeStdio(ctx)
	}
	if err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}

// exitAtEOF ends the process when its reader reaches the end.
type exitAtEOF struct{ io.ReadCloser }

func (r exitAtEOF) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err == io.EOF {
		os.Exit(0)
	}
	return n, err
}
