package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type weatherArgs struct {
	City  string `json:"city" jsonschema:"City name, e.g. Paris"`
	Days  int    `json:"days" jsonschema:"description=Days ahead,minimum=1,maximum=14"`
	Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
	Stops []stop `json:"stops,omitempty"`
}

type stop struct {
	Name string `json:"name" jsonschema:"Stop name"`
}

type forecast struct {
	City string  `json:"city"`
	Temp float64 `json:"temp"`
}

func weatherTool() toolset.Tool {
	return toolset.NewTool("get_weather", "Get the weather forecast.",
		func(_ context.Context, in weatherArgs) (forecast, error) {
			return forecast{City: in.City, Temp: 21.5}, nil
		})
}

func schemaJSON(t *testing.T, tool toolset.Tool) string {
	t.Helper()
	b, err := tool.ParametersJSON()
	require.NoError(t, err)
	return string(b)
}

func TestNewToolSchema(t *testing.T) {
	tool := weatherTool()
	require.NoError(t, tool.Err())
	assert.JSONEq(t, `{
		"type": "object",
		"properties": {
			"city": {"type": "string", "description": "City name, e.g. Paris"},
			"days": {"type": "integer", "minimum": 1, "maximum": 14, "description": "Days ahead"},
			"units": {"type": "string", "enum": ["metric", "imperial"]},
			"stops": {"type": "array", "items": {
				"type": "object",
				"properties": {"name": {"type": "string", "description": "Stop name"}},
				"required": ["name"],
				"additionalProperties": false
			}}
		},
		"required": ["city", "days"],
		"additionalProperties": false
	}`, schemaJSON(t, tool))
	assert.NotContains(t, schemaJSON(t, tool), "$schema")
	assert.NotContains(t, schemaJSON(t, tool), "$ref")
	assert.NotContains(t, schemaJSON(t, tool), "$defs")

	ret, err := json.Marshal(tool.Returns)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"},"temp":{"type":"number"}},"required":["city","temp"],"additionalProperties":false}`, string(ret))
}

func TestNewToolEmptyStruct(t *testing.T) {
	tool := toolset.NewTool("ping", "Ping.", func(context.Context, struct{}) (string, error) { return "pong", nil })
	assert.JSONEq(t, `{"type":"object","properties":{},"additionalProperties":false}`, schemaJSON(t, tool))
	for _, args := range []string{``, `null`, `{}`, "  "} {
		got, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(args)})
		require.NoError(t, err, "args %q", args)
		assert.Equal(t, "pong", got)
	}
}

func TestNewToolPointerArgs(t *testing.T) {
	tool := toolset.NewTool("greet", "Greet.", func(_ context.Context, in *stop) (string, error) {
		return "hello " + in.Name, nil
	})
	got, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"name":"Ada"}`)})
	require.NoError(t, err)
	assert.Equal(t, "hello Ada", got)
}

type treeNode struct {
	Name     string     `json:"name"`
	Children []treeNode `json:"children"`
}

func TestNewToolUnusable(t *testing.T) {
	cases := []struct {
		name string
		tool toolset.Tool
		want string
	}{
		{"recursive type", toolset.NewTool("tree", "", func(context.Context, treeNode) (int, error) { return 0, nil }), "recursive"},
		{"not a struct", toolset.NewTool("str", "", func(context.Context, string) (int, error) { return 0, nil }), "not a struct"},
		{"channel field", toolset.NewTool("ch", "", func(context.Context, struct {
			C chan int `json:"c"`
		}) (int, error) {
			return 0, nil
		}), "no JSON form"},
		{"nil function", toolset.NewTool[struct{}, int]("nilfn", "", nil), "nil function"},
		{"nil raw handler", toolset.NewRawTool("nilraw", "", nil, nil), "nil handler"},
		{"no core", toolset.Tool{Name: "literal"}, "no handler"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorContains(t, c.tool.Err(), c.want)
			_, err := toolset.NewFunction(c.tool).GetTools(context.Background())
			require.ErrorContains(t, err, c.want)
			_, err = toolset.BuildTools(context.Background(), "a", c.tool)
			require.ErrorContains(t, err, c.want)
			_, err = c.tool.Execute(context.Background(), toolset.ToolCall{Args: nil})
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestNewToolOutputInterfaceHasNoReturns(t *testing.T) {
	tool := toolset.NewTool("any", "", func(context.Context, struct{}) (any, error) { return 1, nil })
	assert.Nil(t, tool.Returns)
}

func TestCallDecodeError(t *testing.T) {
	tool := toolset.NewTool("small", "", func(_ context.Context, in struct {
		N int8 `json:"n"`
	}) (int8, error) {
		return in.N, nil
	})
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"n": 300}`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, []toolset.ArgumentProblem{{Field: "n", Message: "cannot use number 300 as an integer in the range of int8"}}, ae.Problems)
	assert.Equal(t, "small", ae.Tool)
}

