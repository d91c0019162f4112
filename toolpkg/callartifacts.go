package toolpkg

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/gotoolset/toolset/toolpkg/internal/protocol"
)

// ArtifactError reports an input artifact a call could not be given: a
// required one that is missing, a name that is not valid, one too large.
// The model sees it, so that it can pass another name.
type ArtifactError struct {
	Toolset, Tool string
	// Param is the parameter that names the artifact.
	Param string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *ArtifactError) Error() string {
	return fmt.Sprintf("toolpkg: toolset %q: tool %q: %s", e.Toolset, e.Tool, e.ModelText())
}

// ModelText implements [toolset.ModelError].
func (e *ArtifactError) ModelText() string {
	return fmt.Sprintf("artifact parameter %q: %s", e.Param, e.Reason)
}

// artifactScope returns the scope of the call's run: from its values
// app_name, user_id and session_id, or, with ScopeByRun, its values
// app_name and user_id and its ID (see [ArtifactOptions]).
func artifactScope(rc *toolset.RunContext, ao ArtifactOptions) ArtifactScope {
	scope := ArtifactScope{AppName: runString(rc, "app_name"), UserID: runString(rc, "user_id"), SessionID: runString(rc, "session_id")}
	if ao.ScopeByRun {
		if id := rc.ID(); id != "" {
			scope.SessionID = "run:" + id
		} else {
			// No run: nothing to share with, not even the next call.
			scope.SessionID = "call:" + randomHex(16)
		}
	}
	return scope
}

// randomSuffixBytes is the size of the random suffix of RandomNames.
const randomSuffixBytes = 12

// randomHex returns n random bytes in hexadecimal.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

// randomName returns name with a random suffix before its extension,
// within MaxArtifactNameBytes: the stem is cut if need be.
func randomName(name string) string {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if stem == "" { // a name that is all extension, such as "_.": keep it whole
		stem, ext = name, ""
	}
	suffix := "-" + randomHex(randomSuffixBytes)
	if len(ext) > 16 {
		stem, ext = name, ""
	}
	if over := len(stem) + len(suffix) + len(ext) - MaxArtifactNameBytes; over > 0 {
		stem = stem[:len(stem)-over] // the name is ASCII (CheckArtifactName)
	}
	return stem + suffix + ext
}

