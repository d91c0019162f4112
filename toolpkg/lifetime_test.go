package toolpkg

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/proctest"
)

func TestSetsidChildDiesWithTheCall(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := hostileToolsetTimeout(t, s, "h", "", nil, 2) // "hang" ends at the timeout
		for _, then := range []string{"result", "fail", "crash", "hang", "cancel"} {
			t.Run(then, func(t *testing.T) {
				marker := uniqueMarker()
				t.Cleanup(func() {
					// Whatever survived a failing run is ended here.
					for _, pid := range proctest.WithArg(marker) {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if then == "cancel" {
					// Real time, not synctest: the tool is a real process, polled in /proc.
					go func() {
						deadline := time.Now().Add(3 * time.Second)
						for len(proctest.WithArg(marker)) == 0 && time.Now().Before(deadline) {
							time.Sleep(10 * time.Millisecond)
						}
						cancel()
					}()
				}
				end := then
				if then == "cancel" {
					end = "hang"
				}
				args := fmt.Sprintf(`{"marker":%q,"then":%q}`, marker, end)
				_, err := callTool(ctx, t, ts, "h__escape", args)
				switch then {
				case "result":
					require.NoError(t, err)
				case "hang":
					var te *toolset.TimeoutError
					require.ErrorAs(t, err, &te)
				case "cancel":
					require.ErrorIs(t, err, context.Canceled)
				default:
					require.Error(t, err)
				}
				assert.Eventually(t, func() bool { return len(proctest.WithArg(marker)) == 0 }, time.Second, 10*time.Millisecond,
					"the child in a session of its own (sleep %s) ended with the call", marker)
			})
		}
	})
}

func TestMaxProcessesHolds(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		if mode == ModeDirect {
			continue
		}
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			ts := hostileToolset(t, s, "h", "    resource_limits:\n      max_processes: 20\n", nil)
			res, err := callTool(context.Background(), t, ts, "h__forkmany", `{"n":60}`)
			require.NoError(t, err)
			data := resultData(t, res)
			assert.Less(t, data["started"], float64(20), "at most 20 processes, root host or not: %v", data)
			assert.Contains(t, data["error"], "resource temporarily unavailable")

			// The limit counts the processes of one call: two calls that
			// each stay under it both succeed.
			tools, err := toolset.BuildTools(context.Background(), "a", ts)
			require.NoError(t, err)
			var wg sync.WaitGroup
			started := make([]any, 2)
			for i := range started {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "h__forkmany", Args: []byte(`{"n":12}`)})
					if assert.NoError(t, err) {
						started[i] = resultData(t, res)["started"]
					}
				}()
			}
			wg.Wait()
			assert.Equal(t, []any{float64(12), float64(12)}, started)
		})
	}
}

func TestWritesAreBoundedInBwrap(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	s := openStore(t, Options{Sandbox: ModeBwrap})
	ts := hostileToolset(t, s, "h", "    resource_limits:\n      max_write_mb: 8\n", nil)
	for _, dir := range []string{"/toolset/work", "/toolset/work/output", "/tmp"} {
		res, err := callTool(context.Background(), t, ts, "h__fill", fmt.Sprintf(`{"dir":%q,"chunk_mb":1,"max_mb":100}`, dir))
		require.NoError(t, err)
		data := resultData(t, res)
		assert.LessOrEqual(t, data["written"], float64(8<<20), "%s: %v", dir, data)
		assert.Contains(t, data["error"], "no space left on device", dir)
	}
}
