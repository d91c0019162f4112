package toolset

import (
	"context"
	"sync"
)

// Key names a typed value of a run, such as the caller's role. Make each
// key once, at package level, with [NewKey]; give a run its value with
// [WithValue], and read it in predicates, prepare functions and tools with
// [Key.Get]:
//
//	var Role = toolset.NewKey[string]("role")
//
//	run := toolset.NewRun(id, toolset.WithValue(Role, "admin"))
//	...
//	admin := func(ctx context.Context, _ toolset.Tool) (bool, error) {
//		return Role.Get(ctx) == "admin", nil
//	}
//
// Reading a key costs a few type assertions and a slice index, however
// many values the run has: no string is hashed and, under the contexts
// that BuildTools gives callbacks, no context chain is walked. A Key is a
// comparable value; keys made with the same name read the same value.
type Key[T any] struct {
	name string
	idx  int // the name's index plus one; zero for the zero Key, which reads nothing
}

// keyRegistry gives each key name a small index, the same for every key
// of that name.
var keyRegistry struct {
	sync.RWMutex
	index map[string]int
}

// NewKey returns the key named name. Keys are meant to be made once, at
// start-up: each name made into a key takes a slot in every run that has a
// value under it.
func NewKey[T any](name string) Key[T] {
	keyRegistry.Lock()
	defer keyRegistry.Unlock()
	i, ok := keyRegistry.index[name]
	if !ok {
		if keyRegistry.index == nil {
			keyRegistry.index = make(map[string]int)
		}
		i = len(keyRegistry.index)
		keyRegistry.index[name] = i
	}
	return Key[T]{name: name, idx: i + 1}
}

// Name returns the key's name, under which [RunContext.Value] finds its
// value too.
func (k Key[T]) Name() string { return k.name }

// Get returns the value of the run that ctx carries under k, or the zero
// T when the run has none, has one of another type, or there is no run.
func (k Key[T]) Get(ctx context.Context) T {
	v, _ := k.Lookup(ctx)
	return v
}

// Lookup returns the value of the run that ctx carries under k, and
// whether there is one of type T (a nil value counts as the zero T).
func (k Key[T]) Lookup(ctx context.Context) (T, bool) {
	var s *runState
	if tc, ok := ctx.(*turnContext); ok {
		s = tc.rc.state()
	} else {
		s = FromContext(ctx).state()
	}
	var zero T
	if s == nil {
		return zero, false
	}
	if i := k.idx - 1; i >= 0 && i < len(s.vals) && s.vals[i].ok {
		return asT[T](s.vals[i].v)
	}
	if s.unindexed && k.idx > 0 {
		if v, ok := s.byName[k.name]; ok {
			return asT[T](v)
		}
	}
	return zero, false
}

// asT returns v as a T. A nil v is the zero T: the value of a key of an
// interface type set to nil.
func asT[T any](v any) (T, bool) {
	if v == nil {
		var zero T
		return zero, true
	}
	t, ok := v.(T)
	return t, ok
}

// keyedValue is a run's value at its key's index; ok tells a value set
// to nil from none.
type keyedValue struct {
	v  any
	ok bool
}

// indexValues places the values whose names are keys at their keys'
// indexes, and reports whether some names are not keys (yet). Names are
// not made keys here: names from outside the program would otherwise grow
// the registry without bound.
func indexValues(m map[string]any) (vals []keyedValue, unindexed bool) {
	keyRegistry.RLock()
	defer keyRegistry.RUnlock()
	for name, v := range m {
		i, ok := keyRegistry.index[name]
		if !ok {
			unindexed = true
			continue
		}
		if i >= len(vals) {
			vals = append(vals, make([]keyedValue, i+1-len(vals))...)
		}
		vals[i] = keyedValue{v: v, ok: true}
	}
	return vals, unindexed
}

// WithValue gives the run the value v under k, read with [Key.Get].
func WithValue[T any](k Key[T], v T) RunOption {
	return func(c *runConfig) { c.set(k.name, v) }
}

// WithValues gives the run the values of m under their names, for code
// that knows values by name only (read them with [RunContext.Value], or
// with a [Key] of the same name and type). m is copied.
func WithValues(m map[string]any) RunOption {
	return func(c *runConfig) {
		for name, v := range m {
			c.set(name, v)
		}
	}
}

func (c *runConfig) set(name string, v any) {
	if c.vals == nil {
		c.vals = make(map[string]any)
	}
	c.vals[name] = v
}

// WithDeps gives the run the application's dependencies (a database
// handle, an HTTP client, ...), read with [DepsAs] or [RunContext.Deps].
func WithDeps(deps any) RunOption {
	return func(c *runConfig) { c.deps, c.hasDep = deps, true }
}

// Value returns the run's value named name, or nil.
func (rc *RunContext) Value(name string) any {
	if s := rc.state(); s != nil {
		return s.byName[name]
	}
	return nil
}

// Deps returns the run's dependencies, or nil.
func (rc *RunContext) Deps() any {
	if s := rc.state(); s != nil {
		return s.deps
	}
	return nil
}

// DepsAs returns the run's dependencies as a T, and whether they are one.
func DepsAs[T any](ctx context.Context) (T, bool) {
	d, ok := FromContext(ctx).Deps().(T)
	return d, ok
}
