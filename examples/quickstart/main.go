// Command quickstart builds a help desk agent's tools from two toolsets whose
// names collide, shows the conflict error and fixes it with prefixes. It then
// builds the same toolsets, plus an admin-only one hidden with Filtered, for
// the turns of two runs and prints each turn's run context and tool list
// (one line per tool, and one tool's JSON Schema). The admin's model calls the
// admin tool; the regular user's model is told that tool is unknown, sends bad
// arguments to another tool, reads the error and fixes them in its next turn.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
)

// Role is the caller's role, a value of each run that the admin filter
// reads.
var Role = toolset.NewKey[string]("role")

// SearchArgs are the arguments of both search tools.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"What to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"description=How many results,minimum=1,maximum=20"`
}

// IssueArgs are the arguments of create_issue.
type IssueArgs struct {
	Title    string `json:"title" jsonschema:"Issue title"`
	Priority string `json:"priority" jsonschema:"enum=low,enum=normal,enum=high"`
}

// UserArgs are the arguments of delete_user.
type UserArgs struct {
	User string `json:"user" jsonschema:"Login of the account"`
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run shows the demo on w. It fails only on an error that should stop a run.
func run(w io.Writer) error {
	ctx := context.Background()

	// Two toolsets, written by different teams, both with a "search" tool.
	docs := toolset.NewFunction(
		toolset.NewTool("search", "Search the product documentation.", func(_ context.Context, in SearchArgs) ([]string, error) {
			return []string{"Resetting your password", "Two-factor authentication"}[:min(max(in.Limit, 1), 2)], nil
		}),
	).WithLabel("docs")
	tracker := toolset.NewFunction(
		toolset.NewTool("search", "Search the issue tracker.", func(_ context.Context, in SearchArgs) ([]string, error) {
			return []string{"#42 Password reset email not sent"}, nil
		}),
		toolset.NewTool("create_issue", "File a new issue.", func(_ context.Context, in IssueArgs) (string, error) {
			return fmt.Sprintf("created #43 %q (%s)", in.Title, in.Priority), nil
		}),
	).WithLabel("tracker")
	// A third toolset only admins may see: the filter reads the role from
	// the run context each turn.
	admin := toolset.NewFunction(
		toolset.NewTool("delete_user", "Delete a user account.", func(_ context.Context, in UserArgs) (string, error) {
			return fmt.Sprintf("deleted user %q", in.User), nil
		}),
	).Prefixed("admin").Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) {
		return Role.Get(ctx) == "admin", nil
	})

	section(w, "1. Combining docs and tracker as they are")
	_, err := toolset.BuildTools(ctx, "helpdesk", docs, tracker)
	var conflict *toolset.NameConflictError
	if !errors.As(err, &conflict) {
		return fmt.Errorf("expected a name conflict, got %v", err)
	}
	fmt.Fprintln(w, err)

	// Fixed with prefixes. The same toolsets serve every run and every turn.
	helpdesk := []toolset.Toolset{docs.Prefixed("docs"), tracker.Prefixed("tracker"), admin}

	// One RunContext per run, made with NewRun and ended when the run is
	// over; each turn begins with Turn, builds that turn's tools and runs
	// the model's calls under the turn's context.
	adminRun := toolset.NewRun("run-1", toolset.WithValue(Role, "admin"))
	defer adminRun.End()
	turn := adminRun.Turn(ctx)
	tools, err := buildTurn(w, turn, "2. Fixed with prefixes, in an admin's turn", helpdesk)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "the parameters of admin_delete_user, as JSON Schema:")
	deleteUser, _ := tools.Lookup("admin_delete_user")
	params, err := deleteUser.ParametersJSON()
	if err != nil {
		return err
	}
	var schema bytes.Buffer
	if err := json.Indent(&schema, params, "", "  "); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\n\n", schema.Bytes())
	if err := call(w, turn, tools, "admin_delete_user", `{"user": "mallory"}`); err != nil {
		return err
	}

	userRun := toolset.NewRun("run-2", toolset.WithValue(Role, "user"))
	defer userRun.End()
	turn = userRun.Turn(ctx)
	tools, err = buildTurn(w, turn, "3. A user's turn: the admin tool is hidden", helpdesk)
	if err != nil {
		return err
	}
	for _, c := range []struct{ name, args string }{
		{"docs_search", `{"query": "password reset", "limit": 2}`},
		{"admin_delete_user", `{"user": "mallory"}`}, // hidden: unknown to this model
		{"tracker_create_issue", `{"titel": "Reset email missing", "priority": "urgent"}`},
	} {
		if err := call(w, turn, tools, c.name, c.args); err != nil {
			return err
		}
	}

	turn = userRun.Turn(ctx)
	tools, err = buildTurn(w, turn, "4. The user's next turn: the model fixes its arguments", helpdesk)
	if err != nil {
		return err
	}
	return call(w, turn, tools, "tracker_create_issue", `{"title": "Reset email missing", "priority": "high"}`)
}

// buildTurn builds the tools of the turn whose context is turn and prints
// them, one line each, under a header that shows the run context.
func buildTurn(w io.Writer, turn context.Context, title string, toolsets []toolset.Toolset) (*toolset.ToolList, error) {
	rc := toolset.FromContext(turn)
	section(w, title)
	fmt.Fprintf(w, "run context: run=%s role=%s step=%d\n", rc.ID(), Role.Get(turn), rc.Step())
	tools, err := toolset.BuildTools(turn, "helpdesk", toolsets...)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(w, "tools sent to the model:")
	for t := range tools.All() {
		fmt.Fprintf(w, "  %s — %s\n", signature(t), t.Description)
	}
	fmt.Fprintln(w)
	return tools, nil
}

// signature renders a tool's parameters as name(param: type, optional?: type).
func signature(t toolset.Tool) string {
	required := make(map[string]bool)
	for _, name := range t.Parameters.Required {
		required[name] = true
	}
	var params []string
	for name, p := range t.Parameters.Properties.FromOldest() {
		if !required[name] {
			name += "?"
		}
		params = append(params, name+": "+typeName(p))
	}
	return t.Name + "(" + strings.Join(params, ", ") + ")"
}

// typeName is a parameter's type, or its allowed values.
func typeName(s *jsonschema.Schema) string {
	if len(s.Enum) == 0 {
		return s.Type
	}
	values := make([]string, len(s.Enum))
	for i, v := range s.Enum {
		values[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(values, "|")
}

// call runs one tool call and prints what the model gets back. It returns
// only the errors that should stop the run.
func call(w io.Writer, turn context.Context, tools *toolset.ToolList, name, args string) error {
	fmt.Fprintf(w, "call %s %s\n", name, args)
	res, err := tools.Execute(turn, toolset.ToolCall{Name: name, Args: json.RawMessage(args)})
	if err != nil {
		msg, forModel := toolset.ErrorText(err)
		if !forModel {
			return fmt.Errorf("the run stops: %w", err)
		}
		fmt.Fprintf(w, "error sent back to the model:\n%s\n", msg)
		return nil
	}
	text, err := toolset.ResultText(res)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "result: %s\n", text)
	return nil
}

func section(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n%s\n", title, strings.Repeat("-", len(title)))
}
