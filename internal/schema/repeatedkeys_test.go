package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repeatedArgs give a key twice, each in one object: at the top, in an
// object in an array, spelt with escapes, past the few keys compared in an
// array, under keys of no field.
var repeatedArgs = map[string]string{
	`{"path":"a","path":"/etc/passwd"}`:                                             "path",
	`{"list":[{"a":1},{"b":{"c":1,"c":2}}]}`:                                        "list[1].b.c",
	`{"path":"a","\u0070ath":"b"}`:                                                  "path",
	`{"list":[{"a":1,"\u0061":2}]}`:                                                 "list[0].a",
	`{"list":[{"\u00e9":1,"é":2}]}`:                                                 "list[0].é",
	`{"x":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k3":3}}`: "x.k3",
	`{"list":[[{"z":[{"q":null,"q":null}]}]]}`:                                      "list[0][0].z[0].q",
}

// A key given twice is never proven valid by the fast check, and the full
// check names it, whatever the schema: one within the fast subset, one
// outside it, one that accepts everything.
func TestRepeatedKeysAreRefused(t *testing.T) {
	for _, doc := range []string{
		`{"type":"object","properties":{"path":{"type":"string"},"list":{"type":"array"}}}`,
		`{"type":"object","not":{"required":["never"]}}`,
		`{}`,
	} {
		v, err := compiled(t, doc)
		require.NoError(t, err)
		for args, field := range repeatedArgs {
			if v.fast != nil {
				assert.False(t, v.fast.Valid([]byte(args)), "%s proved against %s", args, doc)
			}
			problems, err := v.Check([]byte(args))
			require.NoError(t, err)
			require.NotEmpty(t, problems, "%s accepted against %s", args, doc)
			assert.Equal(t, field, problems[0].Field, args)
			assert.Contains(t, problems[0].Message, "must be unique", args)
		}
	}
}

// Many distinct keys cost linear time, and the key repeated after them is
// found; keys that repeat only across objects are not repeated.
func TestManyKeysAreComparedInLinearTime(t *testing.T) {
	v, err := compiled(t, `{}`)
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 10_000 {
		fmt.Fprintf(&b, `"k%d":{"k%d":1},`, i, i)
	}
	distinct := strings.TrimSuffix(b.String(), ",") + `}`
	problems, err := v.Check([]byte(distinct))
	require.NoError(t, err)
	assert.Empty(t, problems)
	problems, err = v.Check([]byte(b.String() + `"k9999":2}`))
	require.NoError(t, err)
	require.Len(t, problems, 1)
	assert.Equal(t, "k9999", problems[0].Field)
}

// Objects of a few keys are checked for repeats without allocating.
func TestFewKeysAllocateNothing(t *testing.T) {
	var k objectKeys
	allocs := testing.AllocsPerRun(100, func() {
		k = objectKeys{}
		for _, key := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			if !k.add(key) {
				t.Fatal("a distinct key seen as repeated")
			}
		}
		if k.add("c") {
			t.Fatal("a repeated key seen as new")
		}
	})
	assert.Zero(t, allocs)
}

// FuzzRepeatedKeysAreRefused checks that arguments repeating a key in some
// object are never accepted, by the fast check or the full one.
func FuzzRepeatedKeysAreRefused(f *testing.F) {
	for args := range repeatedArgs {
		f.Add([]byte(args))
	}
	f.Add([]byte(`{"a":{"b":1},"c":{"b":1}}`))
	validators := make([]*Validator, 0, 2)
	for _, doc := range []string{`{}`, `{"type":"object","properties":{"path":{"type":"string"},"list":{"type":"array","items":{"type":"object"}}}}`} {
		s, err := Parse([]byte(doc))
		if err != nil {
			f.Fatal(err)
		}
		v := NewValidator(s)
		if err := v.Compile(); err != nil {
			f.Fatal(err)
		}
		validators = append(validators, v)
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		if !json.Valid(args) || !repeated(args) {
			return
		}
		for _, v := range validators {
			problems, err := v.Check(args)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) == 0 {
				t.Fatalf("accepted %q, which repeats a key", args)
			}
		}
	})
}
