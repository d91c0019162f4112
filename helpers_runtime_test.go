package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/require"
)

type lookupArgs struct {
	ID   int    `json:"id"`
	Note string `json:"note,omitempty"`
}

// counted returns a tool whose handler counts its runs.
func counted(name string, runs *atomic.Int64, opts ...toolset.ToolOption) toolset.Tool {
	return toolset.NewTool(name, "Look a record up.", func(_ context.Context, in lookupArgs) (string, error) {
		n := runs.Add(1)
		if in.ID < 0 {
			return "", errors.New("negative id")
		}
		return fmt.Sprintf("record %d (run %d)", in.ID, n), nil
	}, opts...)
}

// clones builds a turn where the same tool is offered under three names:
// itself, a prefixed copy and a renamed copy.
func clones(t *testing.T, ctx context.Context, tool toolset.Tool) *toolset.ToolList {
	t.Helper()
	f := toolset.NewFunction(tool)
	tools, err := toolset.BuildTools(ctx, "a", f, f.Prefixed("p"), f.Renamed(map[string]string{tool.Name: "renamed"}))
	require.NoError(t, err)
	return tools
}

func call(t *testing.T, ctx context.Context, tools *toolset.ToolList, name, args string) (any, error) {
	t.Helper()
	return tools.Execute(ctx, toolset.ToolCall{Name: name, Args: json.RawMessage(args)})
}
