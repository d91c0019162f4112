package toolpkg

import (
	"bytes"
	"context"
	"testing"

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
