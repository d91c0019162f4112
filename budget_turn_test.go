package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAll reads the result name back with read_result, range by range,
// from offset at, until it has n bytes.
func readAll(t *testing.T, list *toolset.ToolList, ctx context.Context, name string, at, n int) string {
	t.Helper()
	var rest strings.Builder
	for rest.Len() < n {
		args, _ := json.Marshal(map[string]any{"name": name, "offset": at + rest.Len()})
		part, err := list.Execute(ctx, toolset.ToolCall{Name: "read_result", Args: args})
		require.NoError(t, err)
		s := part.(string)
		if i := strings.Index(s, "\n[... "); i >= 0 {
			s = s[:i]
		}
		require.NotEmpty(t, s)
		rest.WriteString(s)
	}
	return rest.String()[:n]
}

// A turn's results share the run's turn budget: the first ones reach the
// model whole, a later one is cut to what is left, and past the budget
// each gets the least a budget gives; the next turn begins afresh. What
// was cut is kept whole in the archive.
func TestTurnResultBudget(t *testing.T) {
	archive := toolset.NewResultArchive(0)
	texts := map[string]string{"a": bigText(3000), "b": bigText(3000), "c": bigText(3000)}
	tools := toolset.NewFunction(toolset.NewTool("dump", "Dumps.", func(_ context.Context, in struct {
		Which string `json:"which"`
	}) (string, error) {
		return texts[in.Which], nil
	}), archive.ReadTool())
	run := testRun(t, "turn-budget", toolset.WithTurnResultBudget(toolset.ResultBudget{MaxBytes: 5000, Archive: archive}))
	for turnNo := range 2 {
		turn := run.Turn(context.Background())
		list, err := toolset.BuildTools(turn, "a", tools)
		require.NoError(t, err)
		var got []string
		for _, w := range []string{"a", "b", "c"} {
			res, err := list.Execute(turn, toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{"which":"` + w + `"}`)})
			require.NoError(t, err)
			got = append(got, res.(string))
		}
		assert.Equal(t, texts["a"], got[0], "turn %d: the first result fits", turnNo)
		assert.LessOrEqual(t, len(got[1]), 2000, "cut to what is left")
		assert.Greater(t, len(got[1]), 1500)
		assert.LessOrEqual(t, len(got[2]), 256, "past the budget: the least a budget gives")
		for i, w := range []string{"b", "c"} {
			m := markerRE.FindStringSubmatch(got[i+1])
			require.NotNil(t, m, got[i+1])
			off, _ := strconv.Atoi(m[4])
			left, _ := strconv.Atoi(m[1])
			assert.Equal(t, texts[w][off:off+left], readAll(t, list, turn, m[3], off, left), "the archive holds %s whole", w)
		}
	}
}

// Calls of one turn that run at once share its budget: together they
// send no more than the budget and the least each cut result gets.
func TestTurnResultBudgetConcurrent(t *testing.T) {
	text := bigText(1000)
	tool := toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil })
	run := testRun(t, "turn-budget-par", toolset.WithTurnResultBudget(toolset.ResultBudget{MaxBytes: 4000}))
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", tool)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total, whole := 0, 0
	for i := range 16 {
		wg.Go(func() {
			res, err := list.Execute(turn, toolset.ToolCall{ID: strconv.Itoa(i), Name: "dump", Args: json.RawMessage(`{}`)})
			assert.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			total += len(res.(string))
			if res.(string) == text {
				whole++
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, total, 4000+16*256)
	assert.GreaterOrEqual(t, whole, 3, "the budget holds three whole results, and one cut")
	assert.LessOrEqual(t, whole, 4)
}

// A stored archive keeps cut results where a run resumed in another
// process reads them back; another run reads none of them.
func TestStoredResultArchiveAcrossAResume(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	runs := toolset.NewMemoryRunStore()
	text := bigText(40_000)
	process := func() (*toolset.ResultArchive, *toolset.Function) {
		archive := toolset.NewStoredResultArchive(&toolset.DirResultStore{Dir: dir})
		return archive, toolset.NewFunction(toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil },
			toolset.WithResultBudget(toolset.ResultBudget{MaxBytes: 1000, Archive: archive})), archive.ReadTool())
	}

	_, tools := process()
	run, err := toolset.ResumeRun(ctx, runs, "stored")
	require.NoError(t, err)
	turn := run.Turn(ctx)
	list, err := toolset.BuildTools(turn, "a", tools)
	require.NoError(t, err)
	res, err := list.Execute(turn, toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	m := markerRE.FindStringSubmatch(res.(string))
	require.NotNil(t, m, res)
	require.NoError(t, run.Suspend(ctx))

	// Another process: a new archive over the same directory.
	_, tools = process()
	run, err = toolset.ResumeRun(ctx, runs, "stored")
	require.NoError(t, err)
	defer run.End()
	turn = run.Turn(ctx)
	list, err = toolset.BuildTools(turn, "a", tools)
	require.NoError(t, err)
	off, _ := strconv.Atoi(m[4])
	left, _ := strconv.Atoi(m[1])
	assert.Equal(t, text[off:off+left], readAll(t, list, turn, m[3], off, left))

	other := testRun(t, "stored-other")
	oturn := other.Turn(ctx)
	olist, err := toolset.BuildTools(oturn, "a", tools)
	require.NoError(t, err)
	_, err = olist.Execute(oturn, toolset.ToolCall{Name: "read_result", Args: json.RawMessage(`{"name":"` + m[3] + `"}`)})
	msg, forModel := toolset.ErrorText(err)
	assert.True(t, forModel)
	assert.Contains(t, msg, "no result named")
}

// brokenResultStore fails, or panics, or says more than it was asked.
type brokenResultStore struct {
	toolset.DirResultStore
	save, read string // "fail", "panic", "lie"
}

func (s *brokenResultStore) Save(ctx context.Context, run, name string, text []byte) error {
	switch s.save {
	case "fail":
		return errors.New("disk full")
	case "panic":
		panic("store bug")
	}
	return s.DirResultStore.Save(ctx, run, name, text)
}

func (s *brokenResultStore) Read(ctx context.Context, run, name string, off, n int64) ([]byte, int64, error) {
	switch s.read {
	case "panic":
		panic("store bug")
	case "lie":
		return make([]byte, n+1), n + 1, nil
	}
	return s.DirResultStore.Read(ctx, run, name, off, n)
}

// The read tool refuses what a hostile model or store gives it: names it
// never gave, paths, negative numbers, offsets past the end, huge ranges
// (bounded); a store that fails or panics on Save leaves the marker
// naming nothing, and one that panics or says too much on Read fails the
// call, not the process.
func TestResultArchiveHostile(t *testing.T) {
	text := bigText(50_000)
	store := &brokenResultStore{DirResultStore: toolset.DirResultStore{Dir: t.TempDir()}}
	archive := toolset.NewStoredResultArchive(store)
	tools := toolset.NewFunction(toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil },
		toolset.WithResultBudget(toolset.ResultBudget{MaxBytes: 1000, Archive: archive})), archive.ReadTool())
	run := testRun(t, "hostile-archive")
	turn := run.Turn(context.Background())
	list, err := toolset.BuildTools(turn, "a", tools)
	require.NoError(t, err)
	res, err := list.Execute(turn, toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	name := markerRE.FindStringSubmatch(res.(string))[3]
	require.NotEmpty(t, name)
	read := func(args string) (string, error) {
		res, err := list.Execute(turn, toolset.ToolCall{Name: "read_result", Args: json.RawMessage(args)})
		s, _ := res.(string)
		return s, err
	}
	for _, bad := range []string{
		`{"name":"result-000000000000000000000000"}`,
		`{"name":"../../etc/passwd"}`,
		`{"name":""}`,
		`{"name":"` + strings.Repeat("x", 5000) + `"}`,
		`{"name":"` + name + `","offset":-1}`,
		`{"name":"` + name + `","length":-5}`,
		`{"name":"` + name + `","offset":50001}`,
		`{"name":"` + name + `","offset":1e300}`,
		`{"name":"` + name + `","length":99999999}`,
		`{"name":"` + name + `","offset":9223372036854775807}`,
	} {
		out, err := read(bad)
		msg, forModel := toolset.ErrorText(err)
		require.Error(t, err, "%.80s: %q", bad, out)
		assert.True(t, forModel, "%.80s: %v", bad, err)
		assert.Less(t, len(msg), 1000, "the model is not sent a long echo")
	}
	out, err := read(`{"name":"` + name + `","length":16384}`)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, text[:toolset.MaxReadBytes]))
	assert.Less(t, len(out), toolset.MaxReadBytes+100, "a read is bounded")
	out, err = read(`{"name":"` + name + `","offset":50000}`)
	require.NoError(t, err)
	assert.Empty(t, out, "at the end: nothing more")

	for _, mode := range []string{"panic", "lie"} {
		store.read = mode
		_, err := read(`{"name":"` + name + `"}`)
		_, forModel := toolset.ErrorText(err)
		require.Error(t, err, mode)
		assert.False(t, forModel, "%s: a broken store stops the run: %v", mode, err)
	}
	store.read = ""
	for _, mode := range []string{"fail", "panic"} {
		store.save = mode
		res, err := list.Execute(turn, toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{}`)})
		require.NoError(t, err, mode)
		m := markerRE.FindStringSubmatch(res.(string))
		require.NotNil(t, m)
		assert.Empty(t, m[3], "%s: not kept, so not named", mode)
	}
	store.save = ""

	// A store's own checks, for callers other than the archive.
	ds := &toolset.DirResultStore{Dir: t.TempDir()}
	assert.Error(t, ds.Save(context.Background(), "r", "../x", []byte("x")))
	_, _, err = ds.Read(context.Background(), "r", "result-000000000000000000000000", -1, 10)
	assert.ErrorIs(t, err, toolset.ErrResultNotFound)

}

