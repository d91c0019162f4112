package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gotoolset/toolset"
)

func ExampleNewTool() {
	type args struct {
		City string `json:"city" jsonschema:"City name, e.g. Paris"`
		Days int    `json:"days,omitempty" jsonschema:"minimum=1,maximum=14"`
	}
	forecast := toolset.NewTool("forecast", "Get the weather forecast.",
		func(_ context.Context, in args) (string, error) {
			return fmt.Sprintf("%s: sunny for %d days", in.City, max(in.Days, 1)), nil
		})

	schema, _ := forecast.ParametersJSON()
	fmt.Println(string(schema))

	res, err := forecast.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"city":"Paris","days":3}`)})
	fmt.Println(res, err)

	_, err = forecast.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"days":30}`)})
	msg, _ := toolset.ErrorText(err)
	fmt.Println(msg)
	// Output:
	// {"properties":{"city":{"type":"string","description":"City name, e.g. Paris"},"days":{"type":"integer","maximum":14,"minimum":1}},"additionalProperties":false,"type":"object","required":["city"]}
	// Paris: sunny for 3 days <nil>
	// invalid arguments for tool "forecast":
	// - "city": required field is missing; expected string (City name, e.g. Paris)
	// - "days": must be at most 14; got 30
	// Fix the arguments and call the tool again.
}

// tool returns a tool that answers with its own name.
func tool(name string) toolset.Tool {
	return toolset.NewTool(name, "", func(context.Context, struct{}) (string, error) { return name, nil })
}

func printNames(ts toolset.Toolset, ctx context.Context) {
	tools, err := ts.GetTools(ctx)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	fmt.Println(strings.Join(names, " "))
}

func ExampleNewFunction() {
	db := toolset.NewFunction(tool("query"), tool("migrate"))
	printNames(db, context.Background())

	printNames(toolset.NewFunction(tool("query"), tool("query")), context.Background())
	// Output:
	// query migrate
	// error: toolset: Function: tools[0] and tools[1] are both named "query"
}

func ExampleNewPrefixed() {
	db := toolset.NewFunction(tool("query"), tool("migrate"))
	printNames(db.Prefixed("db"), context.Background())
	printNames(toolset.NewPrefixed(db, "db", toolset.WithSeparator("-")), context.Background())
	// Output:
	// db_query db_migrate
	// db-query db-migrate
}

func ExampleNewRenamed() {
	db := toolset.NewFunction(tool("execute_query"), tool("list_tables"))
	printNames(db.Renamed(map[string]string{"execute_query": "sql"}), context.Background())
	printNames(db.Renamed(map[string]string{"execute_query": "list_tables"}), context.Background())
	// Output:
	// sql list_tables
	// error: toolset: Renamed has tool name conflicts:
	//   - "list_tables" contributed by: "execute_query" (renamed), "list_tables"
	// hint: rename the tools to different names
}

func ExampleNewFiltered() {
	role := toolset.NewKey[string]("role")
	deleteUser := toolset.NewTool("delete_user", "", func(context.Context, struct{}) (string, error) { return "ok", nil },
		toolset.WithMetadata(map[string]string{"audience": "admin"}))
	users := toolset.NewFunction(tool("get_user"), deleteUser).Filtered(
		func(ctx context.Context, t toolset.Tool) (bool, error) {
			return t.Metadata["audience"] != "admin" || role.Get(ctx) == "admin", nil
		})
	for _, r := range []string{"admin", "guest"} {
		run := toolset.NewRun("", toolset.WithValue(role, r))
		fmt.Print(r, ": ")
		printNames(users, run.Turn(context.Background()))
		run.End()
	}
	// Output:
	// admin: get_user delete_user
	// guest: get_user
}

func ExampleNewCombined() {
	fs := toolset.NewFunction(tool("read_file"), tool("write_file"))
	web := toolset.NewFunction(tool("fetch"), tool("read_file")).WithLabel("web")
	printNames(toolset.NewCombined(fs, web), context.Background())
	printNames(fs.CombinedWith(web.Prefixed("web")), context.Background())
	// Output:
	// error: toolset: Combined has tool name conflicts:
	//   - "read_file" contributed by: Function#0, Function#1 "web"
	// hint: wrap one of the toolsets with .Prefixed(...) or .Renamed(...)
	// read_file write_file web_fetch web_read_file
}

// Tagged marks every tool of the toolset it wraps as experimental.
type Tagged struct{ toolset.Wrapper }

// GetTools implements toolset.Toolset.
func (t Tagged) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	tools, err := t.Wrapper.GetTools(ctx)
	for i := range tools {
		tools[i].Description = "[experimental] " + tools[i].Description
	}
	return tools, err
}