// loadInputs loads the artifacts the call's arguments name, for the
// tool's artifact_params, into work/input, and returns artifact_paths and
// artifact_metadata.
func (c *call) loadInputs(ctx context.Context, args json.RawMessage, work, workView string, scope ArtifactScope) (map[string]string, map[string]protocol.ArtifactInfo, error) {
	paths, metas := map[string]string{}, map[string]protocol.ArtifactInfo{}
	if len(c.tool.ArtifactParams) == 0 {
		return paths, metas, nil
	}
	ao := c.store.artifacts
	var argv map[string]json.RawMessage
	if err := json.Unmarshal(args, &argv); err != nil {
		argv = nil
	}
	fail := func(param, format string, a ...any) error {
		return &ArtifactError{Toolset: c.toolset, Tool: c.tool.Name, Param: param, Reason: fmt.Sprintf(format, a...)}
	}
	params := sortedKeys(c.tool.ArtifactParams)
	used := map[string]bool{}
	count := 0
	// The inputs together are bounded as the outputs are: each is
	// copied to the host's disk, and the model may name one many times.
	var total int64
	for _, p := range params {
		ap := c.tool.ArtifactParams[p]
		raw, ok := argv[p]
		var names []string
		if ok && string(raw) != "null" {
			var one string
			if err := json.Unmarshal(raw, &one); err == nil {
				names = []string{one}
			} else if err := json.Unmarshal(raw, &names); err != nil {
				return nil, nil, fail(p, "expected an artifact name (or a list of names)")
			}
		}
		if len(names) == 0 || (len(names) == 1 && names[0] == "") {
			if ap.Required {
				return nil, nil, fail(p, "an artifact name is required")
			}
			continue
		}
		for i, spec := range names {
			count++
			if count > ao.MaxArtifacts {
				return nil, nil, fail(p, "the call names more than %d artifacts", ao.MaxArtifacts)
			}
			name, version := splitVersion(spec)
			if err := CheckArtifactName(name); err != nil {
				return nil, nil, fail(p, "%s", strings.TrimPrefix(err.Error(), "toolpkg: "))
			}
			ref, rc, err := ao.Store.Load(ctx, scope, name, version)
			if errors.Is(err, ErrArtifactNotFound) {
				if !ap.Required {
					continue
				}
				return nil, nil, fail(p, "no artifact %s%s; the model can only name artifacts that exist", quoteShort(name), versionText(version))
			}
			if err != nil {
				return nil, nil, fmt.Errorf("toolpkg: tool %q: loading artifact %s: %w", c.tool.Name, quoteShort(name), unprefixed{err})
			}
			local := name
			for n := 2; used[local]; n++ {
				local = fmt.Sprintf("%d-%s", n, name)
			}
			used[local] = true
			data, err := io.ReadAll(io.LimitReader(rc, ao.MaxArtifactBytes+1))
			rc.Close()
			if err == nil && int64(len(data)) > ao.MaxArtifactBytes {
				return nil, nil, fail(p, "artifact %s is more than %d bytes", quoteShort(name), ao.MaxArtifactBytes)
			}
			if total += int64(len(data)); err == nil && total > ao.MaxArtifactBytes*4 {
				return nil, nil, fail(p, "the artifacts the call names add up to more than %d bytes", ao.MaxArtifactBytes*4)
			}
			if err == nil {
				err = c.store.writeToolFile(filepath.Join(work, "input", local), data)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("toolpkg: tool %q: loading artifact %s: %w", c.tool.Name, quoteShort(name), unprefixed{err})
			}
			key := p
			if ap.List || len(names) > 1 {
				key = fmt.Sprintf("%s[%d]", p, i)
			}
			lp := filepath.Join(workView, "input", local)
			paths[key] = lp
			metas[key] = protocol.ArtifactInfo{Filename: ref.Name, MIMEType: ref.MIMEType, Version: ref.Version, LocalPath: lp}
		}
	}
	return paths, metas, nil
}

// splitVersion reads "name:3" as version 3 of name; anything else is a
// name, the latest version.
func splitVersion(spec string) (string, int) {
	if i := strings.LastIndexByte(spec, ':'); i > 0 {
		if v, err := strconv.Atoi(spec[i+1:]); err == nil && v > 0 {
			return spec[:i], v
		}
	}
	return spec, 0
}

func versionText(v int) string {
	if v > 0 {
		return fmt.Sprintf(" version %d", v)
	}
	return ""
}

// dataObject is one entry of result.json's data_objects.
type dataObject struct {
	Name        string `json:"name"`
	Content     string `json:"content"`
	IsBinary    bool   `json:"is_binary"`
	MIMEType    string `json:"mime_type"`
	Disposition string `json:"disposition"`
	Description string `json:"description"`
	Preview     string `json:"preview"`
}

