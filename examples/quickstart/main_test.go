package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun runs the demo and checks what it shows: the conflict, the admin
// tool in the admin's turn only, what the user's model is told when it calls
// that tool anyway, and the argument error.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))
	got := out.String()

	assert.Contains(t, got, "toolset: agent \"helpdesk\" has tool name conflicts:\n  - \"search\" contributed by: Function#0 \"docs\", Function#1 \"tracker\"\n")

	admin := between(t, got, "\n2. ", "\n3. ")
	user := between(t, got, "\n3. ", "\n4. ")
	next := between(t, got, "\n4. ", "")
	const adminTool = "  admin_delete_user(user: string) — Delete a user account.\n"
	assert.Contains(t, admin, "run context: run=run-1 role=admin step=0\n")
	assert.Contains(t, admin, "  tracker_create_issue(title: string, priority: \"low\"|\"normal\"|\"high\") — File a new issue.\n"+adminTool)
	assert.Contains(t, admin, "\"additionalProperties\": false")
	assert.Contains(t, admin, "call admin_delete_user {\"user\": \"mallory\"}\nresult: deleted user \"mallory\"\n")

	assert.Contains(t, user, "run context: run=run-2 role=user step=0\n")
	assert.Contains(t, user, "  docs_search(query: string, limit?: integer) — Search the product documentation.\n")
	assert.NotContains(t, user, "admin_delete_user(")
	assert.Contains(t, user, "call admin_delete_user {\"user\": \"mallory\"}\nerror sent back to the model:\n"+
		"unknown tool \"admin_delete_user\"; available tools: docs_search, tracker_create_issue, tracker_search\n")
	assert.Contains(t, user, "error sent back to the model:\ninvalid arguments for tool \"tracker_create_issue\":\n"+
		"- \"priority\": must be one of \"low\", \"normal\", \"high\"; got \"urgent\"\n"+
		"- \"titel\": unknown field; allowed fields: \"title\", \"priority\"\n"+
		"- \"title\": required field is missing; expected string (Issue title)\n")

	assert.Contains(t, next, "run context: run=run-2 role=user step=1\n")
	assert.NotContains(t, next, "admin_delete_user")
	assert.Contains(t, next, "result: created #43 \"Reset email missing\" (high)\n")

	var again strings.Builder
	require.NoError(t, run(&again))
	assert.Equal(t, got, again.String(), "the output is deterministic")
}

// between returns the part of s from start up to end, or to the end of s
// when end is "".
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, start)
	require.True(t, ok, "no %q in:\n%s", start, s)
	if end == "" {
		return rest
	}
	part, _, ok := strings.Cut(rest, end)
	require.True(t, ok, "no %q in:\n%s", end, s)
	return part
}