// A turn budget of nothing, or less, still gives each result the least a
// budget gives; results of content parts and errors pass whole and are
// not counted.
func TestTurnResultBudgetHostile(t *testing.T) {
	text := bigText(5000)
	tools := toolset.NewFunction(
		toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil }),
		toolset.NewTool("parts", "Parts.", func(context.Context, struct{}) (*toolset.Content, error) {
			return &toolset.Content{Parts: []toolset.Part{{Text: text}}}, nil
		}),
		toolset.NewTool("fail", "Fails.", func(context.Context, struct{}) (string, error) {
			return "", toolset.NewModelError(text)
		}))
	for _, max := range []int{-1 << 62, -1, 0, 1} {
		run := testRun(t, "turn-budget-hostile", toolset.WithTurnResultBudget(toolset.ResultBudget{MaxBytes: max}))
		turn := run.Turn(context.Background())
		list, err := toolset.BuildTools(turn, "a", tools)
		require.NoError(t, err)
		res, err := list.Execute(turn, toolset.ToolCall{Name: "parts", Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		got, _ := toolset.ResultText(res)
		assert.Equal(t, text, got, "content parts are left whole")
		_, err = list.Execute(turn, toolset.ToolCall{Name: "fail", Args: json.RawMessage(`{}`)})
		msg, forModel := toolset.ErrorText(err)
		assert.True(t, forModel)
		assert.Equal(t, text, msg, "an error is not cut by the turn's budget")
		res, err = list.Execute(turn, toolset.ToolCall{Name: "dump", Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		assert.LessOrEqual(t, len(res.(string)), 256, "max %d", max)
		assert.NotNil(t, markerRE.FindStringSubmatch(res.(string)))
		run.End()
	}
}
