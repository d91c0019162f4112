package mesh

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gotoolset/toolset/toolpkg"
)

// Bounds of an input artifact's description on the wire.
const (
	maxInputMetadata      = 32
	maxInputMetadataKey   = 128
	maxInputMetadataValue = 4096
	maxInputKey           = 200
)

// inputStore is the runtime's artifact store as its toolpkg.Store sees
// it: the base store (the shared one on the broker, by default), with the
// input artifacts of the call in front, found through the call's context.
// A call's artifact parameters load what its invoke carried inline
// (preloaded_artifacts) and what it referenced (artifact_references),
// under the name and version its arguments give.
type inputStore struct {
	base toolpkg.ArtifactStore
}

type inputsKey struct{}

// callInputs are the input artifacts of one call.
type callInputs struct {
	// resolved says the caller resolved every input: an artifact the
	// invoke does not carry does not exist.
	resolved bool
	byName   map[inputName]*inputEntry
}

// inputName is an artifact as a call's arguments name it: a name and a
// version, 0 for the latest.
type inputName struct {
	name    string
	version int
}

// inputEntry is one input: inline bytes, or a reference to the base store.
type inputEntry struct {
	ref    toolpkg.ArtifactRef // what the tool is told
	data   []byte
	inline bool
	// The referenced artifact in the base store.
	refName    string
	refVersion int
}

func withInputs(ctx context.Context, in *callInputs) context.Context {
	if in == nil {
		return ctx
	}
	return context.WithValue(ctx, inputsKey{}, in)
}

// Save implements toolpkg.ArtifactStore: the base store's.
func (s *inputStore) Save(ctx context.Context, scope toolpkg.ArtifactScope, ref toolpkg.ArtifactRef, r io.Reader) (toolpkg.ArtifactRef, error) {
	return s.base.Save(ctx, scope, ref, r)
}

// Load implements toolpkg.ArtifactStore: the call's inputs first.
func (s *inputStore) Load(ctx context.Context, scope toolpkg.ArtifactScope, name string, version int) (toolpkg.ArtifactRef, io.ReadCloser, error) {
	in, _ := ctx.Value(inputsKey{}).(*callInputs)
	if in == nil {
		return s.base.Load(ctx, scope, name, version)
	}
	e := in.byName[inputName{name, version}]
	if e == nil {
		if in.resolved {
			if version > 0 {
				return toolpkg.ArtifactRef{}, nil, fmt.Errorf("%w: %q version %d", toolpkg.ErrArtifactNotFound, name, version)
			}
			return toolpkg.ArtifactRef{}, nil, fmt.Errorf("%w: %q", toolpkg.ErrArtifactNotFound, name)
		}
		return s.base.Load(ctx, scope, name, version)
	}
	if e.inline {
		return e.ref, io.NopCloser(bytes.NewReader(e.data)), nil
	}
	ref, rc, err := s.base.Load(ctx, scope, e.refName, e.refVersion)
	if err != nil {
		return toolpkg.ArtifactRef{}, nil, err
	}
	ref.Name = name
	if e.ref.Version > 0 {
		ref.Version = e.ref.Version
	}
	return ref, rc, nil
}

// inputError is an input artifact an invoke carries that cannot be used.
type inputError struct{ key, reason string }

func (e *inputError) Error() string {
	return fmt.Sprintf("input artifact %q: %s", cut(e.key, 80), e.reason)
}

