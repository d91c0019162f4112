package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gotoolset/toolset/internal/schema"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The argument types of the differential fuzz: what the one-pass decode
// covers, and next to it each thing it must leave to the two-pass path.

type fusedPlace struct {
	Lat  float64 `json:"lat" jsonschema:"minimum=-90,maximum=90"`
	Name string  `json:"name,omitempty" jsonschema:"maxLength=8"`
}

type fusedArgs struct {
	City  string       `json:"city" jsonschema:"minLength=1,maxLength=20"`
	Days  int          `json:"days" jsonschema:"minimum=1,maximum=14"`
	Units string       `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
	Small int8         `json:"small,omitempty"`
	Count uint16       `json:"count,omitempty"`
	Big   int64        `json:"big,omitempty"`
	Ratio float64      `json:"ratio,omitempty" jsonschema:"exclusiveMinimum=0,maximum=1"`
	Temp  float32      `json:"temp,omitempty"`
	OK    bool         `json:"ok,omitempty"`
	Where fusedPlace   `json:"where,omitzero"`
	Tags  []string     `json:"tags,omitempty" jsonschema:"maxItems=4,uniqueItems=true"`
	Stops []fusedPlace `json:"stops,omitempty"`
	Grid  [][]int      `json:"grid,omitempty"`
	Max   *int         `json:"max,omitempty" jsonschema:"maximum=100"`
	Home  *fusedPlace  `json:"home,omitempty"`
	Maybe []*string    `json:"maybe,omitempty"`
	Note  string       `json:",omitempty"`
	Skip  string       `json:"-"`
	quiet string
}

// fusedLoose accepts any member: encoding/json matches "CITY" to City,
// ignoring case, and the one-pass decode must not miss it.
type fusedLoose struct {
	City string `json:"city"`
	Days int    `json:"days"`
}

func (fusedLoose) JSONSchema() *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set("city", &jsonschema.Schema{Type: "string"})
	props.Set("days", &jsonschema.Schema{Type: "integer"})
	return &jsonschema.Schema{Type: "object", Properties: props}
}

type fusedInner struct {
	Days int `json:"days,omitempty"`
}

// fusedEmbedded has an embedded struct, whose fields encoding/json
// promotes by its rules of dominance.
type fusedEmbedded struct {
	fusedInner
	City string `json:"city"`
}

// fusedUnits decodes itself.
type fusedUnits string

func (u *fusedUnits) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*u = fusedUnits(strings.ToUpper(s))
	return nil
}

func (fusedUnits) JSONSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} }

type fusedCustom struct {
	City  string     `json:"city"`
	Units fusedUnits `json:"units,omitempty"`
}

// fusedOther has fields the one-pass decode does not cover.
type fusedOther struct {
	City  *json.Number      `json:"city,omitempty"`
	Bytes []byte            `json:"bytes,omitempty"`
	Extra map[string]int    `json:"extra,omitempty"`
	Raw   json.RawMessage   `json:"raw,omitempty"`
	Any   any               `json:"any,omitempty"`
	Num   json.Number       `json:"num,omitempty"`
	Deep  map[string][]bool `json:"deep,omitempty"`
}

// fusedPair is a tool whose calls take the one-pass path, and the same
// tool behind a middleware, whose calls take the two-pass path.
type fusedPair struct {
	name          string
	fused, twoWay Tool
	plan          bool // the type has a plan: the one-pass decode is tried
	got           func() any
}

func newFusedPair[In any](t testing.TB, name string) fusedPair {
	var last In
	fn := func(_ context.Context, in In) (string, error) {
		last = in
		return "ok", nil
	}
	pass := func(next Handler) Handler { return next }
	p := fusedPair{
		name:   name,
		fused:  NewTool(name, "", fn),
		twoWay: NewTool(name, "", fn, WithMiddleware(pass)),
		plan:   schema.NewPlan(reflect.TypeFor[In]()) != nil,
		got:    func() any { return last },
	}
	require.NoError(t, p.fused.Err())
	require.Equal(t, p.plan, p.fused.core.fused != nil, name)
	require.False(t, p.twoWay.core.fusable(p.twoWay), name)
	return p
}

func fusedPairs(t testing.TB) []fusedPair {
	return []fusedPair{
		newFusedPair[fusedArgs](t, "args"),
		newFusedPair[fusedLoose](t, "loose"),
		newFusedPair[fusedEmbedded](t, "embedded"),
		newFusedPair[fusedCustom](t, "custom"),
		newFusedPair[fusedOther](t, "other"),
		newFusedPair[struct{}](t, "empty"),
	}
}

// decodeLike decodes args as the handler is given them, with
// encoding/json, into a new value of the pair's type.
func decodeLike(p fusedPair, args []byte) (any, error) {
	v := reflect.New(reflect.TypeOf(p.got()))
	err := json.Unmarshal(normalizeArgs(args), v.Interface())
	return v.Elem().Interface(), err
}

// compareFused calls both tools of p with args and fails on any
// difference: accepted or refused, the value the handler got, the error.
func compareFused(t *testing.T, p fusedPair, args []byte) {
	ctx := context.Background()
	resF, errF := p.fused.Execute(ctx, ToolCall{Args: args})
	gotF := p.got()
	resT, errT := p.twoWay.Execute(ctx, ToolCall{Args: args})
	gotT := p.got()
	if (errF == nil) != (errT == nil) {
		t.Fatalf("%s %q: one pass: %v; two passes: %v", p.name, args, errF, errT)
	}
	if errF != nil {
		if errF.Error() != errT.Error() {
			t.Fatalf("%s %q: one pass says %q, two passes %q", p.name, args, errF, errT)
		}
		var aeF, aeT *ArgumentError
		if errors.As(errF, &aeF) != errors.As(errT, &aeT) || (aeF != nil && !reflect.DeepEqual(aeF, aeT)) {
			t.Fatalf("%s %q: errors differ: %#v, %#v", p.name, args, errF, errT)
		}
		return
	}
	if resF != resT {
		t.Fatalf("%s %q: results %v, %v", p.name, args, resF, resT)
	}
	if !reflect.DeepEqual(gotF, gotT) {
		t.Fatalf("%s %q: one pass decoded %#v, two passes %#v", p.name, args, gotF, gotT)
	}
	want, err := decodeLike(p, args)
	if err != nil {
		t.Fatalf("%s %q: accepted, but encoding/json refuses: %v", p.name, args, err)
	}
	if !reflect.DeepEqual(gotF, want) {
		t.Fatalf("%s %q: one pass decoded %#v, encoding/json %#v", p.name, args, gotF, want)
	}
}

var fusedSeeds = []string{
	`{"city":"Paris","days":3,"units":"metric"}`,
	`{"city":"Paris","days":3,"units":"kelvin"}`,
	`{"city":"Par\u00eds","days":14}`,
	`{"city":"París","days":14,"Note":"n"}`,
	`{"city":"Paris","days":3,"note":"folded"}`,
	`{"CITY":"Paris","days":3}`,
	`{"city":"Paris","City":"Rome","days":3}`,
	`{"city":"Paris","city":"Rome","days":2}`,
	`{"city":"Paris","days":1.0}`,
	`{"city":"Paris","days":1e1}`,
	`{"city":"Paris","days":-0}`,
	`{"city":"Paris","days":99999999999999999999999}`,
	`{"city":"Paris","days":2,"small":127,"count":65535,"big":-9223372036854775808}`,
	`{"city":"Paris","days":2,"small":128}`,
	`{"city":"Paris","days":2,"count":-1}`,
	`{"city":"Paris","days":2,"count":65536}`,
	`{"city":"Paris","days":2,"ratio":0.99999999999999999}`,
	`{"city":"Paris","days":2,"ratio":1e-400}`,
	`{"city":"Paris","days":2,"temp":3.4e39}`,
	`{"city":"Paris","days":2,"temp":-1.5e-7,"ok":true}`,
	`{"city":"Paris","days":2,"ok":null}`,
	`{"city":null,"days":2}`,
	`{"city":"Paris","days":2,"where":{"lat":48.85,"name":"centre"}}`,
	`{"city":"Paris","days":2,"where":{"lat":91}}`,
	`{"city":"Paris","days":2,"where":{"name":"x"}}`,
	`{"city":"Paris","days":2,"where":null}`,
	`{"city":"Paris","days":2,"Skip":"s","quiet":"q"}`,
	`{"city":"Paris","days":2,"tags":["a","b"],"stops":[{"lat":1},{"lat":2,"name":"n"}],"grid":[[1,2],[],[3]]}`,
	`{"city":"Paris","days":2,"tags":[],"stops":[],"grid":[]}`,
	`{"city":"Paris","days":2,"tags":["a","a"]}`,
	`{"city":"Paris","days":2,"tags":["a","b","c","d","e"]}`,
	`{"city":"Paris","days":2,"tags":null,"grid":[null]}`,
	`{"city":"Paris","days":2,"stops":[{"lat":1,"LAT":2}],"grid":[[1.5]]}`,
	`{"city":"Paris","days":2,"bytes":"aGk=","tags":["x"]}`,
	`{"city":"Paris","days":2,"max":7,"home":{"lat":3},"maybe":["a","b"]}`,
	`{"city":"Paris","days":2,"max":null,"home":null,"maybe":[null,"b"]}`,
	`{"city":"Paris","days":2,"max":101,"home":{"lat":3,"name":"toolongname"}}`,
	`{"city":"\ud800","days":2}`,
	"{\"city\":\"\xff\",\"days\":2}",
	`{"city":"Paris","days":2,"units":"metric","tags":["a"],"num":1.50,"any":{"a":[1,2.5]}}`,
	`{"city":"paris","units":"metric","days":1}`,
	`  {"city" : "Paris" , "days" : 3 }  `,
	`{"city":"Paris","days":3} x`,
	`[]`, `null`, ``, `"x"`, `{`, `{}`,
}

// FuzzFusedCall checks the one-pass path of a call against the two-pass
// path, and both against encoding/json: the same arguments are accepted
// and refused, with the same errors, and the handler gets the same value.
func FuzzFusedCall(f *testing.F) {
	for _, s := range fusedSeeds {
		f.Add([]byte(s))
	}
	pairs := fusedPairs(f)
	f.Fuzz(func(t *testing.T, args []byte) {
		for _, p := range pairs {
			compareFused(t, p, args)
		}
	})
}

// The one-pass decode is taken for ordinary arguments, and given up for
// each thing it leaves to the two-pass path.
func TestFusedDecodeIsTaken(t *testing.T) {
	tool := NewTool("t", "", func(_ context.Context, in fusedArgs) (fusedArgs, error) { return in, nil })
	v := (*schema.Validator)(tool.core.validatorFor(nil))
	plan := schema.NewPlan(reflect.TypeFor[fusedArgs]())
	require.NotNil(t, plan)
	decode := func(args string) (fusedArgs, bool) {
		var in fusedArgs
		ok := v.Decode([]byte(args), plan, unsafe.Pointer(&in))
		return in, ok
	}
	in, ok := decode(`{"city":"Paris","days":3,"units":"metric","small":-8,"count":7,"big":1,"ratio":0.5,"temp":1.5,"ok":true,"where":{"lat":1.25,"name":"x"},"Note":"n",
		"tags":["a","b"],"stops":[{"lat":2}],"grid":[[1],[]]}`)
	require.True(t, ok)
	assert.Equal(t, fusedArgs{City: "Paris", Days: 3, Units: "metric", Small: -8, Count: 7, Big: 1, Ratio: 0.5, Temp: 1.5, OK: true,
		Where: fusedPlace{Lat: 1.25, Name: "x"}, Note: "n", Tags: []string{"a", "b"}, Stops: []fusedPlace{{Lat: 2}}, Grid: [][]int{{1}, {}}}, in)
	in, ok = decode(`{"city":"Paris","days":3,"max":7,"home":{"lat":2},"maybe":["m"]}`)
	require.True(t, ok)
	require.NotNil(t, in.Max)
	require.NotNil(t, in.Home)
	require.Len(t, in.Maybe, 1)
	assert.Equal(t, 7, *in.Max)
	assert.Equal(t, fusedPlace{Lat: 2}, *in.Home)
	assert.Equal(t, "m", *in.Maybe[0])
	in, ok = decode(`{"city":"Paris","days":3,"tags":[]}`)
	require.True(t, ok)
	assert.NotNil(t, in.Tags, "an empty array decodes to an empty slice, as encoding/json decodes it")
	for _, args := range []string{
		`{"city":"Par\u00eds","days":3}`,       // escaped
		`{"city":"Paris","days":3,"NOTE":"n"}`, // not an exact name
		`{"city":"Paris","days":1.0}`,          // encoding/json refuses it for an int
		`{"city":"Paris","days":3,"small":200}`,
		`{"city":"Paris","days":3,"ok":null}`,
		`{"city":"Paris","days":30}`, // invalid
		`{"city":"Paris"}`,           // invalid
		`{"city":"Paris","days":3} {}`,
	} {
		_, ok := decode(args)
		assert.False(t, ok, args)
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[fusedEmbedded](), reflect.TypeFor[fusedCustom](), reflect.TypeFor[fusedOther](),
		reflect.TypeFor[*fusedArgs](), reflect.TypeFor[struct {
			A string `json:"a,string"`
		}](), reflect.TypeFor[struct {
			A string `json:"a-b"`
		}](), reflect.TypeFor[struct {
			N json.Number `json:"n"`
		}](), reflect.TypeFor[struct {
			D []time.Duration `json:"d"`
		}](), reflect.TypeFor[struct {
			B []byte `json:"b"`
		}](), reflect.TypeFor[struct {
			A string `json:"a"`
			B string `json:"A"`
		}](),
	} {
		assert.Nil(t, schema.NewPlan(typ), typ.String())
	}
}

// Every seed gives the same answer on both paths, and many of them are
// decoded in one pass: the comparison is not only of the two-pass path
// with itself.
func TestFusedCallSeeds(t *testing.T) {
	pairs := fusedPairs(t)
	v := (*schema.Validator)(pairs[0].fused.core.validatorFor(nil))
	plan := schema.NewPlan(reflect.TypeFor[fusedArgs]())
	onePass := 0
	for _, s := range fusedSeeds {
		for _, p := range pairs {
			compareFused(t, p, []byte(s))
		}
		var in fusedArgs
		if v.Decode(normalizeArgs([]byte(s)), plan, unsafe.Pointer(&in)) {
			onePass++
		}
	}
	assert.GreaterOrEqual(t, onePass, 8, "seeds decoded in one pass")
}

// A policy between validation and the handler, or a schema edited for the
// turn, takes the two-pass path: the policy sees validated arguments.
func TestFusedOnlyWithoutPolicies(t *testing.T) {
	fn := func(_ context.Context, in fusedArgs) (int, error) { return in.Days, nil }
	plain := NewTool("t", "", fn)
	assert.True(t, plain.core.fusable(plain))
	for _, opt := range []ToolOption{
		WithCache(CachePolicy{}),
		WithApprovalRequired(func(context.Context, Tool, json.RawMessage) (bool, error) { return false, nil }),
		WithTimeout(1e9, TimeoutTellModel),
		WithMiddleware(func(next Handler) Handler { return next }),
	} {
		tool := NewTool("t", "", fn, opt)
		assert.False(t, tool.core.fusable(tool))
	}
	edited := plain
	edited.Parameters = schema.EmptyObject()
	assert.False(t, plain.core.fusable(edited))
}

// Hostile arguments cost the one-pass path no more than a walk of their
// bytes, and get the two-pass path's answer: many members, deep nesting,
// a long string, a key repeated past what field bits can see.
func TestFusedCallHostileArguments(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"city":"a","days":1`)
	for i := range 5000 {
		many.WriteString(`,"k` + strings.Repeat("x", i%7) + `":1`)
	}
	many.WriteString("}")
	deep := `{"city":"a","days":1,"where":` + strings.Repeat(`{"lat":`, 3000) + "1" + strings.Repeat("}", 3000) + "}"
	long := `{"city":"` + strings.Repeat("é", 100000) + `","days":1}`
	repeated := `{"city":"a","days":1` + strings.Repeat(`,"ok":true`, 100) + "}"
	longNote := `{"city":"a","days":1,"Note":"` + strings.Repeat("ü", 3000) + `"}` // valid: its strings are copied each
	pairs := fusedPairs(t)
	for _, args := range []string{many.String(), deep, long, repeated, longNote} {
		for _, p := range pairs {
			compareFused(t, p, []byte(args))
		}
	}
}
