// Command meshtool is the packaged tool the mesh tests run.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg/pkgtool"
)

type echoIn struct {
	Text string `json:"text"`
}

type slowIn struct {
	MS int `json:"ms"`
}

type noIn struct{}

type readIn struct {
	File string   `json:"file"`
	More []string `json:"more,omitempty"`
}

func main() {
	echo := toolset.NewTool("echo", "Echo the text", func(ctx context.Context, in echoIn) (string, error) {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "echoing", Fraction: 0.5})
		return "echo: " + in.Text, nil
	})
	slow := toolset.NewTool("slow", "Wait ms milliseconds", func(ctx context.Context, in slowIn) (string, error) {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "waiting", Fraction: -1})
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
			return "done", nil
		case <-ctx.Done():
			return "", errors.New("interrupted")
		}
	})
	fail := toolset.NewTool("fail", "Fail", func(context.Context, noIn) (string, error) {
		return "", errors.New("boom")
	})
	auth := toolset.NewTool("auth", "Needs credentials", func(context.Context, noIn) (*pkgtool.Result, error) {
		return &pkgtool.Result{Status: "error", Message: "log in first", ErrorCode: "AUTH_REQUIRED"}, nil
	})
	keyed := toolset.NewTool("keyed", "Needs a key", func(ctx context.Context, _ noIn) (string, error) {
		k, _ := pkgtool.Config(ctx)["api_key"].(string)
		return "key " + k, nil
	})
	// readfile reports each input artifact it was given: its key, name,
	// version, MIME type and content.
	readfile := toolset.NewTool("readfile", "Read the artifacts named", func(ctx context.Context, _ readIn) (string, error) {
		inv := pkgtool.FromContext(ctx)
		var keys []string
		for k := range inv.ArtifactMetadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			m := inv.ArtifactMetadata[k]
			data, err := os.ReadFile(inv.ArtifactPaths[k])
			if err != nil {
				return "", err
			}
			if len(data) > 64 {
				data = []byte(fmt.Sprintf("%d bytes", len(data)))
			}
			out = append(out, fmt.Sprintf("%s=%s v%d %s: %s", k, m.Filename, m.Version, m.MIMEType, data))
		}
		return strings.Join(out, "\n"), nil
	})
	pkgtool.MainWith(&pkgtool.Options{
		ConfigSchema: map[string][]pkgtool.ConfigField{
			"keyed": {{Key: "api_key", Type: "string", Required: true}},
		},
		ArtifactParams: map[string]map[string]pkgtool.ArtifactParam{
			"readfile": {"file": {Required: true}, "more": {List: true}},
		},
	}, echo, slow, fail, auth, keyed, readfile)
}
