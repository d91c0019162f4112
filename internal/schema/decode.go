package schema

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/gotoolset/toolset/internal/jsontext"
)

// A typed tool's call used to read its arguments twice: the fast check
// proved them valid, then encoding/json decoded them into the argument
// struct. [Validator.Decode] does both in one pass: it walks the tokens
// once, checking each against the compiled schema as the fast check does
// and storing it into the struct as encoding/json would.
//
// It covers only what it can decode exactly as encoding/json does: structs
// of strings, booleans, integers and floats, and of pointers, slices and
// structs of those (but []byte, which is base64), with
// plain field names, matched by their exact name, and none that decodes
// itself. Anything else (an escaped or non-UTF-8 string, a key that is not
// exactly a field's name, which encoding/json would match ignoring case, a
// null, a number that does not fit, a value the fast check cannot prove)
// makes it give up, and the caller takes the two-pass path, which gives the
// verdict, the errors and the value.

// Plan is how the values of one Go type are decoded by [Validator.Decode].
// It is immutable once made and safe for concurrent use.
type Plan struct {
	kind   planKind
	bits   int // of an integer or float
	fields []planField
	typ    reflect.Type // of a slice, or of what a pointer points to
	elem   *Plan        // of a slice or a pointer
}

type planKind uint8

const (
	planString planKind = iota
	planBool
	planInt
	planUint
	planFloat
	planStruct
	planSlice
	planPointer
)

// planField is a struct field: its JSON name, its offset in the struct
// and how its value is decoded.
type planField struct {
	name string
	off  uintptr
	plan *Plan
}

// maxPlanDepth bounds the nesting of the structs a plan follows.
const maxPlanDepth = 16

// NewPlan returns the plan of t, or nil when t holds anything
// [Validator.Decode] does not decode exactly as encoding/json does.
func NewPlan(t reflect.Type) *Plan {
	if t.Kind() != reflect.Struct {
		return nil
	}
	return (&planner{made: map[planKey]*Plan{}}).plan(t, 0)
}

// planner makes the plans of one type. A type met again at the same
// depth gets the plan made the first time (plans are immutable), so a
// type that many fields share at each level costs one plan per level,
// not one per path to it, which multiplies level by level.
type planner struct {
	made map[planKey]*Plan
}

type planKey struct {
	t     reflect.Type
	depth int
}

func (pl *planner) plan(t reflect.Type, depth int) *Plan {
	k := planKey{t, depth}
	if p, ok := pl.made[k]; ok {
		return p
	}
	p := pl.newPlan(t, depth)
	pl.made[k] = p
	return p
}

func (pl *planner) newPlan(t reflect.Type, depth int) *Plan {
	if depth > maxPlanDepth || decodesItself(t) || t == numberType || t == durationType {
		return nil // json.Number checks its string; time.Duration is left out to be sure
	}
	switch t.Kind() {
	case reflect.String:
		return &Plan{kind: planString}
	case reflect.Bool:
		return &Plan{kind: planBool}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &Plan{kind: planInt, bits: t.Bits()}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &Plan{kind: planUint, bits: t.Bits()}
	case reflect.Float32, reflect.Float64:
		return &Plan{kind: planFloat, bits: t.Bits()}
	case reflect.Pointer:
		elem := pl.plan(t.Elem(), depth+1)
		if elem == nil {
			return nil
		}
		return &Plan{kind: planPointer, typ: t.Elem(), elem: elem}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // base64
		}
		elem := pl.plan(t.Elem(), depth+1)
		if elem == nil {
			return nil
		}
		return &Plan{kind: planSlice, typ: t, elem: elem}
	case reflect.Struct:
	default:
		return nil
	}
	p := &Plan{kind: planStruct}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil // embedded: encoding/json's rules of dominance
		}
		if !f.IsExported() {
			continue
		}
		name, ok := plainFieldName(f)
		if !ok {
			return nil
		}
		if name == "" {
			continue // json:"-"
		}
		for _, g := range p.fields {
			if equalFoldASCII(g.name, name) {
				return nil // encoding/json drops or ranks such fields
			}
		}
		fp := pl.plan(f.Type, depth+1)
		if fp == nil {
			return nil
		}
		p.fields = append(p.fields, planField{name: name, off: f.Offset, plan: fp})
	}
	return p
}

var (
	numberType   = reflect.TypeFor[json.Number]()
	durationType = reflect.TypeFor[time.Duration]()
)

