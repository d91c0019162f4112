package platform

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gotoolset/toolset/toolpkg"
)

// Distributor hands the toolsets the platform accepts to the runtimes
// that run their tools (elsewhere, over a broker), and brings back what
// each runtime made of them (see the package documentation, Runtimes).
// Its methods may be called from several goroutines, though the platform
// calls Publish and Remove one at a time.
type Distributor interface {
	// Publish makes version of the toolset name the one the runtimes
	// serve: pkg reads its zip as uploaded, config is the toolset's
	// stored configuration with its secrets in clear. The platform
	// publishes a toolset's serving version once its own discovery found
	// it ready, again when its configuration changes, and at each start
	// what it serves: publishing what is published already must be
	// harmless.
	Publish(ctx context.Context, name string, version int, pkg io.Reader, config map[string]any) error
	// Remove withdraws the toolset from the runtimes; nil for one the
	// distributor does not hold.
	Remove(ctx context.Context, name string) error
	// WatchReports calls fn with each runtime's report on a version it
	// was given, until ctx ends. It may return once it watches, or block
	// until ctx ends; an error it returns while ctx lasts is logged and
	// the watch started again a little later. fn is safe to call from any
	// goroutine and does not block for long.
	WatchReports(ctx context.Context, fn func(SyncReport)) error
}

// The statuses a [SyncReport] gives.
const (
	SyncReady  = "ready"
	SyncFailed = "failed"
)

// SyncReport is what one runtime made of a version of a toolset: ready
// with the tools it discovered, or failed with why. Reports come from
// other machines: the platform bounds and checks them, and ignores one
// for a toolset it does not have or a version that is not its latest.
type SyncReport struct {
	// Runtime names the runtime (at most MaxRuntimeIDBytes).
	Runtime string
	// Toolset and Version are the version the report is about.
	Toolset string
	Version int
	// Status is SyncReady or SyncFailed.
	Status string
	// Tools are the names of the tools the runtime discovered, as the
	// package names them (not prefixed with the toolset's name).
	Tools []string
	// Errors say why the runtime failed (at most MaxReportErrors are
	// kept, each cut to MaxReportErrorBytes).
	Errors []string
}

// Bounds of the reports kept (see [SyncReport]).
const (
	// MaxRuntimeIDBytes bounds a report's Runtime.
	MaxRuntimeIDBytes = 128
	// MaxReportErrors bounds the errors kept of one report.
	MaxReportErrors = 5
	// MaxReportErrorBytes bounds each error kept.
	MaxReportErrorBytes = 1024
	// MaxRuntimesPerToolset bounds the runtimes whose reports are kept
	// for one toolset; reports of further runtimes are ignored.
	MaxRuntimesPerToolset = 256
)

// maxGateErrors bounds the runtimes' errors a toolset shows.
const maxGateErrors = 4 * MaxReportErrors

// Delays between attempts at a distribution that failed, and at a watch
// of the reports that ended.
const (
	distributeRetryMin = 500 * time.Millisecond
	distributeRetryMax = 30 * time.Second
)

// distribution is the server's side of a Distributor: a worker that
// publishes or removes one toolset at a time, as the store has it when
// its turn comes, and the reports of the runtimes on the latest
// versions.
type distribution struct {
	d   Distributor
	srv *Server

	mu sync.Mutex
	// queued are the toolsets waiting for the worker; kick wakes it.
	queued map[string]bool
	kick   chan struct{}
	// done is what was last published of each toolset: version and a
	// digest of the configuration; absent once removed.
	done map[string]publication
	// retry is the delay before the next attempt of a toolset whose
	// distribution failed.
	retry map[string]time.Duration
	// confirmed holds the reports on each toolset's latest version.
	confirmed map[string]*confirmations

	wg sync.WaitGroup
}

type publication struct {
	version int
	config  [sha256.Size]byte
}

// confirmations are the reports of the runtimes on one version.
type confirmations struct {
	version int
	// byRuntime: a ready report is kept without errors; a failed one, or
	// a ready one that lacks tools, with them.
	byRuntime map[string]runtimeResult
}

type runtimeResult struct {
	ready  bool
	errors []string
}

func newDistribution(s *Server, d Distributor) *distribution {
	return &distribution{d: d, srv: s, queued: map[string]bool{}, kick: make(chan struct{}, 1),
		done: map[string]publication{}, retry: map[string]time.Duration{}, confirmed: map[string]*confirmations{}}
}

// start runs the worker and the watch of the reports, and queues every
// toolset the store knows: what it serves is published, what it removed
// withdrawn, what is pending published once discovered.
func (dt *distribution) start() {
	ctx := dt.srv.ctx
	dt.wg.Add(2)
	go dt.work(ctx)
	go dt.watch(ctx)
	for _, info := range dt.srv.store.ListAll() {
		if info.Status == toolpkg.StatusPending {
			dt.whenDiscovered(info.Name)
			continue
		}
		dt.enqueue(info.Name)
	}
}

