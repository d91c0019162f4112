package mesh

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gotoolset/toolset/toolpkg"
)

func TestArtifactStoreSaveLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startServer(t)
	a, err := NewArtifactStore(ctx, connect(t, s), &ArtifactStoreOptions{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	scope := toolpkg.ArtifactScope{AppName: "app", UserID: "u1", SessionID: "s1"}
	ref, err := a.Save(ctx, scope, toolpkg.ArtifactRef{Name: "report.txt", MIMEType: "text/plain", Description: "first"}, strings.NewReader("one"))
	if err != nil {
		t.Fatal(err)
	}
	if ref.Version != 1 || ref.Size != 3 || ref.MIMEType != "text/plain" {
		t.Fatalf("saved %+v", ref)
	}
	if ref, err = a.Save(ctx, scope, toolpkg.ArtifactRef{Name: "report.txt"}, strings.NewReader("second")); err != nil || ref.Version != 2 {
		t.Fatalf("second save: %+v, %v", ref, err)
	}
	// A second store on another connection sees the same artifacts.
	b, err := NewArtifactStore(ctx, connect(t, s), &ArtifactStoreOptions{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version int
		want    string
		mime    string
	}{{0, "second", "application/octet-stream"}, {1, "one", "text/plain"}, {2, "second", "application/octet-stream"}} {
		got, rc, err := b.Load(ctx, scope, "report.txt", tc.version)
		if err != nil {
			t.Fatalf("load v%d: %v", tc.version, err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(data) != tc.want || got.MIMEType != tc.mime || got.Name != "report.txt" {
			t.Fatalf("load v%d: %+v %q %v", tc.version, got, data, err)
		}
	}
	// Another scope sees none of them.
	for _, other := range []toolpkg.ArtifactScope{{AppName: "app", UserID: "u2", SessionID: "s1"}, {}, {AppName: "appu1", SessionID: "s1"}} {
		if _, _, err := b.Load(ctx, other, "report.txt", 0); !errors.Is(err, toolpkg.ErrArtifactNotFound) {
			t.Fatalf("scope %+v: %v", other, err)
		}
	}
	if _, _, err := b.Load(ctx, scope, "report.txt", 3); !errors.Is(err, toolpkg.ErrArtifactNotFound) {
		t.Fatalf("missing version: %v", err)
	}
}

func TestArtifactStoreHostile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startServer(t)
	nc := connect(t, s)
	a, err := NewArtifactStore(ctx, nc, &ArtifactStoreOptions{Memory: true, MaxArtifactBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	scope := toolpkg.ArtifactScope{UserID: "u"}
	for _, name := range []string{"", "../etc/passwd", "a/b", ".hidden", "x\x00y", strings.Repeat("a", 300)} {
		if _, err := a.Save(ctx, scope, toolpkg.ArtifactRef{Name: name}, strings.NewReader("x")); err == nil {
			t.Errorf("save %q: no error", name)
		}
		if _, _, err := a.Load(ctx, scope, name, 0); err == nil || errors.Is(err, toolpkg.ErrArtifactNotFound) {
			t.Errorf("load %q: %v", name, err)
		}
	}
	// Too large: refused, nothing stored, and the version is not the
	// latest.
	if _, err := a.Save(ctx, scope, toolpkg.ArtifactRef{Name: "big"}, bytes.NewReader(make([]byte, 1001))); err == nil || !strings.Contains(err.Error(), "bound") {
		t.Fatalf("oversize save: %v", err)
	}
	if _, _, err := a.Load(ctx, scope, "big", 0); !errors.Is(err, toolpkg.ErrArtifactNotFound) {
		t.Fatalf("after oversize save: %v", err)
	}
	if ref, err := a.Save(ctx, scope, toolpkg.ArtifactRef{Name: "big"}, bytes.NewReader(make([]byte, 1000))); err != nil || ref.Version != 2 {
		t.Fatalf("save at the bound: %+v %v", ref, err)
	}
	// A store with a smaller bound refuses to load what another wrote.
	small, err := NewArtifactStore(ctx, nc, &ArtifactStoreOptions{Memory: true, MaxArtifactBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := small.Load(ctx, scope, "big", 0); err == nil || !strings.Contains(err.Error(), "bound") {
		t.Fatalf("load over the bound: %v", err)
	}
	// An object rewritten as a link by another client of the bucket is
	// not followed.
	js, _ := jetstream.New(nc)
	obs, err := js.ObjectStore(ctx, "toolset_artifacts")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "toolset_artifacts_versions")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, artifactKey(scope, "linked"), []byte(`{"next":1,"latest":1}`)); err != nil {
		t.Fatal(err)
	}
	other := toolpkg.ArtifactScope{UserID: "victim"}
	if _, err := a.Save(ctx, other, toolpkg.ArtifactRef{Name: "secret"}, strings.NewReader("theirs")); err != nil {
		t.Fatal(err)
	}
	target, err := obs.GetInfo(ctx, objectName(artifactKey(other, "secret"), 1))
	if err != nil {
		t.Fatal(err)
	}
	name := objectName(artifactKey(scope, "linked"), 1)
	if _, err := obs.AddLink(ctx, name, target); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Load(ctx, scope, "linked", 0); err == nil || !strings.Contains(err.Error(), "link") {
		t.Fatalf("link: %v", err)
	}
	// A malformed version record is an error, not a panic or a guess.
	if _, err := kv.Put(ctx, artifactKey(scope, "rec"), []byte(`{"next":1,"latest":9}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Load(ctx, scope, "rec", 0); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("malformed record: %v", err)
	}
	if _, err := NewArtifactStore(ctx, nc, &ArtifactStoreOptions{Namespace: "a..b"}); err == nil {
		t.Fatal("bad namespace accepted")
	}
}

func TestArtifactStoreConcurrentSaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startServer(t)
	scope := toolpkg.ArtifactScope{SessionID: "s"}
	var wg sync.WaitGroup
	versions := make(chan int, 8)
	for i := range 8 {
		a, err := NewArtifactStore(ctx, connect(t, s), &ArtifactStoreOptions{Memory: true})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			ref, err := a.Save(ctx, scope, toolpkg.ArtifactRef{Name: "shared"}, strings.NewReader(strings.Repeat("x", i)))
			if err != nil {
				t.Error(err)
				return
			}
			versions <- ref.Version
		})
	}
	wg.Wait()
	close(versions)
	seen := map[int]bool{}
	for v := range versions {
		if seen[v] {
			t.Fatalf("version %d given twice", v)
		}
		seen[v] = true
	}
	if len(seen) != 8 {
		t.Fatalf("versions %v", seen)
	}
}
