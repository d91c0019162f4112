package provider

import (
	"encoding/json"
	"sync"
	"unsafe"

	"github.com/gotoolset/toolset"
)

// schemaCacheSize is how many schemas a [SchemaCache] holds before it
// starts afresh.
const schemaCacheSize = 1024

// SchemaCache remembers the provider form of tools' parameter schemas, so
// that a turn over unchanged tools neither parses nor rewrites their
// schemas again. It is keyed by the encoded schema a tool caches:
// [toolset.Tool.ParametersJSON] returns the same bytes, never written to,
// for as long as the tool is unchanged, so their address and length name
// the schema, and an entry holds on to the bytes it is keyed by. Errors
// are cached too. A SchemaCache is safe for concurrent use; the zero value
// is not usable, make one with [NewSchemaCache].
type SchemaCache[V any] struct {
	convert func(json.RawMessage) (V, error)

	mu sync.Mutex
	m  map[schemaKey]schemaEntry[V]
}

type schemaKey struct {
	p *byte
	n int
}

type schemaEntry[V any] struct {
	v   V
	err error
}

// NewSchemaCache returns a cache of the provider form convert makes of an
// encoded parameter schema. The values are shared by every caller: convert
// must return values nobody writes to.
func NewSchemaCache[V any](convert func(json.RawMessage) (V, error)) *SchemaCache[V] {
	return &SchemaCache[V]{convert: convert}
}

// Of returns the provider form of t's parameter schema. The error is that
// of [toolset.Tool.ParametersJSON] or of the conversion, not yet naming the
// tool.
func (c *SchemaCache[V]) Of(t toolset.Tool) (V, error) {
	raw, err := t.ParametersJSON()
	if err != nil {
		var zero V
		return zero, err
	}
	return c.Get(raw)
}

// Get returns the provider form of the encoded schema raw, as [SchemaCache.Of]
// does of a tool's. The cache knows raw by its address and length, not by
// its content: raw must not be written to once given, and bytes equal to
// an earlier raw but held elsewhere are converted again.
func (c *SchemaCache[V]) Get(raw json.RawMessage) (V, error) {
	if len(raw) == 0 {
		return c.convert(raw)
	}
	k := schemaKey{unsafe.SliceData(raw), len(raw)}
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return e.v, e.err
	}
	v, err := c.convert(raw)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= schemaCacheSize {
		c.m = make(map[schemaKey]schemaEntry[V])
	}
	c.m[k] = schemaEntry[V]{v, err}
	c.mu.Unlock()
	return v, err
}
