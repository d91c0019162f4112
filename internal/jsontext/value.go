package jsontext

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Object is a JSON object that keeps its members in order. The zero
// Object is empty and ready to use. Keys are unique: [Parser] merges the
// members of a document that repeat a key, and Set replaces a value in
// place.
type Object struct {
	members []Member
	index   map[string]int // key to position, once there are many members
}

// Member is one member of an [Object].
type Member struct {
	Key   string
	Value any
}

// indexAt is the number of members from which an Object keeps an index.
const indexAt = 16

// Len returns the number of members.
func (o *Object) Len() int { return len(o.members) }

// Members returns the members in order. The caller may replace their
// values in place, but must change keys and membership only through the
// methods of o.
func (o *Object) Members() []Member { return o.members }

// Keys returns the keys in order, in a new slice.
func (o *Object) Keys() []string {
	keys := make([]string, len(o.members))
	for i, m := range o.members {
		keys[i] = m.Key
	}
	return keys
}

func (o *Object) find(key string) int {
	if o.index != nil {
		if i, ok := o.index[key]; ok {
			return i
		}
		return -1
	}
	for i := range o.members {
		if o.members[i].Key == key {
			return i
		}
	}
	return -1
}

// Lookup returns the value of key and whether o has it.
func (o *Object) Lookup(key string) (any, bool) {
	if i := o.find(key); i >= 0 {
		return o.members[i].Value, true
	}
	return nil, false
}

// Get returns the value of key, or nil if o has no such key.
func (o *Object) Get(key string) any {
	v, _ := o.Lookup(key)
	return v
}

// Set replaces the value of key in place, or adds key at the end, and
// reports whether key was already there.
func (o *Object) Set(key string, v any) (replaced bool) {
	if i := o.find(key); i >= 0 {
		o.members[i].Value = v
		return true
	}
	o.members = append(o.members, Member{key, v})
	if o.index != nil {
		o.index[key] = len(o.members) - 1
	} else if len(o.members) > indexAt {
		o.reindex()
	}
	return false
}

func (o *Object) reindex() {
	if len(o.members) <= indexAt {
		o.index = nil
		return
	}
	o.index = make(map[string]int, len(o.members))
	for i, m := range o.members {
		o.index[m.Key] = i
	}
}

// Delete removes key, if o has it.
func (o *Object) Delete(key string) {
	if i := o.find(key); i >= 0 {
		o.members = append(o.members[:i:i], o.members[i+1:]...)
		o.reindex()
	}
}

// Rename gives the member with key from the key to, keeping its position;
// a member that already had the key to is removed.
func (o *Object) Rename(from, to string) {
	i := o.find(from)
	if i < 0 || from == to {
		return
	}
	if o.find(to) >= 0 {
		o.Delete(to)
		i = o.find(from)
	}
	o.members[i].Key = to
	if o.index != nil {
		delete(o.index, from)
		o.index[to] = i
	}
}

// Parser reads one JSON document into a value: nil, bool, json.Number,
// string, []any or *[Object]. The zero Parser reads within the default
// [Limits] and merges duplicate keys as encoding/json does.
type Parser struct {
	Limits Limits

	// Duplicate, if set, is called for each object member whose key an
	// earlier member of the same object has, with the decoded key and the
	// byte offset of the later key. An error stops the parse and is
	// returned. If it returns nil, or is nil, the member's value replaces
	// the earlier one in the earlier one's position, as encoding/json
	// keeps the last value.
	Duplicate func(key string, offset int) error
}

// Parse reads data, which must hold one JSON value and white space around
// it.
func (p *Parser) Parse(data []byte) (any, error) {
	l := NewLexer(data, p.Limits)
	t, err := l.Next()
	if err != nil {
		return nil, err
	}
	v, err := p.value(&l, t)
	if err != nil {
		return nil, err
	}
	if _, err := l.Next(); err != nil {
		return nil, err
	}
	return v, nil
}

// value reads the value whose first token is t.
func (p *Parser) value(l *Lexer, t Token) (any, error) {
	switch t.Kind {
	case Null:
		return nil, nil
	case True:
		return true, nil
	case False:
		return false, nil
	case Number:
		return json.Number(l.data[t.Start:t.End]), nil
	case String:
		return unquote(l.data[t.Start+1:t.End-1], t.Flags), nil
	case ArrayStart:
		a := []any{}
		for {
			t, err := l.Next()
			if err != nil {
				return nil, err
			}
			if t.Kind == ArrayEnd {
				return a, nil
			}
			v, err := p.value(l, t)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	}
	// ObjectStart: the lexer returns no other kind at a value's start.
	o := &Object{}
	for {
		t, err := l.Next()
		if err != nil {
			return nil, err
		}
		if t.Kind == ObjectEnd {
			return o, nil
		}
		key, at := unquote(l.data[t.Start+1:t.End-1], t.Flags), t.Start
		if t, err = l.Next(); err != nil {
			return nil, err
		}
		v, err := p.value(l, t)
		if err != nil {
			return nil, err
		}
		if o.Set(key, v) && p.Duplicate != nil {
			if err := p.Duplicate(key, at); err != nil {
				return nil, err
			}
		}
	}
}

// Append appends v, a value as [Parser] makes them, compactly to dst, with
// object members in their order and numbers as written. Strings are
// written as Go 1.26's encoding/json writes them without HTML escaping:
// each invalid UTF-8 byte becomes the escape \ufffd on every toolchain (Go
// 1.27's encoding/json writes the raw replacement character instead), so
// that the bytes the library produces do not depend on the toolchain that
// built it. It panics on
// a value of any other type, which is a programming error.
func Append(dst []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, t)
	case json.Number:
		return append(dst, t...)
	case string:
		return appendQuoted(dst, t)
	case []any:
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = Append(dst, e)
		}
		return append(dst, ']')
	case *Object:
		dst = append(dst, '{')
		for i, m := range t.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendQuoted(dst, m.Key)
			dst = append(dst, ':')
			dst = Append(dst, m.Value)
		}
		return append(dst, '}')
	}
	panic(fmt.Sprintf("jsontext: %T is not a JSON value", v))
}

// Unordered returns v with every *Object replaced by a map[string]any, the
// form encoding/json decodes into an any (with UseNumber).
func Unordered(v any) any {
	switch t := v.(type) {
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = Unordered(e)
		}
		return a
	case *Object:
		m := make(map[string]any, len(t.members))
		for _, kv := range t.members {
			m[kv.Key] = Unordered(kv.Value)
		}
		return m
	}
	return v
}
