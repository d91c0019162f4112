// Package demotools holds tools made with the toolset library that the
// tests of toolpkg run both in-process and packaged with pkgtool.
package demotools

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg/pkgtool"
)

// GreetIn is the arguments of greet.
type GreetIn struct {
	Name string `json:"name" jsonschema:"Who to greet"`
}

// Greet greets with its configured greeting, times times, shouting when
// loud is set.
var Greet = toolset.NewTool("greet", "Greet someone with the configured greeting.",
	func(ctx context.Context, in GreetIn) (map[string]any, error) {
		cfg := pkgtool.Config(ctx)
		greeting, _ := cfg["greeting"].(string)
		if greeting == "" {
			greeting = "hello"
		}
		times := 1
		if n, ok := cfg["times"].(float64); ok {
			times = int(n)
		}
		text := strings.TrimSpace(strings.Repeat(greeting+" ", times)) + " " + in.Name
		if loud, _ := cfg["loud"].(bool); loud {
			text = strings.ToUpper(text)
		}
		return map[string]any{"text": text, "config": cfg}, nil
	})

// SecureIn is the arguments of secure.
type SecureIn struct{}

// Secure needs an API key (a required secret) and tells only its length.
var Secure = toolset.NewTool("secure", "Use the API key.",
	func(ctx context.Context, _ SecureIn) (string, error) {
		key, _ := pkgtool.Config(ctx)["api_key"].(string)
		return fmt.Sprintf("key of %d bytes", len(key)), nil
	})

// WhoamiIn is the arguments of whoami.
type WhoamiIn struct {
	Leak bool `json:"leak,omitempty" jsonschema:"Print the credentials to stderr and fail"`
}

// Whoami tells which credentials reached it (header names and digests,
// never the values), or, asked to leak, prints them and exits 1.
var Whoami = toolset.NewTool("whoami", "Tell which credentials the tool received.",
	func(ctx context.Context, in WhoamiIn) (map[string]any, error) {
		inv := pkgtool.FromContext(ctx)
		if inv == nil {
			return nil, errors.New("not a packaged call")
		}
		if in.Leak {
			fmt.Fprintf(os.Stderr, "token=%s headers=%v\n", inv.OAuthToken, inv.AuthHeaders)
			os.Exit(1)
		}
		names := make([]string, 0, len(inv.AuthHeaders))
		digests := map[string]string{}
		for k, v := range inv.AuthHeaders {
			names = append(names, k)
			digests[k] = digest(v)
		}
		sort.Strings(names)
		return map[string]any{"headers": names, "header_digests": digests, "token_digest": digest(inv.OAuthToken)}, nil
	})

func digest(s string) string {
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// ReportIn is the arguments of report.
type ReportIn struct {
	Rows    int    `json:"rows" jsonschema:"How many rows"`
	Hostile string `json:"hostile,omitempty" jsonschema:"symlink, fifo, dotdot, big or huge: misbehave"`
}

// Report writes report.csv to the output directory and returns a small
// inline data object and a large one the runtime stores as an artifact.
var Report = toolset.NewTool("report", "Write a CSV report.",
	func(ctx context.Context, in ReportIn) (*pkgtool.Result, error) {
		inv := pkgtool.FromContext(ctx)
		if inv == nil {
			return nil, errors.New("not a packaged call")
		}
		var b strings.Builder
		b.WriteString("n,square\n")
		for i := range in.Rows {
			fmt.Fprintf(&b, "%d,%d\n", i, i*i)
		}
		if err := os.WriteFile(filepath.Join(inv.OutputDir, "report.csv"), []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
		res := &pkgtool.Result{Message: fmt.Sprintf("%d rows", in.Rows), Data: map[string]any{"rows": in.Rows},
			DataObjects: []pkgtool.DataObject{
				{Name: "summary.txt", Content: []byte("rows: " + fmt.Sprint(in.Rows)), Disposition: "inline"},
				{Name: "squares.txt", Content: []byte(strings.Repeat("square\n", 1000)), Disposition: "artifact", Description: "many squares"},
			}}
		switch in.Hostile {
		case "symlink":
			if err := os.Symlink("/etc/passwd", filepath.Join(inv.OutputDir, "passwd")); err != nil {
				return nil, err
			}
		case "fifo":
			if err := mkfifo(filepath.Join(inv.OutputDir, "pipe")); err != nil {
				return nil, err
			}
		case "dotdot":
			res.DataObjects = append(res.DataObjects, pkgtool.DataObject{Name: "../../escape.txt", Content: []byte("x"), Disposition: "artifact"})
		case "big":
			res.DataObjects = append(res.DataObjects, pkgtool.DataObject{Name: "inline-big.txt", Content: []byte(strings.Repeat("y", 100000)), Disposition: "inline"})
		case "huge":
			res.DataObjects = append(res.DataObjects, pkgtool.DataObject{Name: "huge.bin", Content: make([]byte, 3<<20), Disposition: "artifact"})
		}
		return res, nil
	})

// CountIn is the arguments of count.
type CountIn struct {
	Doc string `json:"doc" jsonschema:"Name of the artifact to count"`
}

// Count counts the lines and bytes of an input artifact.
var Count = toolset.NewTool("count", "Count the lines of an artifact.",
	func(ctx context.Context, in CountIn) (map[string]any, error) {
		inv := pkgtool.FromContext(ctx)
		if inv == nil {
			return nil, errors.New("not a packaged call")
		}
		p := inv.ArtifactPaths["doc"]
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		lines, n := 0, 0
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines++
			n += len(sc.Bytes()) + 1
		}
		return map[string]any{"lines": lines, "bytes": n, "meta": inv.ArtifactMetadata["doc"], "in_input": strings.Contains(p, "/input/")}, nil
	})

// WaitIn is the arguments of wait.
type WaitIn struct {
	Status string `json:"status,omitempty" jsonschema:"Progress to report first"`
}

// Wait reports progress, then waits for its context to end, and says it
// was canceled: a tool that cleans up on SIGTERM.
var Wait = toolset.NewTool("wait", "Report progress, then wait until canceled.",
	func(ctx context.Context, in WaitIn) (string, error) {
		if in.Status != "" {
			pkgtool.Status(ctx, in.Status)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("canceled, cleaned up: %w", ctx.Err())
		case <-time.After(time.Minute):
			return "not canceled", nil
		}
	})

// Tools are every demo tool.
var Tools = []toolset.Tool{Greet, Secure, Whoami, Report, Count, Wait}

// Options declares the demo tools' configuration and artifact parameters.
var Options = &pkgtool.Options{
	ConfigSchema: map[string][]pkgtool.ConfigField{
		"greet": {
			{Key: "greeting", Type: "string", Default: "hello"},
			{Key: "times", Type: "integer", Default: 1},
			{Key: "loud", Type: "boolean"},
		},
		"secure": {{Key: "api_key", Type: "string", Required: true, Secret: true}},
	},
	ArtifactParams: map[string]map[string]pkgtool.ArtifactParam{"count": {"doc": {Required: true}}},
	TimeoutSeconds: map[string]int{"wait": 20},
}
