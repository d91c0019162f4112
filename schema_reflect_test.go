package toolset_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/schematest/ledger"
	"github.com/gotoolset/toolset/internal/schematest/shop"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Args has the name of the field types below, from other packages.
type Args struct {
	Amount int         `json:"amount" jsonschema:"minimum=1,maximum=100"`
	Memo   ledger.Args `json:"memo"`
	Order  shop.Args   `json:"order"`
}

// A field whose type has the argument type's name, from another package,
// must not replace the tool's schema: the bounds hold.
func TestSchemaSameTypeNameKeepsBounds(t *testing.T) {
	var got []int
	pay := toolset.NewTool("pay", "", func(_ context.Context, in shop.Args) (string, error) {
		got = append(got, in.Amount)
		return "ok", nil
	})
	require.NoError(t, pay.Err())
	own := toolset.NewTool("pay2", "", func(_ context.Context, in Args) (string, error) {
		got = append(got, in.Amount)
		return "ok", nil
	})
	require.NoError(t, own.Err())
	for _, tool := range []toolset.Tool{pay, own} {
		b, err := tool.ParametersJSON()
		require.NoError(t, err)
		assert.Contains(t, string(b), `"amount"`, "the tool's own fields")
		for _, amount := range []int{0, 101, 1000000} {
			args := fmt.Sprintf(`{"amount":%d,"memo":{},"order":{"amount":5,"memo":{}}}`, amount)
			_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(args)})
			var ae *toolset.ArgumentError
			require.ErrorAs(t, err, &ae, "%s %s", tool.Name, args)
			assert.Equal(t, "amount", ae.Problems[0].Field)
		}
	}
	_, err := own.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"amount":5,"memo":{"note":"x"},"order":{"amount":500,"memo":{}}}`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae, "the nested shop.Args keeps its bounds too")
	assert.Equal(t, "order.amount", ae.Problems[0].Field)
	assert.Empty(t, got, "no out-of-range amount reached a handler")
}

// uuid is a UUID as applications declare it: bytes, decoded from text.
type uuid [16]byte

func (u *uuid) UnmarshalText(b []byte) error {
	s := strings.ReplaceAll(string(b), "-", "")
	if len(s) != 32 {
		return fmt.Errorf("not a UUID: %q", b)
	}
	_, err := hex.Decode(u[:], []byte(s))
	return err
}

func TestSchemaTextUnmarshalerIsAString(t *testing.T) {
	type in struct {
		Addr netip.Addr  `json:"addr"`
		ID   uuid        `json:"id"`
		Opt  *netip.Addr `json:"opt,omitempty"`
		At   time.Time   `json:"at"`
	}
	var seen in
	tool := toolset.NewTool("connect", "", func(_ context.Context, a in) (string, error) {
		seen = a
		return "ok", nil
	})
	require.NoError(t, tool.Err())
	b, err := tool.ParametersJSON()
	require.NoError(t, err)
	var s struct {
		Properties map[string]struct {
			Type   string `json:"type"`
			Format string `json:"format"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(b, &s))
	for _, f := range []string{"addr", "id", "opt", "at"} {
		assert.Equal(t, "string", s.Properties[f].Type, f)
	}
	assert.Equal(t, "date-time", s.Properties["at"].Format)
	_, err = tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(
		`{"addr":"192.0.2.1","id":"123e4567-e89b-12d3-a456-426614174000","opt":"::1","at":"2026-01-02T15:04:05Z"}`)})

	require.NoError(t, err)
	assert.Equal(t, netip.MustParseAddr("192.0.2.1"), seen.Addr)
	assert.Equal(t, byte(0x12), seen.ID[0])
}

// level decodes itself from names, and says nothing about its schema.
type level int

func (l *level) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"low"`:
		*l = 1
	case `"high"`:
		*l = 2
	default:
		return fmt.Errorf("unknown level %s", b)
	}
	return nil
}

// declaredLevel is level with its schema declared.
type declaredLevel int

func (l *declaredLevel) UnmarshalJSON(b []byte) error { return (*level)(l).UnmarshalJSON(b) }

func (*declaredLevel) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"low", "high"}}
}

func TestSchemaCustomUnmarshalJSONNeedsADeclaredSchema(t *testing.T) {
	tool := toolset.NewTool("alert", "", func(_ context.Context, in struct {
		Level level `json:"level"`
	}) (string, error) {
		return "ok", nil
	})
	err := tool.Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `tool "alert"`)
	assert.Contains(t, err.Error(), "toolset_test.level")
	assert.Contains(t, err.Error(), "UnmarshalJSON")
	assert.Contains(t, err.Error(), "JSONSchema")

	nested := toolset.NewTool("alerts", "", func(_ context.Context, in struct {
		Levels map[string][]*level `json:"levels"`
	}) (string, error) {
		return "ok", nil
	})
	require.ErrorContains(t, nested.Err(), "field Levels")

	var got declaredLevel
	ok := toolset.NewTool("alert", "", func(_ context.Context, in struct {
		Level declaredLevel   `json:"level"`
		Raw   json.RawMessage `json:"raw,omitempty"`
		At    time.Time       `json:"at,omitzero"`
		N     json.Number     `json:"n,omitempty"`
	}) (string, error) {
		got = in.Level
		return "ok", nil
	})
	require.NoError(t, ok.Err(), "a declared schema (on the pointer), RawMessage, time.Time and json.Number are fine")
	_, err = ok.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"level":"high","n":12.5}`)})
	require.NoError(t, err)
	assert.Equal(t, declaredLevel(2), got)
	_, err = ok.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"level":"medium"}`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "level", ae.Problems[0].Field)
}
