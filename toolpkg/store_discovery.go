package toolpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// maxSchemaOutput caps what --schema may print.
const maxSchemaOutput = 8 << 20

// startDiscoveryLocked registers a discovery of e about to start and
// returns its context, which Close and Remove cancel; s.mu is held.
func (s *Store) startDiscoveryLocked(e *entry) context.Context {
	ctx, cancel := context.WithCancel(s.bgCtx)
	e.cancel = cancel
	if e.removing > 0 {
		cancel()
	}
	s.bg.Add(1)
	return ctx
}

// discoverInBackground discovers version v of a toolset, holding e.up,
// which it releases at the end, under the bound of
// Options.MaxParallelDiscovery. Canceled (by Close or Remove), it leaves
// the record as it is: pending.
//
// The caller made ctx with startDiscovery, and called s.bg.Add(1).
func (s *Store) discoverInBackground(ctx context.Context, name string, e *entry, v int, exes []Executable, kindErrs map[string]error) {
	defer s.bg.Done()
	defer e.unlockUp()
	defer func() {
		s.mu.Lock()
		e.cancel()
		e.cancel = nil
		s.mu.Unlock()
	}()
	select {
	case s.discovering <- struct{}{}:
	case <-ctx.Done():
		return
	}
	pkgDir := s.versionDir(name, v)
	if kindErrs == nil {
		// Discovered again after a restart: what each executable is was
		// not kept when this runtime cannot run it.
		kindErrs = map[string]error{}
		for _, ex := range exes {
			if ex.Kind != "" {
				continue
			}
			if _, err := inspectExecutable(filepath.Join(pkgDir, filepath.FromSlash(ex.File)), ex.Runtime); err != nil {
				kindErrs[ex.Key] = err
			}
		}
	}
	start := time.Now()
	tools, errs := s.discover(ctx, name, pkgDir, exes, kindErrs)
	<-s.discovering
	if ctx.Err() != nil {
		s.log.Info("toolpkg: discovery canceled; the toolset stays pending", "toolset", name, "version", v)
		return
	}

	e.wmu.Lock()
	s.mu.Lock()
	rec := e.rec
	s.mu.Unlock()
	if rec.Version != v || rec.Status != StatusPending {
		e.wmu.Unlock()
		return
	}
	if len(errs) == 0 {
		// Checked here, with e.wmu held, as SetConfig checks against
		// the serving version: the stored configuration always fits it.
		for _, p := range checkStoredConfig(tools, e.config, e.sealed) {
			errs = append(errs, "the store's configuration of the toolset does not fit this version (change it with SetConfig, then upload again): "+p)
		}
		errs = capProblems(errs)
	}
	old := rec.Serving
	rec.Updated = time.Now().UTC()
	rec.Versions = append([]VersionInfo(nil), rec.Versions...)
	if len(errs) > 0 {
		rec.Status, rec.Errors = StatusFailed, errs
		rec.setVersion(VersionInfo{Version: v, Uploaded: rec.Uploaded, Status: StatusFailed, Errors: errs})
	} else {
		rec.Status, rec.Errors = StatusReady, nil
		rec.Serving, rec.Tools, rec.Executables, rec.Candidate = v, tools, exes, nil
		rec.setVersion(VersionInfo{Version: v, Uploaded: rec.Uploaded, Status: StatusReady, Tools: len(tools)})
	}
	// Not saved, the result holds in memory all the same, so that no
	// one waits for ever; on disk the toolset stays pending, and the next
	// Open discovers it again.
	// The old version's folder stays while state.json names it.
	err := s.persist(rec)
	s.mu.Lock()
	e.setRec(rec)
	var trash []string
	if err == nil {
		trash = s.retireLocked(name, e, old)
	}
	s.mu.Unlock()
	e.wmu.Unlock()
	s.deleteVersions(name, trash)
	switch {
	case err != nil:
		s.log.Error("toolpkg: discovery finished, but its result could not be saved; the next Open discovers the toolset again", "toolset", name, "version", v, "status", string(rec.Status), "error", err)
	case rec.Status == StatusReady:
		s.log.Info("toolpkg: toolset ready", "toolset", name, "version", v, "tools", len(tools), "discovery", time.Since(start).Round(time.Millisecond))
	default:
		s.log.Warn("toolpkg: discovery failed", "toolset", name, "version", v, "serving", rec.Serving, "errors", errs)
	}
}

// Wait waits until the toolset is not pending and returns its record.
// Canceling ctx ends the wait with ctx.Err(); closing the store, with
// ErrClosed.
func (s *Store) Wait(ctx context.Context, name string) (Info, error) {
	for {
		s.mu.Lock()
		e, ok := s.known(name)
		if !ok {
			s.mu.Unlock()
			return Info{}, fmt.Errorf("%w: %q", ErrNotFound, name)
		}
		if e.rec.Status != StatusPending {
			info := e.rec.Info.clone()
			s.mu.Unlock()
			return info, nil
		}
		changed := e.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Info{}, fmt.Errorf("toolpkg: waiting for the discovery of %q: %w", name, ctx.Err())
		case <-s.done:
			return Info{}, fmt.Errorf("toolpkg: waiting for the discovery of %q: %w", name, ErrClosed)
		}
	}
}

