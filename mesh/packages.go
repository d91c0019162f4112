package mesh

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gotoolset/toolset/toolpkg"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The object metadata of a published package.
const (
	metaVersion = "toolset-version"
	metaConfig  = "toolset-config"
)

// MaxPackageBytes bounds a published package, toolpkg's default
// Limits.MaxZipBytes.
const MaxPackageBytes = 50 << 20

// Packages are the packages of one namespace in a JetStream Object Store
// bucket: one object per toolset, its current version's zip, with the
// version and the toolset's stored configuration as metadata. The
// platform publishes and removes them; runtimes watch the bucket, so that
// one that starts later, or restarts, sees every current version.
//
// The stored configuration may hold secrets: the bucket is readable by
// whoever the broker lets read it, which should be the platform and the
// runtimes alone.
type Packages struct {
	nc   *nats.Conn
	obs  jetstream.ObjectStore
	subj Subjects
}

// PackagesBucket returns the name of the Object Store bucket of namespace's
// packages: "toolset_packages" for the default namespace,
// "<ns with _ for .>_packages" otherwise.
func PackagesBucket(namespace string) string {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if namespace == DefaultNamespace {
		return "toolset_packages"
	}
	return strings.ReplaceAll(namespace, ".", "_") + "_packages"
}

// OpenPackages opens the packages of namespace, creating their bucket if it
// does not exist.
func OpenPackages(ctx context.Context, nc *nats.Conn, namespace string) (*Packages, error) {
	subj, err := NewSubjects(namespace)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("mesh: jetstream: %w", err)
	}
	bucket := PackagesBucket(subj.Namespace())
	obs, err := js.ObjectStore(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      bucket,
			Description: "toolset packages, one object per toolset: its current version",
			Storage:     jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = js.ObjectStore(ctx, bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("mesh: packages bucket %s: %w", bucket, err)
	}
	return &Packages{nc: nc, obs: obs, subj: subj}, nil
}

// PackageInfo describes the current version of a published toolset.
type PackageInfo struct {
	Name    string
	Version int
	Size    int64
	// Digest is the object store's digest, "SHA-256=<base64url>".
	Digest string
	Config map[string]any
}

// Publish stores version of toolset name (a validated zip, at most
// MaxPackageBytes) with the toolset's stored configuration, replacing the
// version before, and notifies the runtimes. Versions only go up: a version
// below the current one is refused. The current version again changes only
// its configuration (the platform's SetConfig): zip is not read, and the
// runtimes apply the configuration without fetching the package.
func (p *Packages) Publish(ctx context.Context, name string, version int, zip io.Reader, config map[string]any) error {
	if err := toolpkg.CheckName(name); err != nil {
		return fmt.Errorf("mesh: publish: %w", err)
	}
	if version <= 0 {
		return fmt.Errorf("mesh: publish %s: version %d must be positive", name, version)
	}
	var cfg []byte
	if len(config) > 0 {
		var err error
		if cfg, err = json.Marshal(config); err != nil {
			return fmt.Errorf("mesh: publish %s: config: %w", name, err)
		}
		if len(cfg) > toolpkg.MaxStoredConfigBytes {
			return fmt.Errorf("mesh: publish %s: config is %d bytes, at most %d", name, len(cfg), toolpkg.MaxStoredConfigBytes)
		}
	}
	if cur, err := p.obs.GetInfo(ctx, name); err == nil {
		v, _ := strconv.Atoi(cur.Metadata[metaVersion])
		switch {
		case v > version:
			return fmt.Errorf("mesh: publish %s: version %d is below the current %d", name, version, v)
		case v == version:
			// The same version again: only its configuration changes,
			// and the runtimes apply it without fetching the package.
			meta := jetstream.ObjectMeta{Name: name, Description: cur.Description,
				Metadata: map[string]string{metaVersion: strconv.Itoa(version)}}
			if cfg != nil {
				meta.Metadata[metaConfig] = string(cfg)
			}
			if err := p.obs.UpdateMeta(ctx, name, meta); err != nil {
				return fmt.Errorf("mesh: publish %s version %d: configuration: %w", name, version, err)
			}
			p.notify(SyncNotice{Toolset: name, Version: version, Digest: cur.Digest})
			return nil
		}
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("mesh: publish %s: %w", name, err)
	}
	lr := &limitedReader{r: zip, n: MaxPackageBytes}
	meta := jetstream.ObjectMeta{
		Name:        name,
		Description: "toolset " + name + " version " + strconv.Itoa(version),
		Metadata:    map[string]string{metaVersion: strconv.Itoa(version)},
	}
	if cfg != nil {
		meta.Metadata[metaConfig] = string(cfg)
	}
	info, err := p.obs.Put(ctx, meta, lr)
	if lr.over {
		// The object is whole but too large: take it back.
		_ = p.obs.Delete(context.WithoutCancel(ctx), name)
		return fmt.Errorf("mesh: publish %s: package larger than %d bytes", name, MaxPackageBytes)
	}
	if err != nil {
		return fmt.Errorf("mesh: publish %s version %d: %w", name, version, err)
	}
	p.notify(SyncNotice{Toolset: name, Version: version, Digest: info.Digest})
	return nil
}

