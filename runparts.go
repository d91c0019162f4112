package toolset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/gotoolset/toolset/internal/canonjson"
)

// A runPart is the per-run state of one policy: what the policy keeps for
// a run (a tool's failing steps, a search's reveals, ...), how the run
// saves it and how it restores it. Its value is a field of the run's
// runParts, guarded by runState.mu; the zero value keeps nothing, so a run
// that no policy writes to allocates nothing for it, and End drops every
// part at once by zeroing runParts.
//
// A run's saved state (see runstate.go) has one section per part, under
// the part's key, in the order of runParts.list. The part's type
// documents its section.
type runPart interface {
	// key names the part's section of the saved state.
	key() string
	// save returns the part's section, which encoding/json encodes once
	// the run's lock is released (a cached result's encoding is the
	// application's code). A section that encodes as null is left out.
	// The caller holds runState.mu.
	save(sv saving) any
	// section returns a pointer to a new value of the type the part's
	// section decodes into (see stateType).
	section() any
	// restore reads the part's section of a saved state, decoded into v
	// (a value section made; its zero value when the state has none),
	// into the part, checking it as the untrusted input it is. It runs on
	// a run just made, not yet shared; the caller holds runState.mu.
	restore(v any, r *restoring) error
}

// A toolPart is a runPart whose entries belong to tools. The saved state
// names a tool by the name it was offered under and the hash of its
// schema (toolID). An entry restored from it waits in the run's
// durability (see restoring.wait) until BuildTools offers, or a call
// runs, a tool of that name and schema; bind then gives the entry to that
// tool, and until then saving lists it (see saving.restored).
type toolPart interface {
	runPart
	// bind gives c the entry v that the part restored for c's name and
	// schema, and reports whether c now has an entry the saved state
	// names it by. The caller holds runState.mu.
	bind(c *toolCore, v any) bool
}

// runParts is the per-run state of every policy that keeps some: one
// field for each part, listed again, in the same order, by list.
//
// To add a per-run policy, declare its part in the policy's own file: a
// type whose pointer implements runPart (toolPart if its entries belong
// to tools), its section's JSON form documented at the type, and the
// policy's RunContext methods, which read and write the part under
// runState.mu and call runState.markDirty after a change so that a run
// with a store saves it. Then add the part here, as a field and in
// list, at the end, under a key no other part has: the order is that of
// the saved state's sections, which the golden files of testdata pin,
// and TestRunPartsListEveryField checks that the two lists agree.
type runParts struct {
	approvals approvalPart // approval.go
	pending   pendingPart  // approval.go
	reveals   revealPart   // search.go
	failures  failurePart  // failures.go
	caches    cachePart    // runcache.go
	marks     markPart     // runmarks.go
	limits    limitPart    // limits.go
	journal   journalPart  // journal.go
}

// list returns the parts in the order of their sections.
func (p *runParts) list() []runPart {
	return []runPart{&p.approvals, &p.pending, &p.reveals, &p.failures, &p.caches, &p.marks, &p.limits, &p.journal}
}

// saving is what the parts share while a run's state is saved.
type saving struct {
	now time.Time
	d   *durability
}

// name returns the name that the saved state gives the tool c, and
// whether it has one: a tool whose schema has no JSON form has none, and
// its entries stay in this process.
func (sv saving) name(c *toolCore) (toolID, bool) {
	id, ok := sv.d.ids[c]
	return id, ok
}

// restored returns the entries p restored that still wait for their
// tools, to be saved again.
func (sv saving) restored(p toolPart) iter.Seq2[toolID, any] {
	return func(yield func(toolID, any) bool) {
		for id, es := range sv.d.restored {
			for _, e := range es {
				if e.part == p && !yield(id, e.v) {
					return
				}
			}
		}
	}
}

// restoring is what the parts share while a saved state is restored.
type restoring struct {
	step int       // the saved step
	now  time.Time // when the state was loaded
	d    *durability
}

// restoredEntry is an entry of part restored for a tool not offered yet.
type restoredEntry struct {
	part toolPart
	v    any
}

// wait keeps the entry v of p until a tool of id's name and schema comes
// to bind it.
func (r *restoring) wait(p toolPart, id toolID, v any) {
	d := r.d
	if d.restored == nil {
		d.restored = make(map[toolID][]restoredEntry)
		d.names = make(map[string]struct{})
	}
	d.restored[id] = append(d.restored[id], restoredEntry{p, v})
	d.names[id.name] = struct{}{}
}