// collect turns a tool's result, its data objects and its output files
// into what the caller gets: the *Result itself when there is nothing
// else, else a *toolset.Content whose parts are the result's text, each
// inline object and a reference to each saved artifact, and whose
// Structured value is the *Result (with its Artifacts).
//
// Everything the model or a client is sent of the result is bounded by
// the store's MaxOutputBytes (the budget): the text and the inline parts
// together (an inline object that does not fit is saved instead, a
// preview that does not fit is left out), and, apart, the Structured
// value as JSON (see boundStructured).
func (c *call) collect(ctx context.Context, r *Result, files []outputFile, fileNotes []string, scope ArtifactScope) (any, error) {
	ao := c.store.artifacts
	budget := c.store.opts.MaxOutputBytes
	limit := min(ao.ReturnMaxBytes, budget)
	full := c.secrets.text(r.render())
	// The inline parts share what the text part leaves of the budget.
	inlineLeft := budget - min(len(full), limit)
	fits := func(n int) bool {
		if n > inlineLeft {
			return false
		}
		inlineLeft -= n
		return true
	}
	var notes []string
	var inline []toolset.Part
	saved := 0
	// save saves an artifact and reports whether it did.
	save := func(name, mimeType, desc string, data []byte) bool {
		if saved >= ao.MaxArtifacts {
			notes = append(notes, fmt.Sprintf("artifact %s not saved: a call saves at most %d artifacts", quoteShort(name), ao.MaxArtifacts))
			return false
		}
		if err := CheckArtifactName(name); err != nil {
			notes = append(notes, fmt.Sprintf("artifact not saved: %s", strings.TrimPrefix(err.Error(), "toolpkg: ")))
			return false
		}
		if c.secrets.text(name) != name {
			// The model is shown the name (an output file's is the
			// tool's to choose), and "[secret]" names nothing stored.
			notes = append(notes, "artifact not saved: its name holds a secret value")
			return false
		}
		if int64(len(data)) > ao.MaxArtifactBytes {
			notes = append(notes, fmt.Sprintf("artifact %s not saved: it is %d bytes, more than %d", quoteShort(name), len(data), ao.MaxArtifactBytes))
			return false
		}
		if ao.RandomNames {
			name = randomName(name)
		}
		ref, err := ao.Store.Save(ctx, scope, ArtifactRef{Name: name, MIMEType: mimeType, Description: textcut.Prefix(desc, maxDescriptionBytes)}, bytes.NewReader(data))
		if err != nil {
			c.store.log.Warn("toolpkg: saving an artifact failed", "toolset", c.toolset, "tool", c.tool.Name, "artifact", name, "err", err)
			notes = append(notes, fmt.Sprintf("artifact %s not saved: the artifact store failed", quoteShort(name)))
			return false
		}
		saved++
		r.Artifacts = append(r.Artifacts, ref)
		return true
	}

	// Data objects, in order.
	var objs []dataObject
	if d := bytes.TrimSpace(r.DataObjects); len(d) > 0 && string(d) != "null" {
		if err := json.Unmarshal(d, &objs); err != nil {
			notes = append(notes, "data_objects ignored: not a list of {name, content, mime_type, disposition} objects")
			objs = nil
		}
	}
	for i, o := range objs {
		if i >= ao.MaxArtifacts*2 {
			notes = append(notes, fmt.Sprintf("%d more data objects ignored", len(objs)-i))
			break
		}
		data := []byte(o.Content)
		if o.IsBinary {
			b, err := base64.StdEncoding.DecodeString(o.Content)
			if err != nil {
				notes = append(notes, fmt.Sprintf("data object %s ignored: is_binary is set and its content is not base64", quoteShort(o.Name)))
				continue
			}
			data = b
		}
		mt := o.MIMEType
		if mt == "" {
			mt = "text/plain"
		}
		text := !o.IsBinary && isTextMIME(mt)
		switch disp := o.Disposition; {
		case disp == "inline" || ((disp == "" || disp == "auto") && len(data) <= ao.SaveThresholdBytes):
			var t string
			if text {
				t, _ = capText(c.secrets.text(string(data)), ao.ReturnMaxBytes)
			}
			switch {
			case text && fits(len(t)):
				inline = append(inline, toolset.Part{Text: t})
			case !text && len(data) <= ao.ReturnMaxBytes && fits(len(data)):
				inline = append(inline, toolset.Part{MIMEType: mt, Data: data})
			default:
				// Too large to send, or past the budget: saved instead.
				save(o.Name, mt, c.secrets.text(o.Description), data)
			}
		case disp == "" || disp == "auto" || disp == "artifact" || disp == "artifact_with_preview":
			if save(o.Name, mt, c.secrets.text(o.Description), data) && disp == "artifact_with_preview" {
				name := r.Artifacts[len(r.Artifacts)-1].Name
				preview := o.Preview
				if preview == "" && text {
					preview = string(data)
				}
				if preview != "" {
					t, _ := capText(c.secrets.text(preview), ao.ReturnMaxBytes)
					if t = "preview of " + name + ":\n" + t; fits(len(t)) {
						inline = append(inline, toolset.Part{Text: t})
					} else {
						notes = append(notes, fmt.Sprintf("preview of %s left out: the result is at its size budget", quoteShort(name)))
					}
				}
			}
		default:
			notes = append(notes, fmt.Sprintf("data object %s ignored: unknown disposition %s", quoteShort(o.Name), quoteShort(disp)))
		}
	}

	// Files in output/, in name order.
	notes = append(notes, fileNotes...)
	for _, f := range files {
		save(f.name, mimeOf(f.name, f.data), "", f.data)
	}

	var whole *ArtifactRef
	content := len(r.Artifacts) > 0 || len(inline) > 0 || len(notes) > 0
	// The whole output is saved when it is long, and when the
	// structured result would be over the budget for its message or its
	// data, which the whole output holds: the data then has a home the
	// model can name.
	if len(full) > ao.SaveThresholdBytes || (content && jsonSize(&Result{Status: r.Status, Message: r.Message, Data: r.Data}) > budget) {
		if save(c.tool.Name+"_output.txt", "text/plain", "the whole output of "+c.toolset+"__"+c.tool.Name, []byte(full)) {
			whole = &r.Artifacts[len(r.Artifacts)-1]
		}
	}
	if len(r.Artifacts) == 0 && len(inline) == 0 && len(notes) == 0 {
		// r.text, capped at MaxOutputBytes, as before. A bare *Result
		// reaches a model, and an MCP client, as that text alone.
		return r, nil
	}
	text, cut := capText(full, limit)
	if whole != nil {
		text += fmt.Sprintf("\n[the whole output was saved as artifact %s version %d]", whole.Name, whole.Version)
	}
	r.text, r.truncated = text, cut
	// The parts name every artifact, even when the structured result
	// has no room for their list.
	arts := r.Artifacts
	notes = append(notes, boundStructured(r, budget, whole)...)
	if len(notes) > 0 {
		c.store.log.Warn("toolpkg: a tool's output was not all kept", "toolset", c.toolset, "tool", c.tool.Name, "problems", len(notes))
	}
	parts := []toolset.Part{{Text: text}}
	parts = append(parts, inline...)
	for _, a := range arts {
		b, _ := json.Marshal(a)
		parts = append(parts, toolset.Part{Text: "artifact saved: " + string(b)})
	}
	for _, n := range notes {
		parts = append(parts, toolset.Part{Text: "note: " + c.secrets.text(n)})
	}
	return &toolset.Content{Parts: parts, Structured: r}, nil
}

