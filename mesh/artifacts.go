package mesh

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gotoolset/toolset/toolpkg"
)

// ArtifactStoreOptions configure [NewArtifactStore]. A nil
// *ArtifactStoreOptions, and a zero field, take the defaults.
type ArtifactStoreOptions struct {
	// Namespace is the mesh's namespace (default [DefaultNamespace]); the buckets
	// are named after it.
	Namespace string
	// MaxArtifactBytes bounds one artifact, saved or loaded (default
	// toolpkg.DefaultMaxArtifactBytes, 32 MB).
	MaxArtifactBytes int64
	// TTL is how long an artifact is kept (default 0: until deleted).
	TTL time.Duration
	// Replicas is the buckets' replication in a cluster (default 1).
	Replicas int
	// Memory keeps the buckets in the server's memory rather than on
	// its disk.
	Memory bool
}

// ArtifactStore is a [toolpkg.ArtifactStore] on the broker, shared by the
// agents and the runtimes of a namespace: the content of each version is
// an object of a JetStream Object Store bucket, named by a digest of its
// scope, its name and its version, and versions are counted in a
// JetStream key-value bucket with compare-and-set updates, so that
// processes saving the same artifact at once get distinct versions.
//
// Artifacts are scoped as a toolpkg store scopes them (app_name,
// user_id, session_id of the run), names are checked with
// [toolpkg.CheckArtifactName], and each artifact is at most
// MaxArtifactBytes, counted while it is saved and checked again before it
// is loaded. An object another client of the bucket linked elsewhere is
// never followed. Versions count from 1 and are never reused: a save
// that fails leaves its version unused. Safe for concurrent use.
type ArtifactStore struct {
	obs      jetstream.ObjectStore
	versions jetstream.KeyValue
	maxBytes int64
	bucket   string
}

// Bounds of what an artifact's metadata may hold.
const (
	maxArtifactDescription = 4096
	maxArtifactMIMEType    = 255
	maxVersionRecord       = 256
	maxVersionRetries      = 64
)

// NewArtifactStore opens, creating them if needed, the artifact buckets
// of the namespace on the connection's JetStream.
func NewArtifactStore(ctx context.Context, nc *nats.Conn, o *ArtifactStoreOptions) (*ArtifactStore, error) {
	if nc == nil {
		return nil, errors.New("mesh: artifact store: nil connection")
	}
	var opts ArtifactStoreOptions
	if o != nil {
		opts = *o
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if err := CheckNamespace(opts.Namespace); err != nil {
		return nil, err
	}
	if opts.MaxArtifactBytes <= 0 {
		opts.MaxArtifactBytes = toolpkg.DefaultMaxArtifactBytes
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("mesh: artifact store: %w", err)
	}
	storage := jetstream.FileStorage
	if opts.Memory {
		storage = jetstream.MemoryStorage
	}
	base := strings.ReplaceAll(opts.Namespace, ".", "_") + "_artifacts"
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      base,
		Description: "toolset artifacts of namespace " + opts.Namespace,
		TTL:         opts.TTL,
		Storage:     storage,
		Replicas:    opts.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("mesh: artifact store: bucket %s: %w", base, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:       base + "_versions",
		Description:  "toolset artifact versions of namespace " + opts.Namespace,
		History:      1,
		MaxValueSize: maxVersionRecord,
		TTL:          opts.TTL,
		Storage:      storage,
		Replicas:     opts.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("mesh: artifact store: bucket %s_versions: %w", base, err)
	}
	return &ArtifactStore{obs: obs, versions: kv, maxBytes: opts.MaxArtifactBytes, bucket: base}, nil
}

// MaxArtifactBytes returns the bound of one artifact.
func (a *ArtifactStore) MaxArtifactBytes() int64 { return a.maxBytes }

// artifactKey is the digest naming an artifact of a scope, both in the
// version bucket (a key) and in the object bucket (a prefix).
func artifactKey(scope toolpkg.ArtifactScope, name string) string {
	h := sha256.New()
	for _, s := range []string{scope.AppName, scope.UserID, scope.SessionID, name} {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{0})
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil)[:20])
}

func objectName(key string, version int) string { return key + "/" + strconv.Itoa(version) }

// versionRecord is the value of an artifact's key in the version bucket.
type versionRecord struct {
	// Next is the last version handed to a save.
	Next int `json:"next"`
	// Latest is the newest version saved whole.
	Latest int `json:"latest"`
}

func (a *ArtifactStore) readRecord(ctx context.Context, key string) (versionRecord, uint64, error) {
	e, err := a.versions.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return versionRecord{}, 0, nil
	}
	if err != nil {
		return versionRecord{}, 0, err
	}
	var rec versionRecord
	if len(e.Value()) > maxVersionRecord || json.Unmarshal(e.Value(), &rec) != nil || rec.Next < 0 || rec.Latest < 0 || rec.Latest > rec.Next {
		return versionRecord{}, 0, errors.New("its version record is malformed")
	}
	return rec, e.Revision(), nil
}

// updateRecord applies fn to the artifact's version record with
// compare-and-set, retrying when another process changed it meanwhile.
func (a *ArtifactStore) updateRecord(ctx context.Context, key string, fn func(*versionRecord) bool) (versionRecord, error) {
	for range maxVersionRetries {
		rec, rev, err := a.readRecord(ctx, key)
		if err != nil {
			return versionRecord{}, err
		}
		if !fn(&rec) {
			return rec, nil
		}
		data, _ := json.Marshal(rec)
		if rev == 0 {
			_, err = a.versions.Create(ctx, key, data)
		} else {
			_, err = a.versions.Update(ctx, key, data, rev)
		}
		if err == nil {
			return rec, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongSequence(err) {
			return versionRecord{}, err
		}
		if err := ctx.Err(); err != nil {
			return versionRecord{}, err
		}
	}
	return versionRecord{}, errors.New("too many concurrent saves of the same artifact")
}

func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// boundedReader fails once more than max bytes were read.
type boundedReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		return 0, fmt.Errorf("it is more than %d bytes, the bound of an artifact", b.max)
	}
	return n, err
}