// time.Time fields are date-time strings; the validator does not assert
// formats, so decoding refuses a bad one, and the model is told which field.
func TestCallDateTimeNamesTheField(t *testing.T) {
	type leg struct {
		Depart time.Time  `json:"depart"`
		Return *time.Time `json:"return,omitempty"`
	}
	tool := toolset.NewTool("book", "", func(_ context.Context, in struct {
		Legs []leg `json:"legs"`
	}) (int, error) {
		return len(in.Legs), nil
	})
	got, err := tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"legs":[{"depart":"2026-12-01T09:00:00Z"}]}`)})
	require.NoError(t, err)
	assert.Equal(t, 1, got)

	_, err = tool.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"legs":[{"depart":"2026-12-01T09:00:00Z","return":"tomorrow"},{"depart":"yesterday"}]}`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, []toolset.ArgumentProblem{
		{Field: "legs[0].return", Message: `expected a date-time in RFC 3339 format, such as "2026-01-02T15:04:05Z"; got "tomorrow"`},
		{Field: "legs[1].depart", Message: `expected a date-time in RFC 3339 format, such as "2026-01-02T15:04:05Z"; got "yesterday"`},
	}, ae.Problems)

	// Another decoding failure is reported as it is, not blamed on a
	// date-time field the Go type does not parse.
	coded := toolset.NewTool("coded", "", func(_ context.Context, in struct {
		Note string    `json:"note" jsonschema:"format=date-time"`
		Code upperCode `json:"code"`
	}) (string, error) {
		return string(in.Code), nil
	})
	_, err = coded.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"note":"soon","code":"abc"}`)})
	require.ErrorAs(t, err, &ae)
	require.Len(t, ae.Problems, 1)
	assert.Contains(t, ae.Problems[0].Message, "code must be uppercase")
}

// upperCode refuses lowercase codes when decoded. It declares its schema,
// as a type with its own UnmarshalJSON must.
type upperCode string

func (upperCode) JSONSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} }

func (c *upperCode) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if strings.ToUpper(s) != s {
		return errors.New("code must be uppercase")
	}
	*c = upperCode(s)
	return nil
}

func TestDescriptionSpellings(t *testing.T) {
	type args struct {
		Plain    string `json:"plain" jsonschema:"Plain prose, with a comma"`
		Invopop  string `json:"invopop" jsonschema:"description=Invopop style"`
		Both     int    `json:"both" jsonschema:"minimum=0"`
		Separate string `json:"separate" jsonschema_description:"From its own tag"`
		Required string `json:"required,omitempty" jsonschema:"required"`
	}
	tool := toolset.NewTool("d", "", func(context.Context, args) (int, error) { return 0, nil })
	props := tool.Parameters.Properties
	get := func(name string) string {
		p, ok := props.Get(name)
		require.True(t, ok, name)
		return p.Description
	}
	assert.Equal(t, "Plain prose, with a comma", get("plain"))
	assert.Equal(t, "Invopop style", get("invopop"))
	assert.Equal(t, "", get("both"), "keyword tags are not prose")
	assert.Equal(t, "From its own tag", get("separate"))
	assert.Equal(t, "", get("required"))
}