// Remove removes toolset name's package; runtimes remove its tools.
// Removing a toolset that has none is not an error.
func (p *Packages) Remove(ctx context.Context, name string) error {
	if err := toolpkg.CheckName(name); err != nil {
		return fmt.Errorf("mesh: remove: %w", err)
	}
	if err := p.obs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("mesh: remove %s: %w", name, err)
	}
	p.notify(SyncNotice{Toolset: name, Removed: true})
	return nil
}

// notify publishes a SyncNotice. Runtimes watch the bucket itself, so a
// lost notice loses nothing; it is for observers.
func (p *Packages) notify(n SyncNotice) {
	if data, err := encodeRequest("", MethodSync, n); err == nil {
		_ = p.nc.Publish(p.subj.Sync(), data)
	}
}

// List returns the current version of every published toolset, sorted by
// name.
func (p *Packages) List(ctx context.Context) ([]PackageInfo, error) {
	infos, err := p.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mesh: list packages: %w", err)
	}
	out := make([]PackageInfo, 0, len(infos))
	for _, info := range infos {
		pi, err := packageInfo(info)
		if err != nil {
			continue
		}
		out = append(out, pi)
	}
	slices.SortFunc(out, func(a, b PackageInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// packageInfo reads and checks an object's metadata.
func packageInfo(info *jetstream.ObjectInfo) (PackageInfo, error) {
	pi := PackageInfo{Name: info.Name, Digest: info.Digest, Size: int64(info.Size)}
	if err := toolpkg.CheckName(info.Name); err != nil {
		return pi, err
	}
	v, err := strconv.Atoi(info.Metadata[metaVersion])
	if err != nil || v <= 0 {
		return pi, fmt.Errorf("mesh: package %s: bad version %q", info.Name, cut(info.Metadata[metaVersion], 32))
	}
	pi.Version = v
	if info.Size > MaxPackageBytes {
		return pi, fmt.Errorf("mesh: package %s: %d bytes, at most %d", info.Name, info.Size, MaxPackageBytes)
	}
	if c := info.Metadata[metaConfig]; c != "" {
		if err := Decode([]byte(c), toolpkg.MaxStoredConfigBytes, &pi.Config); err != nil {
			return pi, fmt.Errorf("mesh: package %s: config: %w", info.Name, err)
		}
		pi.Config = plainNumbers(pi.Config)
	}
	return pi, nil
}

// WatchReports calls fn with every SyncReport the runtimes send, until ctx
// is done, and asks the runtimes to send their current reports again, so
// that a platform that starts after them learns their state. It returns
// once the subscription is in place. fn runs on one goroutine, under
// recover.
func (p *Packages) WatchReports(ctx context.Context, fn func(SyncReport)) error {
	sub, err := p.nc.Subscribe(p.subj.SyncReport(), func(m *nats.Msg) {
		req, err := DecodeRequest(m.Data, MethodSyncReport, false)
		if err != nil {
			return
		}
		var rep SyncReport
		if err := Decode(req.Params, 0, &rep); err != nil || checkReport(&rep) != nil {
			return
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					slog.Default().Error("mesh: sync report callback panicked", "panic", r)
				}
			}()
			fn(rep)
		}()
	})
	if err != nil {
		return fmt.Errorf("mesh: watch sync reports: %w", err)
	}
	context.AfterFunc(ctx, func() { _ = sub.Unsubscribe() })
	if err := p.nc.Flush(); err != nil {
		return fmt.Errorf("mesh: watch sync reports: %w", err)
	}
	if data, err := encodeRequest("", MethodSyncReport, struct{}{}); err == nil {
		_ = p.nc.Publish(p.subj.SyncReportRequest(), data)
	}
	return nil
}