// wait waits for the worker, the watch and the waits for discovery, once
// the server's context has ended.
func (dt *distribution) wait() { dt.wg.Wait() }

// enqueue has the worker look at the toolset.
func (dt *distribution) enqueue(name string) {
	dt.mu.Lock()
	dt.queued[name] = true
	dt.mu.Unlock()
	select {
	case dt.kick <- struct{}{}:
	default:
	}
}

// whenDiscovered queues the toolset once the store's discovery of it
// ends (ready or failed), or the server closes.
func (dt *distribution) whenDiscovered(name string) {
	dt.wg.Add(1)
	go func() {
		defer dt.wg.Done()
		if _, err := dt.srv.store.Wait(dt.srv.ctx, name); err != nil && dt.srv.ctx.Err() != nil {
			return
		}
		dt.enqueue(name)
	}()
}

// forget drops what is known of a removed toolset: its reports, and
// that it was published.
func (dt *distribution) forget(name string) {
	dt.mu.Lock()
	delete(dt.confirmed, name)
	dt.mu.Unlock()
}

func (dt *distribution) work(ctx context.Context) {
	defer dt.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-dt.kick:
		}
		for {
			dt.mu.Lock()
			var name string
			for n := range dt.queued {
				if name == "" || n < name {
					name = n
				}
			}
			delete(dt.queued, name)
			dt.mu.Unlock()
			if name == "" || ctx.Err() != nil {
				break
			}
			dt.distribute(ctx, name)
		}
	}
}

// distribute publishes what the store serves of the toolset, or removes
// it, unless that was done already; a failure is tried again later.
func (dt *distribution) distribute(ctx context.Context, name string) {
	err := dt.sync(ctx, name)
	if err == nil || ctx.Err() != nil {
		dt.mu.Lock()
		delete(dt.retry, name)
		dt.mu.Unlock()
		return
	}
	dt.mu.Lock()
	d := dt.retry[name]
	d = min(max(2*d, distributeRetryMin), distributeRetryMax)
	dt.retry[name] = d
	dt.mu.Unlock()
	dt.srv.log.Warn("platform: handing a toolset to the runtimes failed; trying again", "toolset", name, "retry_in", d.String(), "error", dt.srv.scrub(err.Error()))
	dt.wg.Add(1)
	go func() {
		defer dt.wg.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			dt.enqueue(name)
		case <-ctx.Done():
		}
	}()
}

func (dt *distribution) sync(ctx context.Context, name string) error {
	info, err := dt.srv.store.Info(name)
	if errors.Is(err, toolpkg.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Status == toolpkg.StatusRemoved {
		dt.forget(name)
		if err := dt.call(func() error { return dt.d.Remove(ctx, name) }); err != nil {
			return fmt.Errorf("removing: %w", err)
		}
		dt.mu.Lock()
		delete(dt.done, name)
		dt.mu.Unlock()
		return nil
	}
	if info.Serving == 0 {
		return nil // nothing to serve yet
	}
	cfg, err := dt.srv.store.ExportConfig(name)
	if errors.Is(err, toolpkg.ErrNotFound) {
		return nil // removed meanwhile: its removal is queued
	}
	if err != nil {
		return err
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encoding the configuration: %w", err)
	}
	pub := publication{version: info.Serving, config: sha256.Sum256(data)}
	dt.mu.Lock()
	same := dt.done[name] == pub
	dt.mu.Unlock()
	if same {
		return nil
	}
	pkg, _, err := dt.srv.store.Package(name, info.Serving)
	if errors.Is(err, toolpkg.ErrNotFound) {
		return nil // replaced or removed meanwhile: queued again
	}
	if err != nil {
		return err
	}
	defer pkg.Close()
	if err := dt.call(func() error { return dt.d.Publish(ctx, name, info.Serving, pkg, cfg) }); err != nil {
		return fmt.Errorf("publishing version %d: %w", info.Serving, err)
	}
	dt.mu.Lock()
	dt.done[name] = pub
	dt.mu.Unlock()
	dt.srv.log.Info("platform: toolset handed to the runtimes", "toolset", name, "version", info.Serving)
	return nil
}

// call runs a method of the distributor, its panic an error.
func (dt *distribution) call(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			dt.srv.log.Error("platform: the distributor panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("the distributor panicked: %v", v)
		}
	}()
	return fn()
}

