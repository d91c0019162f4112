package toolpkg

import (
	"fmt"
	"sort"
	"time"

	"github.com/gotoolset/toolset/internal/textcut"
)

// Status is where a toolset is in its lifecycle.
//
// A toolset's status ([Status]) is persisted in its state.json:
//
//   - created ([StatusCreated]): [Store.Create] made the record, no
//     package was uploaded yet;
//   - pending ([StatusPending]): a package was accepted, discovery runs
//     or waits for its turn;
//   - ready ([StatusReady]): every executable was discovered;
//   - failed ([StatusFailed]): discovery of the latest upload failed,
//     [Info.Errors] says why;
//   - removed ([StatusRemoved]): [Store.Remove] removed it; [Store.Create]
//     or an upload may make it again.
//
// [Store.StartUpload] creates the toolset if needed. A package that
// fails validation returns a [*ValidationError] and changes nothing.
// Otherwise it becomes the next version (numbers are never reused), with
// its zip, and the status goes pending, persisted, before StartUpload
// returns; discovery runs in the background, at most
// [Options.MaxParallelDiscovery] toolsets at a time, and the status then
// goes ready or failed ([Store.Wait] waits for it; [Store.Upload] is
// StartUpload then Wait, and a failed discovery is not its error).
// Uploads of one toolset are serialised: the next waits for the
// previous one's discovery.
//
// [Info] tells the latest upload from the version that serves:
// Version, Uploaded, Status and Errors are the latest upload's;
// [Info.Serving] is the version whose tools the store's Toolsets list
// (Info.Tools), the latest one discovered ready. A re-upload of a ready
// toolset keeps the old version serving while it is pending, and after
// it failed; once it is ready it serves from the next turn on. GetTools
// fails with a [*NotReadyError] only when nothing serves (no upload yet,
// every upload failed or pending, or the toolset removed), and with an
// error wrapping [ErrNotFound] for a name the store never had.
// [Info.Versions] keeps the last [MaxVersionHistory] uploads.
//
// On disk, a toolset keeps the folders and zips of its latest and its
// serving version ([Store.Package] exports a zip). The others are
// deleted once no call uses them; a tool listed from a deleted version
// fails with a [*StaleToolError] that the model sees, and the next turn
// lists the serving version's tools. [Store.Remove] deletes the zips and
// the stored configuration at once, and cancels a discovery running.
//
// One process at a time owns a store directory ([Open] takes an
// exclusive lock). [Store.Close] cancels the discoveries running, which
// leave their toolsets pending on disk; Open discovers again a toolset
// left pending (its serving version, if any, serves meanwhile), and
// cleans up what a crashed process left behind (temporary folders, work
// directories, versions neither latest nor serving). state.json files of
// earlier releases load: a ready record serves its version, and the
// history starts with it. A damaged state.json (unreadable,
// not JSON, naming files outside its package, holding what discovery
// would have refused, or naming a version whose folder is missing) does
// not stop the store from opening: it is logged as an error, the toolset
// is failed with an error that says to upload the package again, and its
// files stay as they are; the next upload replaces the record, with a
// version number above every folder on disk.
type Status string

// The statuses of a toolset. created → pending → ready | failed; a
// re-upload moves ready or failed back to pending; removed ends it.
const (
	// StatusCreated: the record exists, no package was uploaded yet.
	StatusCreated Status = "created"
	// StatusPending: a package was accepted and discovery runs, or
	// waits for its turn (Options.MaxParallelDiscovery). The serving
	// version, if any, still serves.
	StatusPending Status = "pending"
	// StatusReady: every executable was discovered; agents can use it.
	StatusReady Status = "ready"
	// StatusFailed: discovery of the latest upload failed; Info.Errors
	// says why. The serving version, if any, still serves.
	StatusFailed Status = "failed"
	// StatusRemoved: the toolset was removed.
	StatusRemoved Status = "removed"
)

// Info is the record of one toolset.
//
// Version, Uploaded, Status, Errors and Warnings describe the latest
// upload; Serving, Executables and Tools the version the store's Toolsets
// list, which a pending or failed re-upload leaves in place.
type Info struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Version counts the packages uploaded under this name; 0 before the
	// first. It is the latest upload, whatever its status.
	Version int `json:"version"`
	// Serving is the version whose tools the store's Toolsets list: the
	// latest one discovered ready; 0 when none is (nothing was uploaded,
	// every upload failed, or the toolset was removed).
	Serving int `json:"serving"`
	// Uploaded is when Version was uploaded.
	Uploaded time.Time `json:"uploaded,omitzero"`
	// Executables are the manifest's entries of the serving version, or
	// of Version when nothing serves.
	Executables []Executable `json:"executables,omitempty"`
	// Tools are the tools discovered in the serving version.
	Tools []ToolInfo `json:"tools,omitempty"`
	// Errors are the discovery errors of Version when Status is failed.
	Errors []string `json:"errors,omitempty"`
	// Warnings are what the manifest of Version holds that this runtime
	// ignored (unknown keys, each with its line).
	Warnings []string `json:"warnings,omitempty"`
	// Versions are the latest uploads, newest first: at most
	// MaxVersionHistory.
	Versions []VersionInfo `json:"versions,omitempty"`
	// Updated is when the record last changed.
	Updated time.Time `json:"updated"`
}

