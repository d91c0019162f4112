package toolpkg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// lockedBuffer is a log sink the tool calls may write to at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// turnTools starts a turn of run and builds ts for it.
func turnTools(t *testing.T, run *toolset.RunContext, ts toolset.Toolset) (context.Context, *toolset.ToolList) {
	t.Helper()
	ctx := run.Turn(context.Background())
	tools, err := toolset.BuildTools(ctx, "agent", ts)
	require.NoError(t, err)
	return ctx, tools
}

func TestConfigOverlayPrecedenceAndCoercion(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			goToolset(t, s, "demo")
			ts := s.ToolsetWithConfig("demo", Config{
				// Toolset values, as text from a form.
				Toolset: map[string]any{"greeting": "hey", "times": "2", "api_key": "k-123456"},
				// The agent's overlay wins over the toolset's value.
				Tools: map[string]map[string]any{"greet": {"greeting": "yo", "loud": "true"}},
			})
			res, err := callTool(context.Background(), t, ts, "demo__greet", `{"name": "Ada"}`)
			require.NoError(t, err)
			data := resultData(t, res)
			assert.Equal(t, "YO YO ADA", data["text"])
			assert.Equal(t, map[string]any{"greeting": "yo", "times": float64(2), "loud": true}, data["config"])

			// Without overlay or toolset value, the schema's default.
			res, err = callTool(context.Background(), t, s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"api_key": "k-123456"}}), "demo__greet", `{"name": "Ada"}`)
			require.NoError(t, err)
			assert.Equal(t, "hello Ada", resultData(t, res)["text"])
		})
	}
}

// A tool whose required secret is missing is left out; the other tools
// of the toolset stay, and the reason never shows a value.
func TestMissingRequiredSecretLeavesOnlyItsToolOut(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			logs := &lockedBuffer{}
			s := openStore(t, Options{Sandbox: mode, Logger: slog.New(slog.NewTextHandler(logs, nil))})
			goToolset(t, s, "demo")
			ts := s.ToolsetWithConfig("demo", Config{})
			tools, err := toolset.BuildTools(context.Background(), "agent", ts)
			require.NoError(t, err)
			_, ok := tools.Lookup("demo__secure")
			assert.False(t, ok, "secure needs api_key")
			_, ok = tools.Lookup("demo__greet")
			assert.True(t, ok)
			assert.Equal(t, map[string]string{"secure": `"api_key" is required by tool "secure": string`}, ts.Unavailable())
			assert.Contains(t, logs.String(), `tool left out: \"api_key\" is required by tool \"secure\"`)
			res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "demo__greet", Args: json.RawMessage(`{"name": "Bo"}`)})
			require.NoError(t, err)
			assert.Equal(t, "hello Bo", resultData(t, res)["text"])
		})
	}
}

func TestExcludedToolsAreNotOffered(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			goToolset(t, s, "demo")
			ts := s.ToolsetWithConfig("demo", Config{Exclude: []string{"secure", "wait"}})
			tools, err := toolset.BuildTools(context.Background(), "agent", ts)
			require.NoError(t, err)
			assert.Equal(t, []string{"demo__greet", "demo__whoami", "demo__report", "demo__count"}, tools.Names())
			assert.Empty(t, ts.Unavailable(), "an excluded tool needs no configuration")
			res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "demo__greet", Args: json.RawMessage(`{"name": "Cy"}`)})
			require.NoError(t, err)
			assert.Equal(t, "hello Cy", resultData(t, res)["text"])
		})
	}
}

func TestOverlayNamingAnUnknownToolIsAClearError(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	goToolset(t, s, "demo")
	_, err := s.ToolsetWithConfig("demo", Config{
		Tools:   map[string]map[string]any{"gret": {"greeting": "x"}, "greet": {"api_key": "k-123456", "colour": 1}},
		Exclude: []string{"nope"},
	}).GetTools(context.Background())
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{
		`"api_key" is required by tool "secure": string`,
		`the agent excludes tool "nope", which the toolset does not have; its tools: "count", "greet", "report", "secure", "wait", "whoami"`,
		`the agent's configuration names tool "gret", which the toolset does not have; its tools: "count", "greet", "report", "secure", "wait", "whoami"`,
		`tool "greet": "api_key" is not one of its configuration keys; its keys: "greeting", "loud", "times"`,
		`tool "greet": "colour" is not one of its configuration keys; its keys: "greeting", "loud", "times"`,
	}, ce.Problems)
	assert.NotContains(t, err.Error(), "k-123456", "a secret key given to the wrong tool is still hidden")
}