// watch keeps the reports coming until ctx ends.
func (dt *distribution) watch(ctx context.Context) {
	defer dt.wg.Done()
	d := time.Duration(0)
	for {
		started := time.Now()
		err := dt.call(func() error { return dt.d.WatchReports(ctx, dt.report) })
		if err == nil {
			<-ctx.Done()
		}
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > distributeRetryMax {
			d = 0
		}
		d = min(max(2*d, distributeRetryMin), distributeRetryMax)
		dt.srv.log.Warn("platform: watching the runtimes' reports failed; trying again", "retry_in", d.String(), "error", dt.srv.scrub(err.Error()))
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// report takes a runtime's report: kept when it is about the latest
// version of a toolset the store has, ignored otherwise.
func (dt *distribution) report(r SyncReport) {
	defer func() {
		if v := recover(); v != nil {
			dt.srv.log.Error("platform: a runtime's report could not be taken", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	if toolpkg.CheckName(r.Toolset) != nil || !validRuntimeID(r.Runtime) || r.Version <= 0 ||
		(r.Status != SyncReady && r.Status != SyncFailed) {
		dt.srv.log.Debug("platform: a malformed report of a runtime was ignored")
		return
	}
	info, err := dt.srv.store.Info(r.Toolset)
	if err != nil || info.Status == toolpkg.StatusRemoved || r.Version != info.Version {
		dt.srv.log.Debug("platform: a report on a toolset or version not the latest was ignored", "toolset", r.Toolset, "version", r.Version)
		return
	}
	res := runtimeResult{ready: r.Status == SyncReady}
	if res.ready {
		var missing []string
		for _, t := range info.Tools {
			if !slices.Contains(r.Tools, t.Name) {
				missing = append(missing, t.Name)
			}
		}
		if len(missing) > 0 {
			res.ready = false
			res.errors = []string{fmt.Sprintf("runtime %s discovered version %d without the tools %s", quotePath(r.Runtime), r.Version, cut(strings.Join(missing, ", ")))}
		}
	} else {
		for i, e := range r.Errors {
			if i == MaxReportErrors {
				res.errors = append(res.errors, fmt.Sprintf("runtime %s: and %d more errors", quotePath(r.Runtime), len(r.Errors)-i))
				break
			}
			if len(e) > MaxReportErrorBytes {
				e = strings.ToValidUTF8(e[:MaxReportErrorBytes], "") + "... (cut)"
			}
			res.errors = append(res.errors, fmt.Sprintf("runtime %s: %s", quotePath(r.Runtime), strings.ToValidUTF8(e, "?")))
		}
		if len(res.errors) == 0 {
			res.errors = []string{fmt.Sprintf("runtime %s could not serve version %d, and said not why", quotePath(r.Runtime), r.Version)}
		}
	}
	dt.mu.Lock()
	defer dt.mu.Unlock()
	c := dt.confirmed[r.Toolset]
	if c == nil || c.version != r.Version {
		c = &confirmations{version: r.Version, byRuntime: map[string]runtimeResult{}}
		dt.confirmed[r.Toolset] = c
	}
	if _, ok := c.byRuntime[r.Runtime]; !ok && len(c.byRuntime) >= MaxRuntimesPerToolset {
		// Full: a failure waits for room, while a confirmation takes
		// the place of a failure, so that runtimes reporting failures
		// (forged, or broken) never keep a working one out.
		if !res.ready {
			return
		}
		evicted := false
		for id, old := range c.byRuntime {
			if !old.ready {
				delete(c.byRuntime, id)
				evicted = true
				break
			}
		}
		if !evicted {
			return
		}
	}
	c.byRuntime[r.Runtime] = res
}

// validRuntimeID says whether a runtime's name is one a report may give:
// 1 to MaxRuntimeIDBytes printable ASCII bytes.
func validRuntimeID(id string) bool {
	if id == "" || len(id) > MaxRuntimeIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// gate gives info the status the runtimes' reports make it: a toolset
// its own discovery found ready is pending until a runtime confirmed
// every tool of its latest version, failed (with the runtimes' errors)
// when the runtimes that reported all failed.
func (dt *distribution) gate(info toolpkg.Info) toolpkg.Info {
	if info.Status != toolpkg.StatusReady {
		return info
	}
	dt.mu.Lock()
	var errs []string
	ready := false
	if c := dt.confirmed[info.Name]; c != nil && c.version == info.Version {
		for _, id := range sortedKeys(c.byRuntime) {
			res := c.byRuntime[id]
			ready = ready || res.ready
			errs = append(errs, res.errors...)
		}
	}
	dt.mu.Unlock()
	if len(errs) > maxGateErrors {
		errs = append(errs[:maxGateErrors:maxGateErrors], fmt.Sprintf("and %d more errors of the runtimes", len(errs)-maxGateErrors))
	}
	status := toolpkg.StatusPending
	switch {
	case ready:
		return info
	case len(errs) > 0:
		status = toolpkg.StatusFailed
		info.Errors = errs
	}
	info.Status = status
	if len(info.Versions) > 0 && info.Versions[0].Version == info.Version {
		info.Versions = slices.Clone(info.Versions)
		info.Versions[0].Status = status
		info.Versions[0].Errors = errs
	}
	return info
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
