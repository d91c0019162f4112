// Command release builds the repository's Go modules as a module proxy
// would serve them, checks that each module is tidy on its own, and
// releases them: one commit and one tag per module, at one version.
//
// Every module of the repository requires its siblings at the one version
// of the last release; the workspace (go.work) builds them from the
// working tree. Its subcommands:
//
//	release version   [-repo DIR]
//	    prints the version at which the modules require each other.
//	release proxy     [-repo DIR] [-version V] -o DIR
//	    writes every module, from the working tree at version V (by
//	    default the required one), into a file proxy: the layout of
//	    GOPROXY=file://DIR (<module>/@v/list, .info, .mod, .zip).
//	release tidycheck [-repo DIR]
//	    runs go mod tidy on a copy of each module outside the workspace,
//	    its siblings from such a proxy, and fails if go.mod or the go.sum
//	    lines of the modules outside the repository would change.
//	release tidy      [-repo DIR]
//	    the same, and writes the tidied go.mod and go.sum back, keeping
//	    the go.sum lines of the siblings as they were.
//	release tag       [-repo DIR] -version vX.Y.Z [-dry-run] [-proxy DIR]
//	    releases: compares each module's API with the previous release
//	    (golang.org/x/exp/cmd/apidiff), requires the siblings at the new
//	    version, tidies each module in dependency order against a file
//	    proxy of the new version (which writes the siblings' go.sum lines
//	    with the hashes of the release's zips), commits, checks that each
//	    module's zip made from the commit is the one hashed, and tags the
//	    root vX.Y.Z and each sub-module DIR/vX.Y.Z. With -dry-run it stops
//	    before the commit, leaving the changes in the working tree.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// errUsage is returned for a command line that names no subcommand.
var errUsage = errors.New("usage: release version|proxy|tidycheck|tidy|tag [flags]; see go doc")

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	repo := fs.String("repo", ".", "the repository's root directory")
	version := fs.String("version", "", "the version")
	out := fs.String("o", "", "the file proxy's directory (proxy)")
	proxy := fs.String("proxy", "", "keep the release's file proxy in this directory (tag)")
	dryRun := fs.Bool("dry-run", false, "stop before the commit and the tags (tag)")
	apidiff := fs.String("apidiff", "", "the apidiff command (tag; by default go run golang.org/x/exp/cmd/apidiff@"+apidiffVersion+")")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	mods, err := findModules(*repo)
	if err != nil {
		return err
	}
	switch args[0] {
	case "version":
		v, err := requiredVersion(*repo, mods)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, v)
		return nil
	case "proxy":
		if *out == "" {
			return errors.New("proxy: -o DIR is required")
		}
		v, err := versionOr(*repo, mods, *version)
		if err != nil {
			return err
		}
		return buildProxy(*out, *repo, mods, v)
	case "tidycheck", "tidy":
		v, err := versionOr(*repo, mods, *version)
		if err != nil {
			return err
		}
		tmp, err := os.MkdirTemp("", "release-proxy")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if err := buildProxy(tmp, *repo, mods, v); err != nil {
			return err
		}
		if args[0] == "tidy" {
			return tidyInPlace(stdout, *repo, mods, tmp)
		}
		return tidyCheck(stdout, *repo, mods, tmp)
	case "tag":
		return release(stdout, *repo, mods, releaseOptions{
			Version: *version, DryRun: *dryRun, Proxy: *proxy, Apidiff: *apidiff,
		})
	}
	return errUsage
}

// versionOr returns v, or the modules' required version if v is empty.
func versionOr(repo string, mods []*repoModule, v string) (string, error) {
	if v != "" {
		return v, nil
	}
	return requiredVersion(repo, mods)
}
