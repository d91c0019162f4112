package toolset

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// The validator's compiler loads nothing even when the reference check in
// front of it is bypassed: every external reference fails to compile, at
// once, and nothing it points to is read or quoted.
func TestValidatorLoaderRefusesEveryURL(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"const":"TOP-SECRET-7f3a9c"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, ref := range []string{"file://" + secret, "file://" + fifo, "file:///dev/stdin", srv.URL + "/s.json", "other.json"} {
		for _, doc := range []map[string]any{
			{"properties": map[string]any{"a": map[string]any{"$ref": ref}}},
			{"$schema": ref},
		} {
			done := make(chan error, 1)
			go func() {
				_, err := compileDoc(doc)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatalf("%s: compiled", ref)
				}
				if strings.Contains(err.Error(), "TOP-SECRET") {
					t.Fatalf("%s: error quotes the file: %v", ref, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: the compiler opened it", ref)
			}
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("%d requests to the server", hits.Load())
	}
	// The known drafts' meta-schemas are built in to the validator.
	if _, err := compileDoc(map[string]any{"$schema": "http://json-schema.org/draft-07/schema#"}); err != nil {
		t.Fatal(err)
	}
	var _ sjs.URLLoader = refusingLoader{}
}