// Save implements [toolpkg.ArtifactStore].
func (a *ArtifactStore) Save(ctx context.Context, scope toolpkg.ArtifactScope, ref toolpkg.ArtifactRef, r io.Reader) (toolpkg.ArtifactRef, error) {
	if err := toolpkg.CheckArtifactName(ref.Name); err != nil {
		return toolpkg.ArtifactRef{}, err
	}
	if err := ctx.Err(); err != nil {
		return toolpkg.ArtifactRef{}, err
	}
	fail := func(err error) (toolpkg.ArtifactRef, error) {
		return toolpkg.ArtifactRef{}, fmt.Errorf("mesh: saving artifact %q: %w", ref.Name, err)
	}
	mime := ref.MIMEType
	if mime == "" || len(mime) > maxArtifactMIMEType {
		mime = "application/octet-stream"
	}
	desc := cut(ref.Description, maxArtifactDescription)
	key := artifactKey(scope, ref.Name)
	rec, err := a.updateRecord(ctx, key, func(r *versionRecord) bool { r.Next++; return true })
	if err != nil {
		return fail(err)
	}
	v := rec.Next
	br := &boundedReader{r: r, max: a.maxBytes}
	info, err := a.obs.Put(ctx, jetstream.ObjectMeta{
		Name:        objectName(key, v),
		Description: desc,
		Metadata:    map[string]string{"filename": ref.Name, "mime_type": mime, "version": strconv.Itoa(v)},
	}, br)
	if err != nil {
		return fail(err)
	}
	if _, err := a.updateRecord(ctx, key, func(r *versionRecord) bool {
		if r.Latest >= v {
			return false
		}
		r.Latest = v
		if r.Next < v {
			r.Next = v
		}
		return true
	}); err != nil {
		_ = a.obs.Delete(context.WithoutCancel(ctx), objectName(key, v))
		return fail(err)
	}
	return toolpkg.ArtifactRef{Name: ref.Name, Version: v, Size: int64(info.Size), MIMEType: mime, Description: desc}, nil
}

// Load implements [toolpkg.ArtifactStore]. The reader must be closed;
// it reads within ctx.
func (a *ArtifactStore) Load(ctx context.Context, scope toolpkg.ArtifactScope, name string, version int) (toolpkg.ArtifactRef, io.ReadCloser, error) {
	if err := toolpkg.CheckArtifactName(name); err != nil {
		return toolpkg.ArtifactRef{}, nil, err
	}
	if err := ctx.Err(); err != nil {
		return toolpkg.ArtifactRef{}, nil, err
	}
	notFound := func() error {
		if version > 0 {
			return fmt.Errorf("%w: %q version %d", toolpkg.ErrArtifactNotFound, name, version)
		}
		return fmt.Errorf("%w: %q", toolpkg.ErrArtifactNotFound, name)
	}
	fail := func(err error) (toolpkg.ArtifactRef, io.ReadCloser, error) {
		return toolpkg.ArtifactRef{}, nil, fmt.Errorf("mesh: loading artifact %q: %w", name, err)
	}
	key := artifactKey(scope, name)
	if version <= 0 {
		rec, _, err := a.readRecord(ctx, key)
		if err != nil {
			return fail(err)
		}
		if rec.Latest == 0 {
			return toolpkg.ArtifactRef{}, nil, notFound()
		}
		version = rec.Latest
	}
	info, err := a.obs.GetInfo(ctx, objectName(key, version))
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return toolpkg.ArtifactRef{}, nil, notFound()
	}
	if err != nil {
		return fail(err)
	}
	if info.Opts != nil && info.Opts.Link != nil {
		return fail(errors.New("it is a link, which is never followed"))
	}
	if info.Size > uint64(a.maxBytes) {
		return fail(fmt.Errorf("version %d is %d bytes, more than the bound of %d", version, info.Size, a.maxBytes))
	}
	res, err := a.obs.Get(ctx, objectName(key, version))
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return toolpkg.ArtifactRef{}, nil, notFound()
	}
	if err != nil {
		return fail(err)
	}
	got, err := res.Info()
	if err != nil || got.NUID != info.NUID {
		res.Close()
		return fail(errors.New("it changed while it was opened"))
	}
	mime := info.Metadata["mime_type"]
	if mime == "" || len(mime) > maxArtifactMIMEType {
		mime = "application/octet-stream"
	}
	ref := toolpkg.ArtifactRef{
		Name: name, Version: version, Size: int64(info.Size), MIMEType: mime,
		Description: cut(info.Description, maxArtifactDescription),
	}
	return ref, &objectReader{res: res, left: int64(info.Size)}, nil
}

// objectReader reads an object, at most the size its metadata gave.
type objectReader struct {
	res  jetstream.ObjectResult
	left int64
}

func (o *objectReader) Read(p []byte) (int, error) {
	if o.left <= 0 {
		// The library checks the digest at the end; one more read
		// reports a mismatch or more bytes than announced.
		var one [1]byte
		n, err := o.res.Read(one[:])
		if n > 0 {
			return 0, errors.New("mesh: artifact is longer than its metadata says")
		}
		return 0, err
	}
	if int64(len(p)) > o.left {
		p = p[:o.left]
	}
	n, err := o.res.Read(p)
	o.left -= int64(n)
	if err == io.EOF && o.left > 0 {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func (o *objectReader) Close() error { return o.res.Close() }
