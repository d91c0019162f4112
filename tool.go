package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/invopop/jsonschema"
	"golang.org/x/time/rate"
)

// Tool is one tool as the model sees it (name, description, parameter
// schema, optional result schema) plus a pointer to the code and state
// behind it.
//
// A Tool is a value: copy it, rename it, edit its description. Copies share
// the code and state behind it, so a prefixed or renamed copy is the same
// tool under another name; [Tool.Same] tells. The schemas and the metadata
// map are shared by copies too: replace them, never modify them in place.
//
// A Tool is also a [Toolset] of one. Passed to [BuildTools] on its own, it
// counts as a standalone tool.
//
// Tool has no builder methods, on purpose: it is a value, not a toolset
// type, so put it in a [NewFunction] to chain, as in
// NewFunction(t).Prefixed("x").
type Tool struct {
	// Name is what the model calls. It must match ^[a-zA-Z0-9_-]{1,64}$,
	// which BuildTools checks.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// Parameters is the JSON Schema of the arguments object.
	Parameters *jsonschema.Schema
	// Returns is the JSON Schema of the result, or nil.
	Returns *jsonschema.Schema
	// Metadata is for the application; it is never sent to the model.
	Metadata map[string]string

	core     *toolCore
	mw       *layer // middleware of the wrappers this copy came through
	prepared bool   // this copy went through its prepare function this turn
}

// RawHandler is the code behind a tool made with [NewRawTool]: it receives
// the arguments as JSON, already validated against the tool's parameter
// schema, and returns the result for the model.
type RawHandler func(ctx context.Context, args json.RawMessage) (any, error)

// ToolOption configures a tool made with [NewTool] or [NewRawTool].
type ToolOption func(*Tool)

// WithMetadata sets the tool's metadata: key-value pairs for the
// application, never sent to the model.
func WithMetadata(md map[string]string) ToolOption {
	return func(t *Tool) {
		if t.Metadata == nil {
			t.Metadata = make(map[string]string, len(md))
		}
		for k, v := range md {
			t.Metadata[k] = v
		}
	}
}

// WithReturns sets the JSON Schema of the tool's result.
func WithReturns(s *jsonschema.Schema) ToolOption {
	return func(t *Tool) { t.Returns = s }
}

// toolCore is the code and state behind a tool, shared by all its copies.
type toolCore struct {
	name    string             // the name the tool was made with
	params  *jsonschema.Schema // the schema the tool was made with
	handler RawHandler
	// fused, when not nil, is handler for arguments not yet validated:
	// it validates and decodes them in one pass (see validated), and
	// returns a *refusedArgs for arguments the schema refuses.
	fused RawHandler
	err   error // why the tool cannot be used, found at construction

	valOnce sync.Once
	val     *validator

	schemaOnce sync.Once
	schemaJSON json.RawMessage
	schemaErr  error

	edited editedValidators
	solo   atomic.Pointer[snapshot] // the tool as a toolset of one, for memoisation
	fresh  atomic.Pointer[snapshot] // the last list from a caller's toolset that began with this tool

	policies
}

// NewRawTool makes a tool from a ready JSON Schema and a handler that takes
// the arguments as JSON, for tools whose schema comes from elsewhere (an
// MCP server, a package manifest). A nil schema means the tool takes no
// arguments. Arguments are validated against the schema before fn runs.
//
// The schema is compiled here, once: a schema the validator cannot compile,
// or one that refers outside itself (a "$ref" to a file or a URL, see
// [SchemaRefError]), makes the tool unusable, and [Tool.Err] says why,
// naming the tool and the reference. No schema ever makes the program load
// a file or a URL.
func NewRawTool(name, description string, params *jsonschema.Schema, fn RawHandler, opts ...ToolOption) Tool {
	if params == nil {
		params = emptyObjectSchema()
	}
	core := newCore(name, params, fn)
	if err := core.validatorFor(params).compile(); err != nil {
		core.err = err // it says "parameter schema", or names the reference
	} else if fn == nil {
		core.err = errors.New("nil handler")
	}
	return newTool(core, description, opts)
}

// policies are the options of a tool, shared by all its copies.
type policies struct {
	enabled       Predicate
	prepare       PrepareToolFunc
	env           []string
	deferred      bool
	approval      NeedsApprovalFunc
	maxFailures   int           // zero: failures are not counted
	callLimit     int           // calls per run; zero: no bound (see WithCallLimit)
	sequential    bool          // see WithSequential
	effects       *Effects      // see WithEffects; nil: none declared
	effectsBy     string        // who declared effects
	approvalBy    string        // why EffectPolicies set approval; "": explicit
	sequentialBy  string        // why EffectPolicies set sequential; "": explicit
	resumeRerun   bool          // see WithResumeRerun
	resumeBy      string        // why EffectPolicies set resumeRerun; "": explicit
	guards        *toolCore     // the tool a guarded tool runs, or nil
	budget        *ResultBudget // see WithResultBudget; nil: none
	resources     []string      // see WithResource
	timeout       time.Duration
	timeoutAborts bool
	origin        string // see WithOrigin; empty: none
	limiter       *rate.Limiter
	windows       *rateWindows // the windows of the option that made limiter
	rateReject    bool
	rateShared    *RateLimit // a limit kept by its Limiter; then limiter is nil
	cache         *cacheConfig
	mw            []Middleware
	chain         Handler // mw around base, composed once
	delegate      Agent
	search        *searchState
}