// encodeState returns the saved state: the JSON object of head, followed
// by the sections of parts that do not encode as null. size is a guess
// of the state's size, to allocate its bytes once.
func encodeState(head any, parts []runPart, sections []any, size int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(size)
	enc := json.NewEncoder(&buf) // as json.Marshal, and a newline after each value
	if err := enc.Encode(head); err != nil {
		return nil, err
	}
	buf.Truncate(buf.Len() - len("}\n"))
	for i, p := range parts {
		mark := buf.Len()
		buf.WriteString(`,"`)
		buf.WriteString(p.key())
		buf.WriteString(`":`)
		value := buf.Len()
		if err := enc.Encode(sections[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", p.key(), err)
		}
		if string(buf.Bytes()[value:]) == "null\n" {
			buf.Truncate(mark)
		} else {
			buf.Truncate(buf.Len() - 1)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// stateType is the type a saved state decodes into: a struct of the
// fields of savedHead, then one field for each part, of its section's
// type, under its key. The state is decoded in one pass, and as
// encoding/json decodes a struct, which is how earlier versions of this
// library read it: a key matches exactly or else whatever its case, the
// last of a key given twice wins, and keys that name no field are
// ignored.
var stateType = sync.OnceValue(func() reflect.Type {
	head := reflect.TypeFor[savedHead]()
	fields := make([]reflect.StructField, 0, head.NumField()+len((&runParts{}).list()))
	for i := range head.NumField() {
		fields = append(fields, head.Field(i))
	}
	for i, p := range (&runParts{}).list() {
		fields = append(fields, reflect.StructField{
			Name: "Part" + strconv.Itoa(i),
			Type: reflect.TypeOf(p.section()).Elem(),
			Tag:  reflect.StructTag(`json:"` + p.key() + `"`),
		})
	}
	return reflect.StructOf(fields)
})

// decodeState decodes a saved state into its head and a section for each
// of parts, which must be the list of a runParts. A key of the wrong JSON
// type leaves its field zero, and the error (a *json.UnmarshalTypeError)
// says which; the other fields are decoded all the same.
func decodeState(data []byte, parts []runPart) (savedHead, []any, error) {
	v := reflect.New(stateType()).Elem()
	err := json.Unmarshal(data, v.Addr().Interface())
	var head savedHead
	h := reflect.ValueOf(&head).Elem()
	for i := range h.NumField() {
		h.Field(i).Set(v.Field(i))
	}
	sections := make([]any, len(parts))
	for i := range parts {
		sections[i] = v.Field(h.NumField() + i).Addr().Interface()
	}
	return head, sections, err
}

// toolID names a tool in saved state: the name it was offered under and
// the hash of its parameter schema, or, for an entry that belongs to the
// tool's identity (see failurePart), the name and the tool's origin.
type toolID struct{ name, schema, origin string }

// schemaHash returns the hash that names t's parameter schema in saved
// state and in approvals: "sha256:" and the hex SHA-256 of the schema's
// canonical JSON.
func schemaHash(t Tool) (string, error) {
	js, err := t.ParametersJSON()
	if err != nil {
		return "", err
	}
	canon, err := canonjson.Append(nil, js)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// identify records the name of t, offered as name, in the saved state of
// a run with a store, for a part that makes an entry of t. The caller
// holds s.mu.
func (s *runState) identify(t Tool, name string) {
	d := s.durable
	if d == nil || t.core == nil {
		return
	}
	if _, ok := d.ids[t.core]; ok {
		return
	}
	h, err := schemaHash(t)
	if err != nil {
		return // not saved: the tool's schema has no JSON form
	}
	s.nameTool(t.core, toolID{name: name, schema: h})
}

// nameTool records the name of c in saved state, if it has none yet. The
// caller holds s.mu.
func (s *runState) nameTool(c *toolCore, id toolID) {
	d := s.durable
	if _, ok := d.ids[c]; ok {
		return
	}
	if d.ids == nil {
		d.ids = make(map[*toolCore]toolID)
	}
	d.ids[c] = id
}

// waiting reports whether restored entries of a run with a store wait
// for their tools. The caller holds s.mu.
func (s *runState) waiting() bool {
	return s.durable != nil && len(s.durable.restored) > 0
}

// bindRestored gives the restored entries of each tool offered this turn
// (tools, those of keep) to that tool.
func (rc *RunContext) bindRestored(tools []Tool, keep []bool) {
	s := rc.state()
	if s == nil || s.durable == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range tools {
		if !s.waiting() {
			return
		}
		if keep == nil || keep[i] {
			s.bindTool(t)
		}
	}
}

// bindTool gives t the restored entries saved under its name and schema,
// for a call of t outside a turn's list.
func (rc *RunContext) bindTool(t Tool) {
	if rc == nil || rc.st == nil || rc.st.durable == nil {
		return
	}
	s := rc.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting() {
		s.bindTool(t)
	}
}

// bindTool gives t the restored entries saved under its name and
// schema, and, if it has an origin, those saved under its name and
// origin (see failurePart). The caller holds s.mu.
func (s *runState) bindTool(t Tool) {
	if t.core == nil {
		return
	}
	if _, ok := s.durable.names[t.Name]; !ok {
		return
	}
	h, err := schemaHash(t)
	if err != nil {
		return
	}
	named := s.bindEntries(t.core, toolID{name: t.Name, schema: h})
	if o := t.core.origin; o != "" && s.bindEntries(t.core, toolID{name: t.Name, origin: o}) {
		named = true
	}
	if named {
		s.nameTool(t.core, toolID{name: t.Name, schema: h})
	}
}

// bindEntries gives c the restored entries saved under id, and reports
// whether c now has one the saved state names it by. The caller holds
// s.mu.
func (s *runState) bindEntries(c *toolCore, id toolID) bool {
	es, ok := s.durable.restored[id]
	if !ok {
		return false
	}
	delete(s.durable.restored, id)
	named := false
	for _, e := range es {
		if e.part.bind(c, e.v) {
			named = true
		}
	}
	return named
}
