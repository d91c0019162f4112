package toolset

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolsetTypes parses the package's source and returns every type it
// declares that is a Toolset: one with a GetTools method of its own, or a
// struct that embeds one (or the Toolset interface), with whether the
// value itself (not only a pointer to it) is one.
func toolsetTypes(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	value := map[string]bool{} // type -> its value is a Toolset
	embeds := map[string][]ast.Expr{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || d.Name.Name != "GetTools" || len(d.Recv.List) != 1 {
					continue
				}
				switch r := d.Recv.List[0].Type.(type) {
				case *ast.Ident:
					value[r.Name] = true
				case *ast.StarExpr:
					if id, ok := r.X.(*ast.Ident); ok && !value[id.Name] {
						value[id.Name] = false
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						for _, fld := range st.Fields.List {
							if len(fld.Names) == 0 {
								embeds[ts.Name.Name] = append(embeds[ts.Name.Name], fld.Type)
							}
						}
					}
				}
			}
		}
	}
	// A struct embedding a Toolset is one too, by promotion.
	for changed := true; changed; {
		changed = false
		for typ, fields := range embeds {
			if _, ok := value[typ]; ok {
				continue
			}
			for _, fld := range fields {
				switch f := fld.(type) {
				case *ast.Ident:
					if v, ok := value[f.Name]; ok || f.Name == "Toolset" {
						value[typ], changed = v || f.Name == "Toolset", true
					}
				case *ast.StarExpr:
					if id, ok := f.X.(*ast.Ident); ok {
						if _, ok := value[id.Name]; ok {
							value[typ], changed = true, true
						}
					}
				}
			}
		}
	}
	return value
}

// TestDispatchCoversEveryToolset fails when a toolset type of the package
// has no row of its own in kinds: a new combinator must say there how it
// is materialised, explained and named, or it would be taken for a
// toolset of the caller's, its GetTools called on every turn.
func TestDispatchCoversEveryToolset(t *testing.T) {
	types := toolsetTypes(t)
	require.Contains(t, types, "Prefixed", "the parse finds the package's toolsets")

	rows := map[reflect.Type]int{}
	for k := range kinds {
		row := &kinds[k]
		require.NotNil(t, row.view, "row %d has a view", k)
		require.NotNil(t, row.isNil, "row %d has isNil", k)
		require.NotNil(t, row.inline, "row %d has inline", k)
		require.NotNil(t, row.size, "row %d has size", k)
		if k == kUser {
			assert.Nil(t, row.what, "the caller's toolsets are told apart by their labels")
			continue
		}
		require.NotNil(t, row.what, "row %d has what", k)
		if k == kNil {
			assert.Same(t, row, kindOf(nil))
			continue
		}
		require.True(t, row.sample != nil, "row %d has a sample", k)
		typ := reflect.TypeOf(row.sample)
		rows[typ] = k
		assert.Same(t, row, kindOf(row.sample), "kindOf picks the row of %v", typ)
		assert.Equal(t, typ.Kind() == reflect.Pointer, row.ptr, "row of %v", typ)
		assert.Equal(t, typeName(row.sample), row.name, "the row of %v is named for its type", typ)
	}

	var names []string
	for name := range types {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var ptr, val reflect.Type
		for typ := range rows {
			switch {
			case typ.Kind() == reflect.Pointer && typ.Elem().Name() == name:
				ptr = typ
			case typ.Name() == name:
				val = typ
			}
		}
		assert.NotNil(t, ptr, "toolset type *%s has a row in kinds (dispatch.go)", name)
		if types[name] {
			assert.NotNil(t, val, "toolset type %s has a row in kinds (dispatch.go)", name)
		}
	}
	assert.Len(t, rows, kUser-kNil-1, "every row but nil and the caller's is the row of a toolset type")
}

// embedsPrefixed is a toolset of the caller's that embeds one of the
// package's and overrides GetTools.
type embedsPrefixed struct{ *Prefixed }

func (embedsPrefixed) GetTools(context.Context) ([]Tool, error) { return nil, nil }

func TestDispatchTakesAnEmbeddingTypeForTheCallers(t *testing.T) {
	e := embedsPrefixed{NewPrefixed(NewFunction(), "p")}
	assert.Same(t, &kinds[kUser], kindOf(e))
	assert.False(t, isInline(e), "its GetTools may block")
	assert.Equal(t, 0, knownSize(e))
}

func TestDispatchAnswersForNilPointers(t *testing.T) {
	for k := range kinds {
		row := &kinds[k]
		if !row.ptr {
			continue
		}
		s := row.sample // a nil pointer of the type
		assert.Equal(t, "a nil *"+row.name, nilToolset(s))
		_, err := materialize(context.Background(), s, nil)
		assert.EqualError(t, err, "toolset: nil *"+row.name)
	}
	assert.Equal(t, "a nil Toolset", nilToolset(nil))
	_, err := materialize(context.Background(), nil, nil)
	assert.EqualError(t, err, "toolset: nil Toolset")
}
