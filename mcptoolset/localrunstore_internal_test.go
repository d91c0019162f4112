package mcptoolset

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolsettest"
)

// The default run store keeps the contract of a RunStore.
func TestLocalRunStore(t *testing.T) {
	toolsettest.TestRunStore(t, func(*testing.T) toolset.RunStore { return newLocalRunStore(1 << 20) })
}

// It keeps at most its bound of runs, the most recently saved, and drops
// the expired ones.
func TestLocalRunStoreIsBounded(t *testing.T) {
	ctx := context.Background()
	s := newLocalRunStore(3)
	versions := map[string]int64{}
	for i := range 10 {
		id := fmt.Sprint("run-", i)
		v, err := s.Save(ctx, id, []byte("{}"), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		versions[id] = v
	}
	// run-7 saved again: the most recent.
	if _, err := s.Save(ctx, "run-7", []byte("{}"), versions["run-7"], 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Save(ctx, "run-10", []byte("{}"), 0, 0); err != nil {
		t.Fatal(err)
	}
	if n := s.len(); n != 3 {
		t.Fatalf("%d runs kept, want 3", n)
	}
	for i, want := range []bool{false, false, false, false, false, false, false, true, false, true, true} {
		data, _, err := s.Load(ctx, fmt.Sprint("run-", i))
		if err != nil || (data != nil) != want {
			t.Errorf("run-%d: %q, %v; kept: %v", i, data, err, want)
		}
	}

	s = newLocalRunStore(10)
	if _, err := s.Save(ctx, "short", []byte("{}"), 0, time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if _, err := s.Save(ctx, "next", []byte("{}"), 0, time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := s.len(); n != 1 {
		t.Errorf("%d runs kept, want the one that has not expired", n)
	}
}