// maxDescriptionBytes bounds the description of an artifact a call
// saves: the model is shown it in each reference.
const maxDescriptionBytes = 256

// jsonSize is the size of r as JSON, as a client is sent it.
func jsonSize(r *Result) int {
	b, err := json.Marshal(r)
	if err != nil {
		return math.MaxInt
	}
	return len(b)
}

// maxStatusBytes bounds the status of a structured result over the
// budget.
const maxStatusBytes = 64

// boundStructured keeps r, the Structured value of a call's
// *toolset.Content, within budget bytes as JSON: a client of an MCP
// server is sent it whole, and many hand it to the model. While it is
// over, the largest of its data, data_objects, artifact list (which the
// parts repeat) and message is left out (set to nil or ""), then a long
// status is cut. Each such change is said in r.Omitted, and returned, to be
// notes the model reads. whole is the artifact holding the whole output,
// if one was saved: the data and message left out are there (else in the
// text part, when r's text was not cut).
func boundStructured(r *Result, budget int, whole *ArtifactRef) []string {
	if jsonSize(r) <= budget {
		return nil
	}
	where := "; no artifact holds it"
	switch {
	case whole != nil:
		where = fmt.Sprintf("; the whole output, which holds it, is artifact %s version %d", whole.Name, whole.Version)
	case !r.truncated:
		where = "; this result's text holds it"
	}
	omit := func(format string, a ...any) {
		r.Omitted = append(r.Omitted, fmt.Sprintf(format, a...))
	}
	for jsonSize(r) > budget {
		d, o, m := len(r.Data), len(r.DataObjects), len(r.Message)
		a := 0
		if len(r.Artifacts) > 0 {
			b, _ := json.Marshal(r.Artifacts)
			a = len(b)
		}
		switch {
		case d > 0 && d >= o && d >= m && d >= a:
			r.Data = nil
			omit("data (%d bytes) left out of the structured result, which is at most %d bytes%s", d, budget, where)
		case o > 0 && o >= m && o >= a:
			r.DataObjects = nil
			omit("data_objects (%d bytes) left out of the structured result, which is at most %d bytes; its objects are this result's parts and artifacts", o, budget)
		case a > 0 && a >= m:
			n := len(r.Artifacts)
			r.Artifacts = nil
			omit("the list of the %d artifacts saved left out of the structured result, which is at most %d bytes; this result's parts name them", n, budget)
		case m > 0:
			r.Message = ""
			omit("message (%d bytes) left out of the structured result, which is at most %d bytes%s", m, budget, where)
		case len(r.Status) > maxStatusBytes:
			n := len(r.Status)
			r.Status = textcut.Prefix(r.Status, maxStatusBytes)
			omit("status (%d bytes) cut to %d bytes in the structured result", n, len(r.Status))
		default:
			return r.Omitted
		}
	}
	return r.Omitted
}

