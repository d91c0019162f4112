package platform

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gotoolset/toolset/platform/agentfile"
)

// everySecret is a policy for which every value of every toolset is
// secret, as for toolsets whose tools are not known yet.
func everySecret(f *agentfile.File) *secretPolicy {
	p := &secretPolicy{cache: map[string]secretKeySet{}, sealed: map[string]bool{}}
	for _, name := range f.Packages() {
		p.cache[name] = secretKeySet{keys: map[string]bool{}, known: false}
	}
	return p
}

// FuzzRedactAgent feeds redactAgent the agent files Parse accepts: it
// either refuses one with a bounded message or returns a file that
// parses, holds the placeholder at every place a value was, and keeps
// each value apart; it never panics. Seeds: testdata/redact.
func FuzzRedactAgent(f *testing.F) {
	files, _ := filepath.Glob("testdata/redact/*.yaml")
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := agentfile.Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		start := time.Now()
		out, found, err := redactAgent(data, file, everySecret(file))
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("redactAgent took %v", d)
		}
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Fatalf("a long message: %d bytes", len(err.Error()))
			}
			return
		}
		again, err := agentfile.Parse(out, "fuzz.yaml")
		if err != nil {
			t.Fatalf("the redacted file does not parse: %v\n%s", err, out)
		}
		n := 0
		configValues(file, func(_ *agentfile.Entry, a secretAddr, _ any) {
			n++
			if _, ok := found[a.String()]; !ok {
				t.Errorf("%s not kept apart", a)
			}
		})
		configValues(again, func(_ *agentfile.Entry, a secretAddr, v any) {
			n--
			if !isRedacted(v) {
				t.Errorf("%s holds %v after redaction", a, v)
			}
		})
		if n != 0 {
			t.Errorf("the redacted file has other values than the file: %d", n)
		}
	})
}