func newCore(name string, params *jsonschema.Schema, fn RawHandler) *toolCore {
	c := &toolCore{name: name, params: params, handler: fn}
	c.chain = c.base
	return c
}

func newTool(core *toolCore, description string, opts []ToolOption) Tool {
	t := Tool{Name: core.name, Description: description, Parameters: core.params, core: core}
	applyOptions(&t, opts)
	return t
}

// Err returns the reason the tool cannot be used, such as an argument type
// with no JSON Schema, or nil. [NewFunction] and [BuildTools] report it too;
// Err lets a program check its tools at start-up.
func (t Tool) Err() error {
	if t.core == nil {
		return fmt.Errorf("tool %q has no handler; make tools with NewTool or NewRawTool", t.Name)
	}
	if t.core.err != nil {
		return fmt.Errorf("tool %q: %w", t.core.name, t.core.err)
	}
	return nil
}

// Same reports whether t and u are the same underlying tool, one perhaps a
// renamed, prefixed or edited copy of the other. Copies share their state.
func (t Tool) Same(u Tool) bool { return t.core != nil && t.core == u.core }

// GetTools returns the tool itself, making a Tool a [Toolset] of one. A
// tool hidden this turn by its enabled predicate (see [WithEnabled]) yields
// nothing, and its prepare function (see [WithPrepare]) runs first.
func (t Tool) GetTools(ctx context.Context) ([]Tool, error) { return getTools(ctx, t) }

// view returns the tool as a toolset of one, memoised on the tool's core so
// that later turns reuse the same snapshot.
func (t Tool) view(ctx context.Context, sc *scratch) (view, error) {
	if err := t.Err(); err != nil {
		return view{}, err
	}
	sc.explaining().fresh(1)
	return leafView(ctx, view{snap: t.soloSnapshot()}, sc)
}

// soloSnapshot returns the snapshot of the tool as a toolset of one.
func (t Tool) soloSnapshot() *snapshot {
	s := t.core.solo.Load()
	if s == nil || !sameToolValue(s.tools[0], t) {
		s = newSnapshot([]Tool{t})
		t.core.solo.Store(s)
	}
	return s
}

// sameToolValue reports whether a and b are identical values, comparing
// schemas and metadata by identity.
func sameToolValue(a, b Tool) bool {
	return a.core == b.core && a.Name == b.Name && a.Description == b.Description &&
		a.Parameters == b.Parameters && a.Returns == b.Returns && sameMap(a.Metadata, b.Metadata) &&
		a.mw == b.mw && a.prepared == b.prepared
}

func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// ParametersJSON returns the JSON encoding of the tool's parameter schema,
// as sent to a model. The encoding of the schema the tool was made with is
// computed once and shared by all copies.
func (t Tool) ParametersJSON() (json.RawMessage, error) {
	s := t.Parameters
	if s == nil {
		s = emptyObjectSchema()
	}
	if t.core == nil || s != t.core.params {
		return marshalSchema(s)
	}
	c := t.core
	c.schemaOnce.Do(func() { c.schemaJSON, c.schemaErr = marshalSchema(c.params) })
	return c.schemaJSON, c.schemaErr
}

// normalizeArgs treats empty arguments and null as an empty object: models
// send either for tools without parameters.
func normalizeArgs(args json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}")
	}
	return args
}

// validatorFor returns the validator for schema s: the tool's own, compiled
// once, or one for a schema edited per turn (by a Prepared toolset).
func (c *toolCore) validatorFor(s *jsonschema.Schema) *validator {
	if s == nil || s == c.params {
		c.valOnce.Do(func() { c.val = newValidator(c.params) })
		return c.val
	}
	return c.edited.get(s)
}

// editedValidators caches validators for schemas edited per turn, keeping
// the most recent few.
type editedValidators struct {
	mu   sync.Mutex
	keys []*jsonschema.Schema
	vals []*validator
}

const maxEditedValidators = 8

func (e *editedValidators) get(s *jsonschema.Schema) *validator {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, k := range e.keys {
		if k == s {
			return e.vals[i]
		}
	}
	v := newValidator(s)
	if len(e.keys) == maxEditedValidators {
		e.keys, e.vals = e.keys[1:], e.vals[1:]
	}
	e.keys, e.vals = append(e.keys, s), append(e.vals, v)
	return v
}
