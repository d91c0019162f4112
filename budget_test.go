package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigText is n bytes of numbered lines, so that any range of it is told
// apart from another.
func bigText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %06d\n", i)
	}
	return b.String()[:n]
}

var markerRE = regexp.MustCompile(`\[\.\.\. (\d+) of (\d+) bytes left out(?:; read them with read_result, name "([^"]+)", offset (\d+))? \.\.\.\]`)

// A result over the budget reaches the model as its head and tail with a
// marker; the archive keeps the whole text for the run, which reads the
// rest back with read_result, range by range, and no other run can.
func TestResultBudgetCutsAndTheArchiveGivesTheRestBack(t *testing.T) {
	text := bigText(50_000)
	archive := toolset.NewResultArchive(0)
	big := toolset.NewTool("dump", "Dumps.", func(_ context.Context, in struct {
		Small bool `json:"small,omitempty"`
	}) (string, error) {
		if in.Small {
			return "short", nil
		}
		return text, nil
	}, toolset.WithResultBudget(toolset.ResultBudget{MaxBytes: 2000, Archive: archive}))
	run := testRun(t, "budget")
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", big, archive.ReadTool())
	require.NoError(t, err)

	res, err := list.Execute(turn, toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{"small":true}`)})
	require.NoError(t, err)
	assert.Equal(t, "short", res)

	res, err = list.Execute(turn, toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	cut := res.(string)
	assert.LessOrEqual(t, len(cut), 2000)
	m := markerRE.FindStringSubmatch(cut)
	require.NotNil(t, m, cut)
	left, _ := strconv.Atoi(m[1])
	assert.Equal(t, "50000", m[2])
	name, offset := m[3], m[4]
	require.NotEmpty(t, name)
	head, tail, _ := strings.Cut(cut, m[0])
	head, tail = strings.TrimSuffix(head, "\n"), strings.TrimPrefix(tail, "\n")
	assert.True(t, strings.HasPrefix(text, head) && strings.HasSuffix(text, tail))
	assert.Equal(t, len(text), len(head)+left+len(tail))
	assert.Equal(t, strconv.Itoa(len(head)), offset)

	// The rest, read back range by range, is what was left out.
	var rest strings.Builder
	for at := len(head); rest.Len() < left; {
		args, _ := json.Marshal(map[string]any{"name": name, "offset": at})
		part, err := list.Execute(turn, toolset.ToolCall{Name: "read_result", Args: args})
		require.NoError(t, err)
		s := part.(string)
		if i := strings.Index(s, "\n[... "); i >= 0 {
			s = s[:i]
		}
		require.NotEmpty(t, s)
		assert.LessOrEqual(t, len(s), toolset.MaxReadBytes)
		rest.WriteString(s)
		at += len(s)
	}
	assert.Equal(t, text[len(head):len(head)+left], rest.String()[:left])

	// Another run cannot read it; a bad offset is the model's to fix.
	other := testRun(t, "other")
	oturn := other.Turn(context.Background())
	olist, err := toolset.BuildTools(oturn, "a", archive.ReadTool())
	require.NoError(t, err)
	args, _ := json.Marshal(map[string]any{"name": name})
	_, err = olist.Execute(oturn, toolset.ToolCall{Name: "read_result", Args: args})
	msg, forModel := toolset.ErrorText(err)
	require.True(t, forModel)
	assert.Contains(t, msg, "no result named")
	for _, bad := range []string{`{"name":"` + name + `","offset":999999}`, `{"name":"` + name + `","offset":-1}`} {
		_, err = list.Execute(turn, toolset.ToolCall{Name: "read_result", Args: json.RawMessage(bad)})
		_, forModel = toolset.ErrorText(err)
		assert.True(t, forModel, "%s: %v", bad, err)
	}
}

// Without an archive the rest is dropped and the marker names nothing; a
// result of content parts is left whole; the archive keeps its bound,
// dropping the oldest results.
func TestResultBudgetWithoutArchiveAndBounds(t *testing.T) {
	text := bigText(10_000)
	plain := toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil },
		toolset.WithResultBudget(toolset.ResultBudget{MaxBytes: 10}))
	res, err := plain.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	m := markerRE.FindStringSubmatch(res.(string))
	require.NotNil(t, m)
	assert.Empty(t, m[3], "no archive, no name")
	assert.LessOrEqual(t, len(res.(string)), 256, "a budget gives at least 256 bytes")

	content := toolset.NewTool("img", "Image.", func(context.Context, struct{}) (*toolset.Content, error) {
		return &toolset.Content{Parts: []toolset.Part{{Text: text}}}, nil
	}, toolset.WithResultBudget(toolset.ResultBudget{MaxBytes: 300}))
	res, err = content.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	got, err := toolset.ResultText(res)
	require.NoError(t, err)
	assert.Equal(t, text, got, "content parts are left whole")

	archive := toolset.NewResultArchive(25_000)
	kept := toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil },
		toolset.WithResultBudget(toolset.ResultBudget{MaxBytes: 1000, Archive: archive}))
	run := testRun(t, "bound")
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", kept, archive.ReadTool())
	require.NoError(t, err)
	var names []string
	for range 3 {
		res, err := list.Execute(turn, toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		names = append(names, markerRE.FindStringSubmatch(res.(string))[3])
	}
	read := func(name string) error {
		args, _ := json.Marshal(map[string]any{"name": name})
		_, err := list.Execute(turn, toolset.ToolCall{Name: "read_result", Args: args})
		return err
	}
	require.Error(t, read(names[0]), "the oldest was dropped to keep the bound")
	require.NoError(t, read(names[1]))
	require.NoError(t, read(names[2]))
}