// readInputs checks the input artifacts an invoke carries against the
// tool's artifact parameters and its arguments, and returns them by the
// name and version the arguments give; nil when it carries none.
func readInputs(p *InvokeParams, params map[string]toolpkg.ArtifactParam) (*callInputs, error) {
	n := len(p.PreloadedArtifacts) + len(p.ArtifactReferences)
	if n == 0 && !p.ArtifactsResolved {
		return nil, nil
	}
	if n > MaxInputArtifacts {
		return nil, &inputError{key: "*", reason: fmt.Sprintf("the invoke carries %d input artifacts, at most %d", n, MaxInputArtifacts)}
	}
	in := &callInputs{resolved: p.ArtifactsResolved, byName: map[inputName]*inputEntry{}}
	var argv map[string]json.RawMessage
	if n > 0 {
		if err := json.Unmarshal(p.Args, &argv); err != nil {
			return nil, &inputError{key: "*", reason: "the arguments are not a JSON object"}
		}
	}
	total := 0
	for key, pa := range p.PreloadedArtifacts {
		if _, dup := p.ArtifactReferences[key]; dup {
			return nil, &inputError{key: key, reason: "it is both preloaded and referenced"}
		}
		if err := checkInputFile(pa.Filename, pa.Version, pa.MIMEType); err != nil {
			return nil, &inputError{key: key, reason: err.Error()}
		}
		if len(pa.Metadata) > maxInputMetadata {
			return nil, &inputError{key: key, reason: fmt.Sprintf("metadata of %d entries, at most %d", len(pa.Metadata), maxInputMetadata)}
		}
		for k, v := range pa.Metadata {
			if len(k) > maxInputMetadataKey || len(v) > maxInputMetadataValue {
				return nil, &inputError{key: key, reason: "a metadata entry is too long"}
			}
		}
		if len(pa.Content) > base64.StdEncoding.EncodedLen(MaxInlineArtifactLimit) {
			return nil, &inputError{key: key, reason: fmt.Sprintf("content above %d bytes, the bound of an inline artifact; send it by reference", MaxInlineArtifactLimit)}
		}
		if total += base64.StdEncoding.DecodedLen(len(pa.Content)); total > MaxInlineArtifactsTotal {
			return nil, &inputError{key: key, reason: fmt.Sprintf("the inline artifacts add up to more than %d bytes", MaxInlineArtifactsTotal)}
		}
		data, err := base64.StdEncoding.DecodeString(pa.Content)
		if err != nil {
			return nil, &inputError{key: key, reason: "content is not base64: " + cut(err.Error(), 120)}
		}
		mime := pa.MIMEType
		if mime == "" {
			mime = "application/octet-stream"
		}
		e := &inputEntry{inline: true, data: data, ref: toolpkg.ArtifactRef{
			Name: pa.Filename, Version: pa.Version, Size: int64(len(data)), MIMEType: mime,
			Description: cut(pa.Metadata["description"], maxArtifactDescription),
		}}
		if err := in.add(key, pa.Filename, e, argv, params); err != nil {
			return nil, err
		}
	}
	for key, ar := range p.ArtifactReferences {
		if err := checkInputFile(ar.Filename, ar.Version, ""); err != nil {
			return nil, &inputError{key: key, reason: err.Error()}
		}
		if ar.SourceVersion < 0 {
			return nil, &inputError{key: key, reason: "source_version is negative"}
		}
		v := ar.SourceVersion
		if v == 0 {
			v = ar.Version
		}
		e := &inputEntry{refName: ar.Filename, refVersion: ar.Version, ref: toolpkg.ArtifactRef{Name: ar.Filename, Version: v}}
		if err := in.add(key, ar.Filename, e, argv, params); err != nil {
			return nil, err
		}
	}
	return in, nil
}

func checkInputFile(name string, version int, mime string) error {
	if err := toolpkg.CheckArtifactName(name); err != nil {
		return fmt.Errorf("filename: %s", strings.TrimPrefix(err.Error(), "toolpkg: "))
	}
	if version < 0 {
		return fmt.Errorf("version %d is negative", version)
	}
	if len(mime) > maxArtifactMIMEType || !utf8.ValidString(mime) || strings.ContainsAny(mime, "\r\n") {
		return fmt.Errorf("mime_type is not a MIME type of at most %d bytes", maxArtifactMIMEType)
	}
	return nil
}

// add records entry e of key ("param" or "param[i]") under the names the
// arguments give that parameter and that are filename.
func (in *callInputs) add(key, filename string, e *inputEntry, argv map[string]json.RawMessage, params map[string]toolpkg.ArtifactParam) error {
	if len(key) > maxInputKey {
		return &inputError{key: key, reason: "the key is too long"}
	}
	param, index := key, -1
	if i := strings.IndexByte(key, '['); i > 0 && strings.HasSuffix(key, "]") {
		n, err := strconv.Atoi(key[i+1 : len(key)-1])
		if err != nil || n < 0 || n >= MaxInputArtifacts {
			return &inputError{key: key, reason: "the key is not a parameter or parameter[index]"}
		}
		param, index = key[:i], n
	}
	if _, ok := params[param]; !ok {
		return &inputError{key: key, reason: "the tool has no such artifact parameter"}
	}
	var specs []string
	if raw, ok := argv[param]; ok {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			specs = []string{one}
		} else if json.Unmarshal(raw, &specs) != nil {
			specs = nil
		}
	}
	if index >= 0 {
		if index >= len(specs) {
			return &inputError{key: key, reason: "the arguments name no artifact there"}
		}
		specs = specs[index : index+1]
	}
	found := false
	for _, spec := range specs {
		name, version := splitArtifactName(spec)
		if name != filename {
			continue
		}
		found = true
		if _, ok := in.byName[inputName{name, version}]; !ok {
			in.byName[inputName{name, version}] = e
		}
	}
	if !found {
		return &inputError{key: key, reason: fmt.Sprintf("it is %q, which the arguments do not name there", cut(filename, 80))}
	}
	return nil
}