// plainFieldName returns the JSON name of f, "" for a field encoding/json
// skips, and false when its tag asks for anything but a plain name and
// omitempty or omitzero.
func plainFieldName(f reflect.StructField) (string, bool) {
	tag, tagged := f.Tag.Lookup("json")
	if !tagged {
		return f.Name, plainName(f.Name)
	}
	if tag == "-" {
		return "", true
	}
	name, opts, _ := strings.Cut(tag, ",")
	for opts != "" {
		var opt string
		opt, opts, _ = strings.Cut(opts, ",")
		if opt != "omitempty" && opt != "omitzero" {
			return "", false
		}
	}
	if name == "" {
		name = f.Name
	}
	return name, plainName(name)
}

// plainName reports whether name is made of ASCII letters, digits and
// underscores only, which every version of encoding/json takes as it is.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// decodesItself reports whether values of t, or pointers to them, have a
// method through which encoding/json (version 1 or 2) would decode them.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	if pt.NumMethod() == 0 {
		return false
	}
	for _, m := range []string{"UnmarshalJSON", "UnmarshalJSONFrom", "UnmarshalText"} {
		if _, ok := pt.MethodByName(m); ok {
			return true
		}
	}
	return false
}

// lookup returns the field named key exactly, or nil.
func (p *Plan) lookup(key []byte) *planField {
	for i := range p.fields {
		f := &p.fields[i]
		if len(f.name) == len(key) && f.name == string(key) {
			return f
		}
	}
	return nil
}

// Decode proves args valid against the schema and decodes them into dst,
// a pointer to a zero value of the type p was made for, in one pass. It
// reports whether it did both; when it did not, args may still be valid,
// dst may hold part of them, and the caller validates and decodes them
// the usual way, into a new zero value.
func (v *Validator) Decode(args []byte, p *Plan, dst unsafe.Pointer) bool {
	if v.fast == nil || !v.fast.fast || p == nil {
		return false
	}
	d := decoder{data: args}
	d.lex = jsontext.NewLexer(args, lexLimits)
	t, err := d.lex.Next()
	if err != nil || !d.value(v.fast.root, p, t, dst) {
		return false
	}
	_, err = d.lex.Next() // End, or data after the value
	return err == nil
}

// decoder is the state of one Decode.
type decoder struct {
	data []byte
	lex  jsontext.Lexer
	// text is a copy of data, made at the first string stored: every
	// string decoded is a part of it, so that a call's strings cost one
	// allocation. Only short arguments are copied whole, so that a
	// string the handler keeps holds on to little more than itself.
	text string
}

// maxSharedText bounds the arguments whose strings share one copy.
const maxSharedText = 1024

// str returns the raw content of the string token t, which is its
// decoded form, as a string the decoded value may keep.
func (d *decoder) str(t jsontext.Token) string {
	if len(d.data) > maxSharedText {
		return string(d.data[t.Start+1 : t.End-1])
	}
	if d.text == "" {
		d.text = string(d.data)
	}
	return d.text[t.Start+1 : t.End-1]
}

// value checks the value whose first token is t against n and stores it
// at dst as p says.
func (d *decoder) value(n *node, p *Plan, t jsontext.Token, dst unsafe.Pointer) bool {
	if n != nil && (n.never || len(n.groups) > 0) {
		return false
	}
	switch p.kind {
	case planStruct:
		return t.Kind == jsontext.ObjectStart && n != nil && n.types&tObject != 0 && len(n.enums) == 0 && d.object(n, p, t, dst)
	case planSlice:
		return t.Kind == jsontext.ArrayStart && n != nil && n.types&tArray != 0 && len(n.enums) == 0 && d.array(n, p, t, dst)
	case planPointer:
		// Not null (encoding/json leaves the pointer nil, and the schema
		// says whether null is allowed): a new value, decoded.
		if t.Kind == jsontext.Null {
			return false
		}
		v := reflect.New(p.typ).UnsafePointer()
		if !d.value(n, p.elem, t, v) {
			return false
		}
		*(*unsafe.Pointer)(dst) = v
		return true
	case planString:
		if t.Kind != jsontext.String || !jsontext.Plain(d.data[t.Start+1:t.End-1], t.Flags) || (n != nil && !checkString(n, d.data, t)) {
			return false
		}
		*(*string)(dst) = d.str(t)
		return true
	case planBool:
		var b bool
		switch t.Kind {
		case jsontext.True:
			b = true
			if n != nil && !checkLiteral(n, tBoolean, litTrue) {
				return false
			}
		case jsontext.False:
			if n != nil && !checkLiteral(n, tBoolean, litFalse) {
				return false
			}
		default:
			return false
		}
		*(*bool)(dst) = b
		return true
	}
	if t.Kind != jsontext.Number {
		return false
	}
	if n == nil {
		if !provable(d.data[t.Start:t.End], t.Flags) {
			return false
		}
	} else if !checkNumber(n, d.data, t) {
		return false
	}
	tok := unsafe.String(unsafe.SliceData(d.data[t.Start:]), t.End-t.Start)
	switch p.kind {
	case planInt:
		if t.Flags&(jsontext.Fraction|jsontext.Exponent) != 0 {
			return false
		}
		x, err := strconv.ParseInt(tok, 10, p.bits)
		if err != nil {
			return false
		}
		switch p.bits {
		case 8:
			*(*int8)(dst) = int8(x)
		case 16:
			*(*int16)(dst) = int16(x)
		case 32:
			*(*int32)(dst) = int32(x)
		default:
			*(*int64)(dst) = x
		}
	case planUint:
		if t.Flags&(jsontext.Fraction|jsontext.Exponent) != 0 {
			return false
		}
		x, err := strconv.ParseUint(tok, 10, p.bits)
		if err != nil {
			return false
		}
		switch p.bits {
		case 8:
			*(*uint8)(dst) = uint8(x)
		case 16:
			*(*uint16)(dst) = uint16(x)
		case 32:
			*(*uint32)(dst) = uint32(x)
		default:
			*(*uint64)(dst) = x
		}
	default: // planFloat
		x, err := strconv.ParseFloat(tok, p.bits)
		if err != nil {
			return false
		}
		if p.bits == 32 {
			*(*float32)(dst) = float32(x)
		} else {
			*(*float64)(dst) = x
		}
	}
	return true
}