// discover runs "<executable> --schema" for each executable of a package
// and returns the tools found and every problem.
func (s *Store) discover(ctx context.Context, name, pkgDir string, exes []Executable, kindErrs map[string]error) ([]ToolInfo, []string) {
	var tools []ToolInfo
	var errs []string
	owner := map[string]string{}
	for _, ex := range exes {
		if err := kindErrs[ex.Key]; err != nil {
			errs = append(errs, cutProblem(fmt.Sprintf("executable %q: %s %v", ex.Key, ex.File, err)))
			continue
		}
		out, err := s.schemaOf(ctx, pkgDir, ex, nil, nil)
		if err != nil {
			errs = append(errs, cutProblem(fmt.Sprintf("executable %q: %v", ex.Key, err)))
			continue
		}
		found, probs := parseSchemaOutput(ex, out)
		for _, p := range probs {
			errs = append(errs, fmt.Sprintf("executable %q: %s", ex.Key, p))
		}
		for _, t := range found {
			if max := s.opts.Limits.MaxTimeoutSeconds; t.TimeoutSeconds > max {
				errs = append(errs, fmt.Sprintf("executable %q: tool %q: timeout_seconds asks for %d seconds; this store allows at most %d", ex.Key, t.Name, t.TimeoutSeconds, max))
				continue
			}
			if other, dup := owner[t.Name]; dup {
				errs = append(errs, fmt.Sprintf("tool %q is exposed by both executable %q and executable %q", t.Name, other, ex.Key))
				continue
			}
			owner[t.Name] = ex.Key
			tools = append(tools, t)
		}
	}
	if len(tools) > MaxTools {
		errs = append(errs, fmt.Sprintf("the package exposes %d tools; at most %d are allowed", len(tools), MaxTools))
	}
	// Each executable's output is bounded, not their number.
	if data, err := json.Marshal(tools); err != nil || len(data) > s.maxToolDefs {
		errs = append(errs, fmt.Sprintf("the tool definitions add up to %d bytes of JSON; at most %d are allowed", len(data), s.maxToolDefs))
	}
	// A key one tool declares secret is secret for all of them.
	secretKeys := map[string]bool{}
	for _, t := range tools {
		for _, f := range t.Config {
			if f.Secret {
				secretKeys[f.Key] = true
			}
		}
	}
	secretBytes := 0
	for k := range secretKeys {
		secretBytes += len(k)
	}
	for _, t := range tools {
		for _, f := range t.Config {
			if d, ok := f.Default.(string); ok && secretKeys[f.Key] {
				secretBytes += len(d)
			}
		}
	}
	if secretBytes > MaxSecretBytes {
		errs = append(errs, fmt.Sprintf("the secret configuration keys and their defaults add up to %d bytes; at most %d are allowed", secretBytes, MaxSecretBytes))
	}
	for _, t := range tools {
		if full := name + "__" + t.Name; len(full) > 64 {
			errs = append(errs, fmt.Sprintf("tool %q: the model would see %q, %d characters; names may have at most 64", t.Name, full, len(full)))
		}
	}
	return tools, capProblems(errs)
}

// schemaOf runs "<executable> --schema" in the sandbox and returns what it
// printed. With a config, it runs "<executable> --schema --config FILE",
// FILE holding the config as a JSON object.
//
// With a configuration, sec holds its secrets: they are hidden in what the
// executable prints, on stdout (tool definitions reach the model) and on
// stderr (an error), before anything reads it.
func (s *Store) schemaOf(ctx context.Context, pkgDir string, ex Executable, config map[string]any, sec *secrets) ([]byte, error) {
	callDir, work, err := s.newCallDir("schema-")
	if err != nil {
		return nil, err
	}
	defer removeAll(callDir)
	l, err := s.launchFor(pkgDir, work, ex)
	if err != nil {
		return nil, err
	}
	l.args = []string{"--schema"}
	l.stderrMargin = int64(12 * sec.maxLen())
	if config != nil {
		data, err := json.Marshal(config)
		if err != nil {
			return nil, fmt.Errorf("encoding the config for --schema --config: %w", err)
		}
		if err := s.writeToolFile(filepath.Join(work, "config.json"), data); err != nil {
			return nil, err
		}
		_, workView := s.sb.paths(l)
		l.args = append(l.args, "--config", filepath.Join(workView, "config.json"))
	}
	res, err := s.sb.runProcess(ctx, l, s.opts.DiscoveryTimeout, callDir, maxSchemaOutput)
	switch {
	case err != nil:
		return nil, fmt.Errorf("--schema did not run: %w", err)
	case res.timedOut:
		return nil, fmt.Errorf("--schema did not finish within %s (discovery timeout)", s.opts.DiscoveryTimeout)
	case config != nil && res.signal == 0 && res.exitCode == 1:
		// Exit code 1 is bad usage: an executable that does not know
		// --config.
		return nil, fmt.Errorf("%w (exit code 1)%s", errNoConfigFlag, stderrSuffix(res.stderrText(sec)))
	case res.signal != 0 || res.exitCode != 0:
		return nil, fmt.Errorf("--schema failed (%s)%s", res.describeExit(l.limits), stderrSuffix(res.stderrText(sec)))
	case res.stdoutN > maxSchemaOutput:
		return nil, fmt.Errorf("--schema printed %d bytes; at most %d are allowed", res.stdoutN, maxSchemaOutput)
	}
	out := bytes.TrimSpace(res.stdout)
	if sec != nil {
		// Values only: a parameter may share a secret key's name.
		out = []byte(sec.replaceValues(string(out)))
	}
	return out, nil
}

// errNoConfigFlag is the error of an executable that refuses
// --schema --config as bad usage.
var errNoConfigFlag = errors.New("--schema --config was refused as bad usage")

func stderrSuffix(stderr string) string {
	stderr = strings.TrimSpace(stderr)
	if stderr == "" {
		return "; stderr was empty"
	}
	return "; stderr:\n" + stderr
}