func TestConfigValuesOfTheWrongTypeAreRefused(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	goToolset(t, s, "demo")
	_, err := s.ToolsetWithConfig("demo", Config{
		Toolset: map[string]any{"api_key": "k-123456", "hil": "maybe", "required_scopes": 7},
		Tools:   map[string]map[string]any{"greet": {"times": "many", "loud": 3}},
	}).GetTools(context.Background())
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Problems, `tool "greet": "times": expected integer, got string "many"`)
	assert.Contains(t, ce.Problems, `tool "greet": "loud": expected boolean, got number 3`)
	assert.Contains(t, ce.Problems, `"hil": expected true or false, got string "\"maybe\""`)
	assert.Contains(t, ce.Problems, `"required_scopes": expected a list of scope names, got number`)
}

// hil: the tool waits for a human through the core's approval policy; the
// approved call then runs in the sandbox.
func TestHILRequiresApprovalInARun(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			goToolset(t, s, "demo")
			ts := s.ToolsetWithConfig("demo", Config{
				Toolset: map[string]any{"api_key": "k-123456"},
				Tools:   map[string]map[string]any{"greet": {"hil": "true"}},
			})
			run := toolset.NewRun("hil-" + string(mode))
			defer run.End()
			ctx, tools := turnTools(t, run, ts)
			call := toolset.ToolCall{ID: "c1", Name: "demo__greet", Args: json.RawMessage(`{"name": "Di"}`)}
			_, err := tools.Execute(ctx, call)
			var are *toolset.ApprovalRequiredError
			require.ErrorAs(t, err, &are)
			run.RecordApproval(are.Call)
			res, err := tools.Execute(ctx, call)
			require.NoError(t, err)
			assert.Equal(t, "hello Di", resultData(t, res)["text"])
			// Another tool of the toolset needs none.
			_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c2", Name: "demo__secure", Args: json.RawMessage(`{}`)})
			require.NoError(t, err)
			// A denial reaches the model.
			call.ID = "c3"
			_, err = tools.Execute(ctx, call)
			require.ErrorAs(t, err, &are)
			run.RecordDenial(are.Call, "not today")
			_, err = tools.Execute(ctx, call)
			var ade *toolset.ApprovalDeniedError
			require.ErrorAs(t, err, &ade)
		})
	}
}