// VersionInfo is one upload of a toolset, in [Info.Versions].
type VersionInfo struct {
	Version  int       `json:"version"`
	Uploaded time.Time `json:"uploaded,omitzero"`
	// Status is pending, ready or failed.
	Status Status `json:"status"`
	// Tools is how many tools discovery found (0 unless ready).
	Tools int `json:"tools"`
	// Errors are the discovery errors of a failed upload: at most
	// MaxVersionErrors, each cut to a bounded length.
	Errors []string `json:"errors,omitempty"`
}

// Bounds of [Info.Versions].
const (
	// MaxVersionHistory is how many uploads Info.Versions keeps.
	MaxVersionHistory = 20
	// MaxVersionErrors is how many errors a VersionInfo keeps.
	MaxVersionErrors = 5
)

func (i Info) clone() Info {
	i.Executables = append([]Executable(nil), i.Executables...)
	i.Tools = append([]ToolInfo(nil), i.Tools...)
	i.Errors = append([]string(nil), i.Errors...)
	i.Warnings = append([]string(nil), i.Warnings...)
	vs := make([]VersionInfo, len(i.Versions))
	for j, v := range i.Versions {
		v.Errors = append([]string(nil), v.Errors...)
		vs[j] = v
	}
	i.Versions = vs
	return i
}

// record is the on-disk state of a toolset.
type record struct {
	Info
	// LastVersion is the highest version number ever used, so numbers are
	// never reused.
	LastVersion int `json:"last_version"`
	// Candidate holds the manifest's entries of Version while it is not
	// the serving version (pending or failed).
	Candidate []Executable `json:"candidate,omitempty"`
}

// live reports whether version v must stay: it is the latest upload or
// the serving one.
func (r *record) live(v int) bool {
	return v > 0 && r.Status != StatusRemoved && (v == r.Version || v == r.Serving)
}

// candidate returns the manifest's entries of Version.
func (r *record) candidate() []Executable {
	if r.Version == r.Serving {
		return r.Executables
	}
	if r.Candidate == nil && r.Serving == 0 {
		return r.Executables
	}
	return r.Candidate
}

// setVersion records what is known of version v in the history.
func (r *record) setVersion(vi VersionInfo) {
	errs := vi.Errors
	vi.Errors = nil
	for i, e := range errs {
		if i == MaxVersionErrors {
			vi.Errors = append(vi.Errors, fmt.Sprintf("and %d more", len(errs)-MaxVersionErrors))
			break
		}
		vi.Errors = append(vi.Errors, textcut.Clip(e, maxVersionErrorBytes))
	}
	for i := range r.Versions {
		if r.Versions[i].Version == vi.Version {
			r.Versions[i] = vi
			return
		}
	}
	r.Versions = append([]VersionInfo{vi}, r.Versions...)
	if len(r.Versions) > MaxVersionHistory {
		r.Versions = r.Versions[:MaxVersionHistory]
	}
}

// maxVersionErrorBytes bounds an error of [VersionInfo.Errors].
const maxVersionErrorBytes = 512

// Info returns the record of a toolset; ErrNotFound if the store has
// never had it.
func (s *Store) Info(name string) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.known(name)
	if !ok {
		return Info{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return e.rec.Info.clone(), nil
}

// Status returns a toolset's status.
func (s *Store) Status(name string) (Status, error) {
	i, err := s.Info(name)
	return i.Status, err
}

// DiscoveryErrors returns why a toolset's discovery failed, or nil.
func (s *Store) DiscoveryErrors(name string) ([]string, error) {
	i, err := s.Info(name)
	return i.Errors, err
}

// List returns the records of the toolsets that were not removed, sorted
// by name.
func (s *Store) List() []Info { return s.list(false) }

// ListAll returns the records of every toolset the store knows, those
// removed included (status removed, with their history), sorted by name.
func (s *Store) ListAll() []Info { return s.list(true) }

func (s *Store) list(removed bool) []Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Info
	for _, e := range s.entries {
		if e.known() && (removed || e.rec.Status != StatusRemoved) {
			out = append(out, e.rec.Info.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