// checkReport bounds a report from the broker.
func checkReport(r *SyncReport) error {
	if CheckID("runtime", r.Runtime) != nil || toolpkg.CheckName(r.Toolset) != nil || r.Version < 0 {
		return errors.New("mesh: bad sync report")
	}
	switch r.Status {
	case SyncReady, SyncFailed, SyncRemoved:
	default:
		return errors.New("mesh: bad sync report status")
	}
	if len(r.Tools) > MaxTools || len(r.Errors) > toolpkg.MaxVersionErrors {
		return errors.New("mesh: sync report too long")
	}
	return nil
}

// limitedReader reads at most n bytes of r and says whether r had more.
type limitedReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (l *limitedReader) Read(b []byte) (int, error) {
	if l.n <= 0 {
		var one [1]byte
		if k, _ := l.r.Read(one[:]); k > 0 {
			l.over = true
			return 0, errors.New("package too large")
		}
		return 0, io.EOF
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	k, err := l.r.Read(b)
	l.n -= int64(k)
	return k, err
}

// plainNumbers turns the json.Numbers Decode leaves into int64 or float64,
// as toolpkg's configuration expects.
func plainNumbers(m map[string]any) map[string]any {
	for k, v := range m {
		m[k] = plainValue(v)
	}
	return m
}

func plainValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case map[string]any:
		return plainNumbers(x)
	case []any:
		for i := range x {
			x[i] = plainValue(x[i])
		}
		return x
	}
	return v
}

// digestOf returns the object store's form of the SHA-256 of r.
func digestOf(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return "SHA-256=" + base64.URLEncoding.EncodeToString(h.Sum(nil)), nil
}

// syncEntry is what a runtime holds of one toolset.
type syncEntry struct {
	// Version and Digest are the platform's latest version, as synced.
	Version int    `json:"version"`
	Digest  string `json:"digest"`
	// Local is the local store's version of it.
	Local  int      `json:"local"`
	Status string   `json:"status"`
	Errors []string `json:"errors,omitempty"`
	// ServingVersion is the platform's version that serves here (a failed
	// re-upload leaves the one before), and ServingLocal its local one.
	ServingVersion int `json:"serving_version,omitempty"`
	ServingLocal   int `json:"serving_local,omitempty"`
}

// syncer keeps a runtime's store in step with the packages bucket.
type syncer struct {
	pk       *Packages
	store    *toolpkg.Store
	runtime  string
	file     string // the state file
	fetchDir string
	logger   *slog.Logger
	onChange func(name string)

	mu    sync.Mutex
	state map[string]*syncEntry
}

// newSyncer loads the state of dir.
func newSyncer(pk *Packages, store *toolpkg.Store, dir, runtime string, logger *slog.Logger) (*syncer, error) {
	s := &syncer{pk: pk, store: store, runtime: runtime, logger: logger,
		file: filepath.Join(dir, "sync.json"), fetchDir: filepath.Join(dir, "fetch"),
		state: map[string]*syncEntry{}}
	if err := os.MkdirAll(s.fetchDir, 0o700); err != nil {
		return nil, fmt.Errorf("mesh: runtime dir: %w", err)
	}
	data, err := os.ReadFile(s.file)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("mesh: sync state: %w", err)
	default:
		if err := json.Unmarshal(data, &s.state); err != nil {
			logger.Warn("mesh: sync state unreadable, syncing everything again", "err", err)
			s.state = map[string]*syncEntry{}
		}
	}
	return s, nil
}

// entry returns a copy of the entry of name.
func (s *syncer) entry(name string) (syncEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.state[name]
	if !ok {
		return syncEntry{}, false
	}
	return *e, true
}

// names returns the toolsets synced, sorted.
func (s *syncer) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.state))
}