// outputFile is a regular file a tool left in output/.
type outputFile struct {
	name string
	data []byte
}

// readOutputFiles reads the regular files at the top of dir, which a
// tool wrote: no link is followed, no pipe opened, each file and all of
// them together bounded. What is refused is said in the notes.
func readOutputFiles(dir string, ao ArtifactOptions) ([]outputFile, []string) {
	// Not followed: a link the tool put in its place may name a host
	// directory the tool's user cannot list.
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, []string{"output directory removed by the tool"}
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
		return nil, []string{"output directory replaced by the tool"}
	case err != nil:
		return nil, []string{"output directory unreadable"}
	}
	f := os.NewFile(uintptr(fd), dir)
	// Read at most a bounded number of names.
	names, _ := f.Readdirnames(ao.MaxArtifacts*4 + 1)
	f.Close()
	var notes []string
	if len(names) > ao.MaxArtifacts*4 {
		notes = append(notes, fmt.Sprintf("output directory holds more than %d entries; only the first are looked at", ao.MaxArtifacts*4))
		names = names[:ao.MaxArtifacts*4]
	}
	sort.Strings(names)
	var out []outputFile
	var total int64
	for _, n := range names {
		if err := CheckArtifactName(n); err != nil {
			notes = append(notes, fmt.Sprintf("output file %s skipped: its name is not a valid artifact name", quoteShort(n)))
			continue
		}
		data, err := readWorkFile(dir, n, ao.MaxArtifactBytes)
		var fe *FileError
		switch {
		case errors.As(err, &fe):
			notes = append(notes, "output file "+fe.Error())
			continue
		case err != nil:
			notes = append(notes, fmt.Sprintf("output file %s skipped: unreadable", quoteShort(n)))
			continue
		}
		total += int64(len(data))
		if total > ao.MaxArtifactBytes*4 {
			notes = append(notes, fmt.Sprintf("output file %s skipped: the output files add up to more than %d bytes", quoteShort(n), ao.MaxArtifactBytes*4))
			continue
		}
		out = append(out, outputFile{name: n, data: data})
	}
	return out, notes
}

// isTextMIME reports whether content of the type is text the model can
// read.
func isTextMIME(mt string) bool {
	mt, _, _ = mime.ParseMediaType(mt)
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/xml" || strings.HasSuffix(mt, "+xml") || mt == "application/yaml" || mt == "application/csv"
}

// mimeOf guesses the type of an output file from its extension, then
// its content.
func mimeOf(name string, data []byte) string {
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	switch filepath.Ext(name) {
	case ".csv":
		return "text/csv"
	case ".md":
		return "text/markdown"
	case ".json":
		return "application/json"
	}
	if utf8.Valid(data) && !bytes.ContainsRune(data, 0) {
		return "text/plain"
	}
	return "application/octet-stream"
}