func ExampleWrapper() {
	search := toolset.NewTool("search", "Search the web.", func(context.Context, struct{}) (string, error) { return "", nil })
	tagged := Tagged{toolset.Wrapper{Wrapped: toolset.NewFunction(search)}}
	// Use the free functions on your own type: a builder promoted from the
	// embedded Wrapper would not see your GetTools.
	tools, _ := toolset.NewPrefixed(tagged, "beta").GetTools(context.Background())
	fmt.Println(tools[0].Name+":", tools[0].Description)
	// Output:
	// beta_search: [experimental] Search the web.
}

func ExampleNewPrepared() {
	tools := toolset.NewFunction(tool("a"), tool("b"), tool("c")).Prepared(
		func(ctx context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
			// Most useful first, and no "b" on weekends.
			return []toolset.Tool{tools[2], tools[0]}, nil
		})
	printNames(tools, context.Background())
	// Output:
	// c a
}

func ExampleNewDynamic() {
	tenantKey := toolset.NewKey[string]("tenant")
	acme := toolset.NewFunction(tool("crm_lookup"))
	globex := toolset.NewFunction(tool("erp_lookup"), tool("erp_order"))
	perTenant := toolset.NewDynamic(func(ctx context.Context) (toolset.Toolset, error) {
		switch tenant := tenantKey.Get(ctx); tenant {
		case "acme":
			return acme, nil
		case "globex":
			return globex, nil
		default:
			return nil, fmt.Errorf("unknown tenant %q", tenant)
		}
	})
	for _, tenant := range []string{"acme", "globex", "initech"} {
		run := toolset.NewRun("", toolset.WithValue(tenantKey, tenant))
		printNames(perTenant, run.Turn(context.Background()))
		run.End()
	}
	// Output:
	// crm_lookup
	// erp_lookup erp_order
	// error: toolset: Dynamic: unknown tenant "initech"
}

func ExampleBuildTools() {
	run := toolset.NewRun("r1")
	defer run.End()
	shared := toolset.NewFunction(tool("query"))
	weather := toolset.NewFunction(tool("get_temp"))

	_, err := toolset.BuildTools(run.Turn(context.Background()), "Ops", shared, weather, shared, tool("get_temp"))
	var conflicts *toolset.NameConflictError
	if errors.As(err, &conflicts) {
		fmt.Println(err)
	}

	ctx := run.Turn(context.Background()) // the next turn
	tools, err := toolset.BuildTools(ctx, "Ops", shared.Prefixed("a"), weather, shared.Prefixed("b"))
	if err != nil {
		panic(err)
	}
	fmt.Println(tools.Names())
	res, _ := tools.Execute(ctx, toolset.ToolCall{Name: "b_query", Args: nil})
	fmt.Println(res)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "query", Args: nil})
	msg, _ := toolset.ErrorText(err)
	fmt.Println(msg)
	// Output:
	// toolset: agent "Ops" has tool name conflicts:
	//   - "query" contributed by: Function#0, Function#2
	//   - "get_temp" contributed by: Function#1, Tool#3 "get_temp"
	// hint: wrap one of the toolsets with .Prefixed(...) or .Renamed(...)
	// [a_query get_temp b_query]
	// query
	// unknown tool "query"; did you mean a_query or b_query? available tools: a_query, b_query, get_temp
}

// The conflict report of the README.
func ExampleNameConflictError() {
	query, getTemp := tool("query"), tool("get_temp")
	ctx := context.Background()
	shared := toolset.NewFunction(query)
	weather := toolset.NewFunction(getTemp)
	_, err := toolset.BuildTools(ctx, "Ops", shared.Prefixed("shared"), weather, shared.Prefixed("shared"), getTemp)
	fmt.Println(err)
	// Output:
	// toolset: agent "Ops" has tool name conflicts:
	//   - "shared_query" contributed by: Prefixed#0 "shared", Prefixed#2 "shared"
	//   - "get_temp" contributed by: Function#1, Tool#3 "get_temp"
	// hint: wrap one of the toolsets with .Prefixed(...) or .Renamed(...)
}

// A tool every call of which waits for a human: the call stops the run
// with the call to approve, the run records the decision, and the call
// runs when made again.
func ExampleAlways() {
	type refund struct {
		Order string `json:"order"`
	}
	tool := toolset.NewTool("refund", "Refunds an order.", func(_ context.Context, r refund) (string, error) {
		return "refunded " + r.Order, nil
	}, toolset.WithApprovalRequired(toolset.Always))

	run := toolset.NewRun("example-always")
	defer run.End()
	turn := run.Turn(context.Background())
	tools, _ := toolset.BuildTools(turn, "support", tool)
	call := toolset.ToolCall{ID: "call-1", Name: "refund", Args: json.RawMessage(`{"order":"A-17"}`)}

	_, err := tools.Execute(turn, call)
	var asked *toolset.ApprovalRequiredError
	fmt.Println(errors.As(err, &asked))

	run.RecordApproval(asked.Call)
	res, _ := tools.Execute(turn, call)
	fmt.Println(res)
	// Output:
	// true
	// refunded A-17
}
