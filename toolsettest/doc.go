// Package toolsettest helps test tool registries without a model.
//
// A registry is tested the way a model meets it: build the turn's tools
// under a turn of a run ([NewRun] makes one, with values such as a role
// or a tenant, and dependencies), then check what the model would be sent and what its calls
// would do.
//
//   - [AssertGolden] compares the model-visible tool list (names,
//     descriptions, parameter schemas, in order) with a golden file, and
//     rewrites the file when the tests run with -toolsettest.update;
//   - [AssertNames], [AssertSchema], [AssertConflicts] and
//     [AssertInvalidNames] check one aspect each, with readable failures;
//   - [Record] wraps a toolset so every call is recorded with its
//     arguments, result and error;
//   - [Fake] is a tool with scripted results that counts its calls;
//   - [NewScriptedModel] starts a model that follows a script of [Step]s
//     ([CallTools], [Answer], [Decide]) on 127.0.0.1, speaking the wire
//     JSON of one provider [API] (OpenAI Chat Completions or Responses,
//     Anthropic Messages, Gemini generateContent), so that an agent loop is
//     tested end to end with the provider's real SDK client and adapter,
//     and records what the model was sent ([ModelRequest]: the tools, the
//     tool results). It needs no provider SDK itself. Package
//     [github.com/gotoolset/toolset/toolsettest/sampleagent] is an agent
//     ready to run against it, with the checks of what a loop that works
//     sends.
//
// A backend of the toolset's pluggable stores, in a database or a broker
// of one's own, is checked against the contract of its interface by the
// suite for it, run from the backend's tests: [TestRunStore] for a
// [toolset.RunStore], [TestRateLimiter] for a [toolset.RateLimiter],
// [TestResultCache] for a [toolset.ResultCache]. Each runs its checks as
// subtests, each on a new backend; [InBubble] runs them in a
// testing/synctest bubble for a backend on the process's clock, and
// [TimeUnit] scales the waits of one on a server's.
//
// Golden files are rewritten with -toolsettest.update, the flag this
// package registers, or with a boolean -update flag a test package
// defines for golden files of its own: importing this package never
// clashes with it.
package toolsettest
