package toolpkg

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
)

// BenchmarkCall measures one call of a packaged Go tool, process start to
// result, in each sandbox mode that works here.
func BenchmarkCall(b *testing.B) {
	for _, mode := range available(b) {
		b.Run(string(mode), func(b *testing.B) {
			s := openStore(b, Options{Sandbox: mode})
			ts := readyToolset(b, s, "demo", nil)
			ctx := context.Background()
			tools, err := toolset.BuildTools(ctx, "bench", ts)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := tools.Execute(ctx, toolset.ToolCall{Name: "demo__echo", Args: []byte(`{"text":"x"}`)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUpload measures validating, extracting and discovering the test
// package (a 1.5 MB Go binary, compressed).
func BenchmarkUpload(b *testing.B) {
	zipData := makeZip(b, manifestFile(demoManifest("")), zfile{name: "tooldemo", data: toolBinary(b), mode: 0o755})
	b.Logf("package: %d bytes", len(zipData))
	s := openStore(b, Options{Sandbox: ModeDirect})
	b.ResetTimer()
	for b.Loop() {
		info, err := s.Upload(context.Background(), "demo", bytes.NewReader(zipData), int64(len(zipData)))
		if err != nil || info.Status != StatusReady {
			b.Fatal(err, info.Errors)
		}
	}
}

// BenchmarkValidateZip measures the structural check alone.
func BenchmarkValidateZip(b *testing.B) {
	zipData := makeZip(b, manifestFile(demoManifest("")), zfile{name: "tooldemo", data: toolBinary(b), mode: 0o755})
	for b.Loop() {
		if _, err := ValidateZip(bytes.NewReader(zipData), int64(len(zipData)), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetTools measures a turn's GetTools of a ready toolset.
func BenchmarkGetTools(b *testing.B) {
	s := openStore(b, Options{Sandbox: ModeDirect})
	ts := readyToolset(b, s, "demo", map[string]any{"greeting": "hi"})
	ctx := context.Background()
	for b.Loop() {
		if _, err := ts.GetTools(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetToolsWhileWriting measures a turn's GetTools of one
// toolset while another goroutine keeps saving the stored configuration
// of another toolset of the store (each save writes and syncs
// config.json), and without it. Besides ns/op it reports the p99, the
// p99.9 and the worst latency of a GetTools, and how many saves landed
// a second.
func BenchmarkGetToolsWhileWriting(b *testing.B) {
	for _, writing := range []bool{false, true} {
		name := "idle"
		if writing {
			name = "config-writer"
		}
		b.Run(name, func(b *testing.B) {
			s := openStore(b, Options{Sandbox: ModeDirect})
			ts := readyToolset(b, s, "demo", map[string]any{"greeting": "hi"})
			readyToolset(b, s, "other", nil)
			ctx := context.Background()
			if _, err := ts.GetTools(ctx); err != nil {
				b.Fatal(err)
			}
			// Latencies of the first calls: allocated before the timer
			// starts.
			lat := make([]time.Duration, 0, 1<<20)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var writes atomic.Int64
			if writing {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := s.SetConfig("other", map[string]any{"hil": i%2 == 0}); err != nil {
							b.Error(err)
							return
						}
						writes.Add(1)
					}
				})
				// The writer is under way before the timer starts.
				for writes.Load() == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			start := writes.Load()
			for b.Loop() {
				t0 := time.Now()
				if _, err := ts.GetTools(ctx); err != nil {
					b.Fatal(err)
				}
				if d := time.Since(t0); len(lat) < cap(lat) {
					lat = append(lat, d)
				}
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
			b.ReportMetric(float64(lat[len(lat)*999/1000].Nanoseconds()), "p99.9-ns")
			b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max-ns")
			b.ReportMetric(float64(writes.Load()-start)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}

// TestGetToolsOfAStandingListAllocatesOnlyItsCopy: a turn whose tools
// still stand (same serving version, same stored configuration) reads
// the store under one lock without copying the record, and allocates
// only the list it returns.
func TestGetToolsOfAStandingListAllocatesOnlyItsCopy(t *testing.T) {
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := readyToolset(t, s, "demo", map[string]any{"greeting": "hi"})
	ctx := context.Background()
	if _, err := ts.GetTools(ctx); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ts.GetTools(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("GetTools of a standing list allocates %.0f times; want 1 (the copy it returns)", allocs)
	}
}
