package toolpkg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gotoolset/toolset"
)

// ArtifactResults is a [toolset.ResultStore] over an [ArtifactStore]:
// each cut result a [toolset.ResultArchive] keeps is an artifact named
// as the archive names it, in a scope of its run (the scope's SessionID
// is the run's ID, its AppName "toolset.results"), so that a run resumed
// elsewhere reads back what an earlier process cut, and no other run
// reads it:
//
//	archive := toolset.NewStoredResultArchive(toolpkg.ArtifactResults{Store: store})
type ArtifactResults struct {
	// Store keeps the artifacts.
	Store ArtifactStore
}

// resultsApp is the AppName of the scopes of [ArtifactResults].
const resultsApp = "toolset.results"

func resultScope(run string) ArtifactScope {
	return ArtifactScope{AppName: resultsApp, SessionID: run}
}

// Save implements [toolset.ResultStore].
func (a ArtifactResults) Save(ctx context.Context, run, name string, text []byte) error {
	if a.Store == nil {
		return errors.New("toolpkg: ArtifactResults: no store")
	}
	_, err := a.Store.Save(ctx, resultScope(run), ArtifactRef{Name: name, MIMEType: "text/plain", Description: "a tool result cut short"}, bytes.NewReader(text))
	return err
}

// Read implements [toolset.ResultStore].
func (a ArtifactResults) Read(ctx context.Context, run, name string, off, n int64) ([]byte, int64, error) {
	if a.Store == nil {
		return nil, 0, errors.New("toolpkg: ArtifactResults: no store")
	}
	if CheckArtifactName(name) != nil || off < 0 || n <= 0 {
		return nil, 0, fmt.Errorf("toolpkg: result %q: %w", name, toolset.ErrResultNotFound)
	}
	ref, rc, err := a.Store.Load(ctx, resultScope(run), name, 0)
	if errors.Is(err, ErrArtifactNotFound) {
		return nil, 0, fmt.Errorf("toolpkg: result %q: %w", name, toolset.ErrResultNotFound)
	}
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	if off >= ref.Size {
		return nil, ref.Size, nil
	}
	if _, err := io.CopyN(io.Discard, rc, off); err != nil {
		return nil, 0, fmt.Errorf("toolpkg: reading result %q: %w", name, err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, min(n, ref.Size-off)))
	if err != nil {
		return nil, 0, fmt.Errorf("toolpkg: reading result %q: %w", name, err)
	}
	return data, ref.Size, nil
}