// required_scopes: the tool is offered only to runs that carry every
// scope, given by key or by name.
func TestRequiredScopesHideTheToolFromRunsWithout(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			goToolset(t, s, "demo")
			ts := s.ToolsetWithConfig("demo", Config{
				Toolset: map[string]any{"api_key": "k-123456"},
				Tools:   map[string]map[string]any{"greet": {"required_scopes": "greet:write, people:read"}},
			})
			without := toolset.NewRun("scopes-no-"+string(mode), toolset.WithValue(Scopes, []string{"people:read"}))
			defer without.End()
			ctx, tools := turnTools(t, without, ts)
			_, ok := tools.Lookup("demo__greet")
			assert.False(t, ok, "a run with one of the two scopes does not see it")
			_, err := tools.Execute(ctx, toolset.ToolCall{ID: "x", Name: "demo__greet", Args: json.RawMessage(`{"name": "Ed"}`)})
			require.Error(t, err)

			with := toolset.NewRun("scopes-yes-"+string(mode), toolset.WithValues(map[string]any{"scopes": []any{"people:read", "greet:write"}}))
			defer with.End()
			ctx, tools = turnTools(t, with, ts)
			res, err := tools.Execute(ctx, toolset.ToolCall{ID: "y", Name: "demo__greet", Args: json.RawMessage(`{"name": "Ed"}`)})
			require.NoError(t, err)
			assert.Equal(t, "hello Ed", resultData(t, res)["text"])
		})
	}
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// auth: the configuration's credentials and the run's reach the tool in
// tool_auth_headers and tool_oauth_token; they never appear in the
// store's log, and a tool that prints them has them hidden in the error.
func TestAuthReachesTheToolAndNeverItsLogs(t *testing.T) {
	t.Parallel()
	const static, token = "Bearer static-secret-4711", "run-token-8815"
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			logs := &lockedBuffer{}
			s := openStore(t, Options{Sandbox: mode, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			goToolset(t, s, "demo")
			ts := s.ToolsetWithConfig("demo", Config{
				Toolset: map[string]any{"api_key": "k-123456"},
				Tools: map[string]map[string]any{"whoami": {"auth": map[string]any{
					"headers": map[string]any{"authorization": static, "X-Tenant": "acme-tenant"}, "from_run": true}}},
			})
			run := toolset.NewRun("auth-"+string(mode), toolset.WithValue(Auth, &Credentials{OAuthToken: token}))
			defer run.End()
			ctx, tools := turnTools(t, run, ts)
			res, err := tools.Execute(ctx, toolset.ToolCall{ID: "a", Name: "demo__whoami", Args: json.RawMessage(`{}`)})
			require.NoError(t, err)
			data := resultData(t, res)
			assert.Equal(t, []any{"Authorization", "X-Tenant"}, data["headers"])
			assert.Equal(t, digest(static), data["header_digests"].(map[string]any)["Authorization"])
			assert.Equal(t, digest(token), data["token_digest"])

			// Another tool of the toolset gets no credentials.
			_, err = tools.Execute(ctx, toolset.ToolCall{ID: "b", Name: "demo__greet", Args: json.RawMessage(`{"name": "x"}`)})
			require.NoError(t, err)

			_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c", Name: "demo__whoami", Args: json.RawMessage(`{"leak": true}`)})
			var ee *ExecError
			require.True(t, errors.As(err, &ee), "%v", err)
			assert.Contains(t, ee.Stderr, "token=[secret]")
			for _, secret := range []string{static, "static-secret-4711", token, "acme-tenant"} {
				assert.NotContains(t, err.Error(), secret)
				assert.NotContains(t, logs.String(), secret)
			}
		})
	}
}

func TestBadAuthConfigIsRefusedWithoutItsValue(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	goToolset(t, s, "demo")
	_, err := s.ToolsetWithConfig("demo", Config{
		Toolset: map[string]any{"api_key": "k-123456"},
		Tools:   map[string]map[string]any{"whoami": {"auth": map[string]any{"headers": map[string]any{"Bad Name": "hidden-value-1"}}}},
	}).GetTools(context.Background())
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{`tool "whoami": "auth": header name "Bad Name" is not a valid HTTP header name`}, ce.Problems)
	_, err = s.ToolsetWithConfig("demo", Config{
		Toolset: map[string]any{"api_key": "k-123456"},
		Tools:   map[string]map[string]any{"whoami": {"auth": map[string]any{"headers": map[string]any{"X-A": "line\nbreak-secret"}}}},
	}).GetTools(context.Background())
	require.ErrorAs(t, err, &ce)
	assert.NotContains(t, err.Error(), "break-secret")
}

// An agent's overlay may add approval and scopes to a tool, never lift
// those the toolset's configuration asks for: hil is on when either asks,
// and a run needs the scopes of both.
func TestAgentOverlayCannotLiftTheToolsetsApprovalOrScopes(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			goToolset(t, s, "demo")
			ts := s.ToolsetWithConfig("demo", Config{
				Toolset: map[string]any{"api_key": "k-123456", "hil": true, "required_scopes": "admin"},
				Tools: map[string]map[string]any{
					"greet":  {"hil": "false", "required_scopes": ""},
					"secure": {"hil": false, "required_scopes": []any{"audit"}},
				},
			})
			without := toolset.NewRun("lift-no-"+string(mode), toolset.WithValue(Scopes, []string{"audit"}))
			defer without.End()
			_, tools := turnTools(t, without, ts)
			assert.Empty(t, tools.Names(), "a run without the toolset's scope sees none of its tools")

			with := toolset.NewRun("lift-yes-"+string(mode), toolset.WithValue(Scopes, []string{"admin"}))
			defer with.End()
			ctx, tools := turnTools(t, with, ts)
			assert.Contains(t, tools.Names(), "demo__greet")
			assert.NotContains(t, tools.Names(), "demo__secure", "secure also needs the overlay's scope")
			_, err := tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "demo__greet", Args: json.RawMessage(`{"name": "Di"}`)})
			var are *toolset.ApprovalRequiredError
			require.ErrorAs(t, err, &are, "the toolset's hil holds")
		})
	}
}