func (s *syncer) save() {
	s.mu.Lock()
	data, err := json.MarshalIndent(s.state, "", "  ")
	s.mu.Unlock()
	if err != nil {
		return
	}
	tmp := s.file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err == nil {
		err = os.Rename(tmp, s.file)
		if err != nil {
			s.logger.Warn("mesh: save sync state", "err", err)
		}
	}
}

// watch syncs every current package, calls ready, then follows the bucket
// until ctx is done.
func (s *syncer) watch(ctx context.Context, ready func(error)) {
	w, err := s.pk.obs.Watch(ctx)
	if err != nil {
		ready(fmt.Errorf("mesh: watch packages: %w", err))
		return
	}
	defer func() { _ = w.Stop() }()
	initial := true
	seen := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			if initial {
				ready(ctx.Err())
			}
			return
		case info, ok := <-w.Updates():
			if !ok {
				if initial {
					ready(errors.New("mesh: package watch ended"))
				}
				return
			}
			if info == nil {
				if initial {
					// What was synced before and is gone now was
					// removed while this runtime was away.
					for _, name := range s.names() {
						if !seen[name] {
							s.remove(name)
						}
					}
					initial = false
					ready(nil)
				}
				continue
			}
			seen[info.Name] = true
			if info.Deleted {
				s.remove(info.Name)
				continue
			}
			s.apply(ctx, info)
		}
	}
}

// remove drops toolset name.
func (s *syncer) remove(name string) {
	if toolpkg.CheckName(name) != nil {
		return
	}
	if err := s.store.Remove(name); err != nil && !errors.Is(err, toolpkg.ErrNotFound) {
		s.logger.Warn("mesh: remove toolset", "toolset", name, "err", err)
	}
	s.mu.Lock()
	e, had := s.state[name]
	delete(s.state, name)
	s.mu.Unlock()
	s.save()
	if had {
		s.send(SyncReport{Runtime: s.runtime, Toolset: name, Version: e.Version, Status: SyncRemoved})
	}
	s.changed(name)
}

// apply syncs one object of the bucket.
func (s *syncer) apply(ctx context.Context, info *jetstream.ObjectInfo) {
	pi, err := packageInfo(info)
	if err != nil {
		s.logger.Warn("mesh: package refused", "name", cut(info.Name, 64), "err", err)
		if toolpkg.CheckName(info.Name) == nil {
			s.send(SyncReport{Runtime: s.runtime, Toolset: info.Name, Version: pi.Version, Status: SyncFailed, Errors: []string{err.Error()}})
		}
		return
	}
	if e, ok := s.entry(pi.Name); ok && e.Version == pi.Version && e.Digest == pi.Digest && s.intact(pi.Name, e) {
		// The same package: its configuration may have changed.
		if err := s.setConfig(pi.Name, pi.Config); err != nil {
			s.logger.Warn("mesh: configuration refused", "toolset", pi.Name, "version", pi.Version, "err", err)
			e.Status, e.Errors = SyncFailed, []string{"configuration: " + err.Error()}
			s.mu.Lock()
			s.state[pi.Name] = &e
			s.mu.Unlock()
			s.save()
		}
		s.report(pi.Name)
		s.changed(pi.Name)
		return
	}
	e, err := s.fetch(ctx, pi)
	if err != nil {
		s.logger.Warn("mesh: sync failed", "toolset", pi.Name, "version", pi.Version, "err", err)
		e = syncEntry{Version: pi.Version, Digest: pi.Digest, Status: SyncFailed, Errors: []string{err.Error()}}
		if old, ok := s.entry(pi.Name); ok {
			e.ServingVersion, e.ServingLocal = old.ServingVersion, old.ServingLocal
		}
	}
	s.mu.Lock()
	s.state[pi.Name] = &e
	s.mu.Unlock()
	s.save()
	s.report(pi.Name)
	s.changed(pi.Name)
}

// intact reports whether the local store still holds e's package whole:
// the kept zip opens and its digest is the object store's.
func (s *syncer) intact(name string, e syncEntry) bool {
	info, err := s.store.Info(name)
	if err != nil || info.Version != e.Local {
		return false
	}
	f, _, err := s.store.Package(name, e.Local)
	if err != nil {
		return false
	}
	defer f.Close()
	d, err := digestOf(f)
	return err == nil && d == e.Digest
}

