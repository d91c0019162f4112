package schema

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/invopop/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
			// Real time, not synctest: the guard is against a real file
			// read or HTTP fetch hanging, which fake time would not see.
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

// The allocation-free walk that clears reflected schemas never clears one
// that the member-by-member check refuses, wherever the reference hides.
func TestPlainSchemaNeverClearsAnOutsideReference(t *testing.T) {
	outside := func() *jsonschema.Schema { return &jsonschema.Schema{Ref: "file:///etc/passwd"} }
	props := func(s *jsonschema.Schema) *jsonschema.Schema {
		p := jsonschema.NewProperties()
		p.Set("a", s)
		return &jsonschema.Schema{Type: "object", Properties: p}
	}
	hidden := map[string]*jsonschema.Schema{
		"property":     props(outside()),
		"items":        props(&jsonschema.Schema{Type: "array", Items: outside()}),
		"definitions":  {Definitions: jsonschema.Definitions{"x": outside()}},
		"anyOf":        {AnyOf: []*jsonschema.Schema{{Type: "string"}, outside()}},
		"not":          {Not: outside()},
		"dynamicRef":   props(&jsonschema.Schema{DynamicRef: "http://127.0.0.1/x"}),
		"$schema":      {Version: "file:///etc/passwd"},
		"extras":       {Extras: map[string]any{"x-vendor": map[string]any{"$ref": "file:///etc/passwd"}}},
		"recursiveRef": {Extras: map[string]any{"$recursiveRef": "file:///etc/passwd"}},
		"enum data":    {Enum: []any{map[string]any{"$ref": "file:///etc/passwd"}}},
		"default data": props(&jsonschema.Schema{Default: map[string]any{"$ref": "file:///etc/passwd"}}),
		"patternProps": {PatternProperties: map[string]*jsonschema.Schema{"^a": outside()}},
	}
	for name, s := range hidden {
		assert.False(t, plainSchema(s, 0), name)
		assert.Error(t, CheckRefs(s), name)
	}
	type plain struct {
		City string   `json:"city" jsonschema:"enum=Paris,enum=Rome"`
		Days int      `json:"days,omitempty" jsonschema:"minimum=1,maximum=14,default=3"`
		Tags []string `json:"tags,omitempty"`
	}
	s, err := ReflectParameters(reflect.TypeFor[plain]())
	require.NoError(t, err)
	assert.True(t, plainSchema(s, 0), "a reflected schema is cleared without encoding it")
	assert.NoError(t, CheckRefs(s))
}