// object is checkObject, storing each member into the field of its exact
// name.
func (d *decoder) object(n *node, p *Plan, start jsontext.Token, dst unsafe.Pointer) bool {
	var seen, met uint64
	count := 0
	unsure := 0 // as in checkObject
	for {
		t, err := d.lex.Next()
		if err != nil {
			return false
		}
		if t.Kind == jsontext.ObjectEnd {
			break
		}
		key := d.data[t.Start+1 : t.End-1]
		if !jsontext.Plain(key, t.Flags) {
			return false
		}
		pf := p.lookup(key)
		if pf == nil {
			return false // encoding/json may match it to a field ignoring case
		}
		vn := n.addl
		if f := n.lookup(key); f != nil {
			seen |= f.bit
			if f.once == 0 {
				unsure++
			} else if met&f.once != 0 {
				return false
			}
			met |= f.once
			if f.inProps {
				vn = f.node
			}
		} else {
			unsure++
		}
		if t, err = d.lex.Next(); err != nil || !d.value(vn, pf.plan, t, unsafe.Add(dst, pf.off)) {
			return false
		}
		count++
	}
	if seen&n.reqMask != n.reqMask {
		return false
	}
	distinct := -2
	if unsure > 0 && count > 1 {
		if distinct = distinctKeys(d.data[start.Start:]); distinct != count {
			return false
		}
	}
	if n.maxProps >= 0 && count > n.maxProps {
		return false
	}
	if n.minProps <= 0 {
		return true
	}
	if distinct == -2 {
		distinct = count
	}
	return count >= n.minProps && distinct >= n.minProps
}

// array is checkArray, storing the elements into the slice at dst, grown
// one element at a time as encoding/json grows it.
func (d *decoder) array(n *node, p *Plan, start jsontext.Token, dst unsafe.Pointer) bool {
	// The slice is grown in a value of its own, not at dst, which reflect
	// would make every decoded value escape to the heap.
	holder := reflect.New(p.typ)
	sv := holder.Elem()
	count := 0
	for {
		t, err := d.lex.Next()
		if err != nil {
			return false
		}
		if t.Kind == jsontext.ArrayEnd {
			break
		}
		if count >= sv.Cap() {
			sv.Grow(1)
		}
		sv.SetLen(count + 1)
		if !d.value(n.items, p.elem, t, sv.Index(count).Addr().UnsafePointer()) {
			return false
		}
		count++
	}
	if count < n.minItems || (n.maxItems >= 0 && count > n.maxItems) {
		return false
	}
	if n.unique && count > 1 && !uniqueScalars(d.data[start.Start:]) {
		return false
	}
	if count == 0 {
		sv.Set(reflect.MakeSlice(p.typ, 0, 0)) // empty, not nil
	}
	*(*sliceHeader)(dst) = *(*sliceHeader)(holder.UnsafePointer())
	return true
}

// sliceHeader is the layout of a slice, its pointer typed as one so that
// copying it is seen by the garbage collector.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}
