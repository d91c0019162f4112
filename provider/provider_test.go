package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// option is an adapter's Option type.
type option func(*provider.Options)

func TestApply(t *testing.T) {
	assert.Equal(t, provider.Options{Concurrency: provider.DefaultConcurrency}, provider.Apply[option](nil))
	approver := func(context.Context, toolset.ToolCall) (bool, string, error) { return true, "", nil }
	o := provider.Apply([]option{provider.WithStrict(), nil, provider.WithMaxConcurrency(2), provider.WithApprover(approver)})
	assert.True(t, o.Strict)
	assert.Equal(t, 2, o.Concurrency)
	assert.NotNil(t, o.Approver)
}

func TestSchemaCacheConvertsEachSchemaOnce(t *testing.T) {
	converted := 0
	cache := provider.NewSchemaCache(func(raw json.RawMessage) (string, error) {
		converted++
		if string(raw) == `{"type":"string"}` {
			return "", errors.New("not an object")
		}
		return "converted " + string(raw), nil
	})
	noop := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	tool := toolset.NewRawTool("t", "", &jsonschema.Schema{Type: "object"}, noop)
	for range 3 {
		v, err := cache.Of(tool)
		require.NoError(t, err)
		assert.Equal(t, `converted {"type":"object"}`, v)
	}
	assert.Equal(t, 1, converted, "the schema bytes a tool caches are converted once")

	bad := toolset.NewRawTool("s", "", &jsonschema.Schema{Type: "string"}, noop)
	for range 2 {
		_, err := cache.Of(bad)
		assert.EqualError(t, err, "not an object")
	}
	assert.Equal(t, 2, converted, "errors are cached too")

	// Equal bytes elsewhere are another key: the cache never compares
	// contents, so it cannot mix up two schemas.
	_, _ = cache.Get(json.RawMessage(`{"type":"object"}`))
	assert.Equal(t, 3, converted)
}

func TestSchemaCacheStartsAfreshWhenFull(t *testing.T) {
	converted := 0
	cache := provider.NewSchemaCache(func(raw json.RawMessage) (int, error) { converted++; return len(raw), nil })
	first := json.RawMessage(`{"n":0}`)
	_, _ = cache.Get(first)
	for i := 1; i < provider.SchemaCacheSize; i++ {
		_, _ = cache.Get(json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
	}
	_, _ = cache.Get(first)
	assert.Equal(t, provider.SchemaCacheSize, converted, "a full cache still holds the first entry")
	_, _ = cache.Get(json.RawMessage(`{"n":"more"}`))
	_, _ = cache.Get(first)
	assert.Equal(t, provider.SchemaCacheSize+2, converted, "past its size the cache starts afresh")
}

func TestConvertToolsReportsEveryTool(t *testing.T) {
	noop := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	tools, err := toolset.BuildTools(t.Context(), "test",
		toolset.NewRawTool("a", "", nil, noop), toolset.NewRawTool("b", "", nil, noop), toolset.NewRawTool("c", "", nil, noop))
	require.NoError(t, err)
	names, err := provider.ConvertTools(tools, func(t toolset.Tool) (string, error) { return t.Name, nil })
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, names)

	_, err = provider.ConvertTools(tools, func(t toolset.Tool) (string, error) {
		if t.Name == "b" {
			return "", nil
		}
		return "", fmt.Errorf("tool %q refused", t.Name)
	})
	assert.EqualError(t, err, "tool \"a\" refused\ntool \"c\" refused")

	empty, err := toolset.BuildTools(t.Context(), "test")
	require.NoError(t, err)
	names, err = provider.ConvertTools(empty, func(t toolset.Tool) (string, error) { return t.Name, nil })
	require.NoError(t, err)
	assert.Nil(t, names, "a turn with no tools gives nil, so no empty tools field is sent")
}

func TestResult(t *testing.T) {
	call := toolset.ToolCall{ID: "c1", Name: "lookup"}
	text := func(o provider.Outcome) (string, error) {
		if o.IsError {
			return "error: " + o.Message, nil
		}
		return toolset.ResultText(o.Result)
	}
	got, err := provider.Result("pkg", call, []int{1}, nil, text)
	require.NoError(t, err)
	assert.Equal(t, "[1]", got)
	got, err = provider.Result("pkg", call, nil, toolset.NewModelError("narrow it"), text)
	require.NoError(t, err)
	assert.Equal(t, "error: narrow it", got)

	_, err = provider.Result("pkg", call, nil, errors.New("disk full"), text)
	assert.EqualError(t, err, `pkg: tool call c1 of "lookup": disk full`)
	var ce *provider.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, call, ce.Call)

	_, err = provider.Result("pkg", call, make(chan int), nil, text)
	assert.ErrorContains(t, err, `pkg: tool call c1 of "lookup": `)
}