// fetch gets the package of pi, checks it, and uploads it to the store.
func (s *syncer) fetch(ctx context.Context, pi PackageInfo) (syncEntry, error) {
	e := syncEntry{Version: pi.Version, Digest: pi.Digest}
	if old, ok := s.entry(pi.Name); ok {
		e.ServingVersion, e.ServingLocal = old.ServingVersion, old.ServingLocal
	}
	f, err := os.CreateTemp(s.fetchDir, "pkg-*.zip")
	if err != nil {
		return e, fmt.Errorf("fetch: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	obj, err := s.pk.obs.Get(ctx, pi.Name)
	if err != nil {
		return e, fmt.Errorf("fetch: %w", err)
	}
	got, err := obj.Info()
	if err != nil || got.Digest != pi.Digest {
		obj.Close()
		return e, errors.New("fetch: the package changed while it was fetched")
	}
	n, err := io.Copy(f, io.LimitReader(obj, MaxPackageBytes+1))
	obj.Close()
	if err != nil {
		return e, fmt.Errorf("fetch: %w", err)
	}
	if n > MaxPackageBytes || n != pi.Size {
		return e, fmt.Errorf("fetch: got %d bytes, the store says %d", n, pi.Size)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return e, fmt.Errorf("fetch: %w", err)
	}
	if d, err := digestOf(f); err != nil || d != pi.Digest {
		return e, errors.New("fetch: the package's digest is not the store's")
	}
	// Configuration first where it can be (the version's discovery uses
	// it); when the serving version's schemas refuse it, after.
	cfgDone := s.setConfig(pi.Name, pi.Config) == nil
	info, err := s.store.Upload(ctx, pi.Name, f, n)
	if err != nil {
		return e, fmt.Errorf("upload: %w", err)
	}
	if !cfgDone {
		if err := s.setConfig(pi.Name, pi.Config); err != nil {
			return e, fmt.Errorf("configuration: %w", err)
		}
	}
	e.Local = info.Version
	switch {
	case info.Status == toolpkg.StatusReady && info.Serving == info.Version:
		e.Status = SyncReady
		e.ServingVersion, e.ServingLocal = pi.Version, info.Version
	default:
		e.Status = SyncFailed
		e.Errors = info.Errors
		if len(e.Errors) == 0 {
			e.Errors = []string{"discovery ended with status " + string(info.Status)}
		}
	}
	return e, nil
}

// setConfig makes the store's configuration of name exactly config.
func (s *syncer) setConfig(name string, config map[string]any) error {
	patch := map[string]any{}
	if cur, err := s.store.Config(name); err == nil {
		for k := range cur {
			patch[k] = nil
		}
	}
	maps.Copy(patch, config)
	if len(patch) == 0 {
		return nil
	}
	_, err := s.store.SetConfig(name, patch)
	return err
}

// report sends the report of name.
func (s *syncer) report(name string) {
	e, ok := s.entry(name)
	if !ok {
		return
	}
	rep := SyncReport{Runtime: s.runtime, Toolset: name, Version: e.Version, Status: e.Status, Errors: e.Errors}
	if e.Status == SyncReady {
		if info, err := s.store.Info(name); err == nil {
			for _, t := range info.Tools {
				rep.Tools = append(rep.Tools, name+ToolSeparator+t.Name)
			}
		}
	}
	s.send(rep)
}

// reportAll sends the report of every toolset.
func (s *syncer) reportAll() {
	for _, name := range s.names() {
		s.report(name)
	}
}

func (s *syncer) send(rep SyncReport) {
	if len(rep.Errors) > toolpkg.MaxVersionErrors {
		rep.Errors = rep.Errors[:toolpkg.MaxVersionErrors]
	}
	data, err := encodeRequest("", MethodSyncReport, rep)
	if err != nil {
		return
	}
	if err := s.pk.nc.Publish(s.pk.subj.SyncReport(), data); err != nil {
		s.logger.Warn("mesh: send sync report", "toolset", rep.Toolset, "err", err)
	}
}

func (s *syncer) changed(name string) {
	if s.onChange != nil {
		s.onChange(name)
	}
}
