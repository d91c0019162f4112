// Package toolset composes the tools an LLM agent is offered on each turn,
// and runs the calls the model makes.
//
// An agent's tools come from many places: typed Go functions, MCP servers
// (package mcptoolset), other agents, packaged tool bundles (package
// toolpkg). This package gives them one shape, [Toolset], composes them
// (prefix, rename, filter per caller, combine), and once per turn builds
// with [BuildTools] the exact ordered list the model is sent, reporting
// every name conflict at once. The resulting [*ToolList] runs the model's
// calls: arguments are validated against the tool's JSON Schema before any
// of your code sees them, then the tool's policies apply in a fixed order.
// The provider adapters (provider/openaitools, ...) and toolsettest build
// on it.
//
// A typed tool, a toolset shown only to staff, and the agent loop: one run,
// a turn per model step, the model's calls:
//
//	type Args struct {
//		City string `json:"city" jsonschema:"City name, e.g. Paris"`
//	}
//	var Role = toolset.NewKey[string]("role") // at package level
//
//	forecast := toolset.NewTool("forecast", "Get the weather forecast.",
//		func(ctx context.Context, in Args) (string, error) { return in.City + ": sunny", nil })
//	staffOnly := func(ctx context.Context, _ toolset.Tool) (bool, error) {
//		return Role.Get(ctx) == "staff", nil
//	}
//	weather := toolset.NewFunction(forecast).Prefixed("weather").Filtered(staffOnly)
//
//	run := toolset.NewRun(requestID, toolset.WithValue(Role, "staff"))
//	defer run.End()
//	for {
//		turn := run.Turn(ctx) // step 0, then 1, 2, ...
//		tools, err := toolset.BuildTools(turn, "assistant", weather)
//		if err != nil {
//			return err // a misused run, a name conflict, an invalid name, a failing toolset
//		}
//		// Send tools.Tools() to the model, then run each call it makes:
//		res, err := tools.Execute(turn, toolset.ToolCall{ID: id, Name: "weather_forecast", Args: args})
//		if msg, ok := toolset.ErrorText(err); ok {
//			res, err = msg, nil // the model is told what went wrong and may try again
//		}
//		// Any other err should stop the run.
//	}
//
// # Tools and toolsets
//
// A [Tool] is a value: what the model sees (Name, Description, Parameters,
// Returns) plus a pointer to the code and state behind it, its core. Copies
// share the core, so a prefixed, renamed or edited copy is the same tool
// under another name ([Tool.Same]): its cache, rate-limit window, failure
// budget, middleware and delegate agent follow the tool, not the name. Make
// tools with [NewTool] (the schema reflected from a Go struct), [NewRawTool]
// (a ready schema, such as one decoded by [ParseSchema]) or [NewAgentTool];
// [Tool.Err] reports one that cannot be used. A Tool is a Toolset of one.
//
// The toolset types are [Function] (a static list), [Prefixed] and
// [Renamed] (the same tools under new names), [Filtered] (tools hidden per
// turn by a [Predicate]), [Combined] (toolsets merged), [Prepared] (the
// list edited, pruned or reordered per turn), [Dynamic] (the toolset picked
// per turn), [Guarded] (tools made elsewhere given policies of the
// program's) and [Wrapper] (embed it and override what you need). Every
// pointer toolset type of the module (these but Wrapper, and the Toolset
// types of mcptoolset and toolpkg) has the builder methods .Prefixed,
// .Renamed, .Filtered, .Prepared, .Guarded and .CombinedWith, returning the
// concrete type so that chains read left to right; each builder has a
// constructor twin that takes any Toolset: [NewPrefixed], [NewRenamed],
// [NewFiltered], [NewPrepared], [NewGuarded], [NewCombined].
//
//	db := toolset.NewFunction(query, migrate).Prefixed("db").Filtered(isAdmin)
//
// Wrapper has none on purpose: a method promoted from an embedded Wrapper
// receives the Wrapper, not your type, so a promoted .Prefixed would wrap
// the Wrapper and lose your GetTools; pass your type to the free functions.
// A Tool has none either; put it in a [NewFunction] to chain.
//
// Toolsets may implement [Labeler] (a name for error messages),
// [InstructionsProvider] (system-prompt text, gathered by [Instructions])
// and [io.Closer]. Prefixed, Renamed, Filtered, Prepared, Guarded and Wrapper forward
// all three, except that Filtered and Prepared forward instructions only in
// turns where they show a tool. A Combined has no label, joins its
// children's instructions and closes them in reverse order. A Dynamic
// forwards its pick's instructions but neither a label nor Close: what it
// picks belongs to whoever built it. A Function has [Function.WithLabel]
// and [Function.WithInstructions].
//
// # Turns
//
// Once per turn, under the turn's context, [BuildTools] turns an agent's
// entries (toolsets, and bare Tools as standalone tools) into the [*ToolList]
// the model is sent. Predicates, prepare and Dynamic functions read the
// run from that context ([Key], [FromContext]); a predicate's error hides the tool (fail
// closed) and is logged, its panic fails the turn. Every name shown by two
// entries and every name that breaks the providers' rule
// ^[a-zA-Z0-9_-]{1,64}$ is reported at once, in one [*NameConflictError]
// naming each contributor and its path through nested toolsets. Two
// standalone tools with one name are not a conflict: the later replaces the
// earlier, at its position. Names are judged on the tools visible this
// turn, so two tenants' tools behind filters clash only in a turn that
// shows both. [Validate] checks every tool, hidden ones included, at
// start-up.
//
// A deferred tool ([WithDeferred]) stays out of the set until a search of
// this run ([NewToolSearch]) reveals it; a tool whose failure budget is
// spent ([WithMaxFailures]) leaves the set, or stays in it marked
// unavailable when the run asked for a stable list ([WithStableToolList]).
//
// To see why a tool is or is not in a turn's set, [Explain] the turn: for
// every tool the entries produced it gives the path it came from
// (`Combined#0/Filtered#1/Prefixed "db"/Function`), the names it had
// before prefixes and renames, and each reason that hid it (a filter at a
// path, its own enabled or prepare function, a Prepared function, no
// reveal in this run, a spent budget) or fails the turn (a name conflict,
// an invalid name, missing environment). A toolset that refuses some of
// its source's tools (an MCP server's tool whose name providers reject)
// lists them too, as a [RefusalReporter]. It is for developers and logs,
// runs the turn's predicates again, and costs BuildTools nothing.
//
// A *ToolList is immutable: [ToolList.All], [ToolList.Tools] and [ToolList.Names] give
// the tools in the order the model is sent them, [ToolList.Lookup] finds one
// by name, [ToolList.Execute] runs the model's calls. The
// order is part of the contract: the entries in order, each toolset's tools
// in declaration order, unchanged from turn to turn while the same tools
// are shown, so a provider's prompt cache stays warm; your own toolsets
// must keep a deterministic order too (see [Toolset]).
//
// # Runs
//
// A run is one user request answered by one agent, over several turns. Its
// [RunContext], made once with [NewRun] and ended with [RunContext.End]
// when the request is answered, says who asks (typed values, [WithValue],
// read with a [Key]; or values by name, [WithValues], read with
// [RunContext.Value]), carries the application's dependencies ([WithDeps],
// read with [DepsAs]) and keeps the run's own bookkeeping: the failures
// that spend a tool's budget, the deferred tools its searches revealed, the
// approval decisions ([RunContext.RecordApproval],
// [RunContext.RecordDenial]), the run-scoped caches ([CacheRun]) and the
// marks toolsets of the application record in it ([RunContext.Mark], a
// skill loaded, say; read with [RunContext.Marked]). Each
// turn begins with [RunContext.Turn], which advances the run's step (0, 1,
// 2, ...) and returns the context to build that turn's tools under, once.
// A RunContext is opaque and read-only; [FromContext] returns the one a
// context carries, or nil, and every method is safe on nil.
//
// The natural loop is the correct one, and the ways to get it wrong are
// errors, not silent losses of bookkeeping:
//
//   - a second live run with the ID of another (a run made afresh each
//     turn, say) is unusable: its Err, BuildTools and calls under it
//     report a [*RunConflictError];
//   - BuildTools under a context that carries the run but no turn
//     ([NewContext] only), twice under one turn, or under a turn older than
//     the run's latest fails with a [*TurnError];
//   - BuildTools and calls under a run after its End fail with
//     [ErrRunEnded];
//   - a run dropped without End is garbage-collected all the same: its ID
//     is free again, and a warning is logged through [slog.Default].
//
// Reading a run's value in a predicate is cheap: a [Key], made once with
// [NewKey], reads a slice slot, and the contexts Turn returns and
// BuildTools hands to callbacks carry the run themselves, so no context
// chain is walked and no string hashed per tool.
//
// A run can outlive its process. [ResumeRun] begins a run from the state
// a [RunStore] keeps ([NewMemoryRunStore] in memory, or one shared by
// every replica) and saves it as versioned JSON as it goes: its step,
// approval decisions and pending approvals, reveals, marks, failure counts, and
// the run-scoped cache entries of tools whose [CachePolicy] sets Persist.
// A run paused for approval is let go with [RunContext.Suspend]; a
// process that only decides lists [RunContext.PendingApprovals], records
// the decisions and suspends it again; the next request resumes it,
// anywhere, and the approved call runs once. Saves are compare-and-swap,
// so only one process carries a run on at a time; the other gets a
// [*RunStateConflictError]. Saved state names a tool by the name it was
// offered under and the hash of its parameter schema, so state never
// applies to another tool, and an approval given for one schema does not
// let through a call of a tool whose schema has changed since: it is
// asked again. Arguments an approver edited ([WithEditedArgs]) are
// validated before they run.
//
// A tool's rate-limit window and process-scope cache can leave the
// process too: [RateLimit].Limiter takes a [RateLimiter] and
// [CachePolicy].Shared a [ResultCache], each shared by every replica
// (module redistoolset implements them, and [RunStore], in Redis).
// Without them the tool keeps both in its own memory, on the same path
// as before. A limiter that fails refuses the call with a
// [*RateLimitError] the model sees (its Err set); a shared cache that fails is
// bypassed.
//
// A turn's *ToolList belongs to the run it was built for, since its
// predicates decided what that run may call: it refuses, with a
// [*RunMismatchError], a call under the context of another run (or of no
// run when it was built under one, and the reverse); any context of its own
// run will do. A context that carries no run builds and calls tools of no
// run, for tests and one-off calls: approvals and tool searches then
// refuse, and failures are not counted.
//
// A sub-agent is a tool: [NewAgentTool] offers an [Agent] to the model,
// which calls it with a prompt and gets the agent's answer. Each call runs
// the agent under a child run of the caller's ([RunContext.NewChild]): it
// inherits the caller's values and dependencies, has its own steps, failure
// budgets, reveals, approvals and caches, knows its parent's ID
// ([RunContext.ParentID]), and ends when the agent's Run returns. The
// agent's own loop begins its turns with toolset.FromContext(ctx).Turn(ctx).
// A sub-agent's call that waits for approval stops the calling run too,
// with the sub-agent's [*ApprovalRequiredError], which names the child run.
// [Tool.DelegateAgent] finds the agent behind any copy of the tool.
//
// # The call path
//
// [ToolList.Execute], and [Tool.Execute] for a direct call of one tool, run
// a call through these steps, in order:
//
//  1. the run check (an ended or unusable run, and for a ToolList another
//     run) and the lookup in this turn's set (ToolList only); then a call
//     under a done context, of a deferred tool this run has not revealed,
//     or of a tool whose failure budget is spent is refused;
//  2. argument validation against the tool's parameter schema as offered
//     this turn;
//  3. approval ([WithApprovalRequired]);
//  4. result cache lookup ([WithCache]), where a hit ends the call;
//  5. rate limit ([WithRateLimit]);
//  6. the middleware chain, outermost first: a [Wrapper]'s Middleware (the
//     outermost Wrapper's first), then the tool's own ([WithMiddleware]),
//     and
//  7. the handler, both under the tool's timeout ([WithTimeout]), with
//     panics recovered;
//  8. result cache store, for successful results;
//  9. failure accounting in the run ([WithMaxFailures]).
//
// Validation comes first so that nothing later sees arguments the tool
// would refuse: an approval predicate or a cache key function gets valid
// JSON, a human is never asked to approve a call that cannot run, and a
// cached result is only returned for arguments valid for the tool as this
// turn offers it (a schema narrowed by [WithPrepare] or [NewPrepared] cannot be
// bypassed by a result cached in another turn). The rate limit comes after
// the cache because it guards what the handler uses: a hit, or a call that
// waits for an identical call already running, takes no token. Concurrent
// calls with the same cache key on a cold cache run steps 5 to 8 once and
// share the result.
//
// A tool made with [NewTool] that has none of steps 3 to 6 nor a timeout,
// offered with the schema it was made with, runs steps 2 and 7 as one:
// nothing else sees the arguments between them, so its handler checks them
// against the schema as it decodes them, in a single pass over the bytes.
// The verdict, the errors and the value decoded are those of the two steps
// apart; arguments or types the single pass does not cover exactly (see
// internal/schema's Decode) take the two steps.
//
// A handler reports how far it has come with [ReportProgress]; the caller
// receives the reports through the callback it put on the call's context
// with [WithProgress] (a no-op without one). mcptoolset carries them
// across MCP both ways, as progress notifications.
//
// # Observing turns and calls
//
// An [Observer] attached to a run ([WithObserver]) sees each turn
// (its agent, step, tool count, the size of the definitions and a
// fingerprint of them, so a change that invalidates a provider's prompt
// cache shows) and each call: its tool, the tool's original name and its
// path through the composition, every policy decision as the call path
// makes it (deferred and revealed, budget spent, approval asked, granted
// or denied, cache hit or miss, rate-limit wait or refusal, failure
// counted and what is left of the budget), the tool's progress reports,
// and the outcome with a short error kind. Each Start method returns the
// context the work goes on under, so a tracing observer's span is the
// parent of what the tool does. Package oteltoolset is such an observer
// for OpenTelemetry. Without an observer nothing of this is computed; work
// of no run is observed through [ContextWithObserver].
//
// # Policies
//
// Options of [NewTool], [NewRawTool] and [NewAgentTool] belong to the tool's
// core, so every copy shares them and their state:
//
//   - [WithEnabled]: show the tool only in turns a [Predicate] accepts.
//   - [WithPrepare]: edit the tool's definition, or drop it, per turn.
//   - [WithDeferred]: hide the tool until a [NewToolSearch] of the run finds it.
//   - [WithRequiredEnv]: environment variables BuildTools and Validate check.
//   - [WithApprovalRequired]: calls stop the run until a human's decision is recorded in it.
//   - [WithCache]: keep successful results per process or per run.
//   - [WithRateLimit]: wait for a token, or refuse the call.
//   - [WithTimeout]: a deadline, told to the model or ending the run.
//   - [WithMaxFailures]: a budget of failing steps per run, then it is spent.
//   - [WithCallLimit]: a hard bound of the tool's calls per run.
//   - [WithSequential], [WithResource]: of one model turn's calls, a
//     sequential tool's run alone in the model's order, and those sharing
//     a resource one at a time ([ToolList.CallOrder]; the provider
//     adapters follow it).
//   - [WithOrigin]: where the tool comes from; a tool made again with its
//     name and origin keeps the budget and the rate window of the one before.
//   - [WithMiddleware]: wrap the handler; [Wrapper] does it per toolset.
//   - [WithMetadata], [WithReturns]: data for the application; the result's schema.
//
// A run's own bounds are run options: [WithCallLimits] bounds its calls,
// its calls of each tool and its failed calls, hard ([CallLimits]): past a
// bound a call is refused, first with a message that tells the model to
// answer without it, then, if the model calls again in a later step, with
// a [*CallLimitError] that stops the run.
//
// [WithCallJournal] keeps a journal of the run's calls: a call made again
// with its ID and arguments (a framework's retry, a duplicated message, a
// resume after a crash) returns what it returned instead of running
// twice, a call ID reused for another call stops the run, and a resumed
// run asks a human ([ApprovalRequiredError.Interrupted]) before running
// again a call that a stopped process left unfinished.
//
// [WithResultBudget] bounds what of a tool's result reaches the model: a
// longer one is sent as its head and tail with a marker, and a
// [ResultArchive] keeps the whole text for the run, which the model reads
// back a range at a time with the archive's tool ([ResultArchive.ReadTool]).
// [WithTurnResultBudget] bounds all the results of one turn's calls
// together. An archive made by [NewStoredResultArchive] keeps the texts in
// a [ResultStore] ([DirResultStore], or toolpkg's ArtifactResults), where a
// run resumed in another process still reads them.
//
// A tool may declare what its calls do ([WithEffects]: read-only,
// destructive, idempotent, open world; an MCP server's tools declare their
// annotations, with the specification's pessimistic defaults). The
// declaration is data: [EffectPolicies], a guard for [NewGuarded], makes
// every call of a tool that may destroy wait for a human and run alone,
// and lets a resumed run call a read-only or idempotent tool again where
// a crash cut a call short; a shared cache never serves a tool that is
// neither. An explicit policy wins over these defaults ([EffectGuard]
// turns them off for a toolset), and [Explain] names what set each.
//
// A tool made elsewhere (an MCP server's, a package's, another team's) is
// given policies by [NewGuarded]: each of a toolset's tools is offered
// again as a tool of its own with the options a function chooses for it,
// whose calls run the original's call path inside its own. A guarded tool
// lasts, with its state, while the original keeps its definition, and a
// steady turn over a Guarded costs what the same turn without it does.
//
// # Errors
//
// A call's error is of one of two kinds, told apart by [ErrorText]. A
// [ModelError] is for the model, which can act on it: send its message back
// as the tool result. Such are [*ArgumentError] (every problem with the
// arguments at once, field by field), [*UnknownToolError] (a name not in
// this turn's set: it suggests the tools that had the name before a prefix
// or a rename made them what the set shows, "fs_read_file" for
// "read_file", then names a few edits away, never one hidden this turn,
// unrevealed or spent, and lists the names the model may call, at a cost
// bounded however many tools and however long the name), [*UnavailableToolError],
// [*MessageError] (a handler's [NewModelError]), [*TimeoutError], [*RateLimitError]
// and [*ApprovalDeniedError]; an application's own errors may implement it
// too. Every other error should stop the run: an [*ApprovalRequiredError]
// (the loop asks a human, records the decision and executes the call
// again), a handler's error in a [*ToolError] (unless it wraps a
// ModelError), an [*AbortError], a [*RunMismatchError], a
// [*RunConflictError], [ErrRunEnded], and a [*PanicError] for user code
// that panicked, naming the kind of callback, the tool and the toolset.
//
// A turn fails with a [*TurnError], a [*RunConflictError] or [ErrRunEnded]
// for a misused run, a [*NameConflictError] (a rename collision included),
// an [*EnvError] for a shown tool's missing environment variables, the
// joined errors of the toolsets that failed, or a [*PanicError]. A schema
// that refers outside itself is a [*SchemaRefError], from [ParseSchema] or
// [Tool.Err]. Get them with errors.As; "toolset: " begins only the
// outermost of this package's errors.
//
// # Untrusted input
//
// The model's tool names and arguments, and every schema from outside the
// program, are untrusted; your Go code and its callbacks are trusted, but
// may panic. The README's "Security model" covers the whole module.
//
//   - Schemas are self-contained: a "$ref", "$dynamicRef" or
//     "$recursiveRef" that is not a fragment of the document, a "$schema"
//     naming no draft it knows, or a non-http(s) "$id", is refused with a
//     [*SchemaRefError] when the schema is parsed or the tool made, and the
//     validator has no loader: nothing is ever read from a file or a URL. A
//     schema too costly to compile or check against is refused too.
//   - Arguments are validated against the schema as offered this turn
//     before any of your code sees them, in time linear in their size;
//     numbers the handler's Go type cannot hold faithfully are refused, and
//     an error quotes at most a bounded piece of what the model sent. An
//     object that gives a key twice is refused: JSON leaves its meaning
//     open, the validator reads the last value, and a reader of the raw
//     arguments (a raw tool, a package, a server in another language) may
//     act on the first, which nobody validated or approved.
//   - Only this turn's visible tools of this run can be called: a hidden,
//     unrevealed, spent or unapproved tool is refused by any name, and so is
//     any call under another run's context. A name from the model is shown,
//     and scored against the available names, cut to a bounded length.
//   - A panic of a handler, of middleware or of any callback (predicates,
//     prepare and Dynamic functions, approval predicates, cache policies, a
//     toolset's own GetTools, Label, Instructions or Close, the methods of
//     a returned error) becomes a [*PanicError]; the process survives. A nil
//     toolset is an error wherever it is used ("Filtered#1: a nil *Filtered").
//   - User code that calls [runtime.Goexit] (as testing.T.FailNow does) on
//     a goroutine this module runs it on (those BuildTools and Combined
//     start for toolsets that may block, a provider adapter's calls) is
//     reported as a [*PanicError] with [ErrGoexit]. A handler runs on the
//     goroutine that makes the call, and so do the predicates and prepare
//     functions of this package's in-memory toolsets, so one called there
//     ends the caller's goroutine as Go defines; for a handler, that is
//     logged.
//
// # Concurrency and performance
//
// Toolsets, tools, a turn's *ToolList and a RunContext are safe for
// concurrent use: one toolset serves every run at once, since per-run state
// lives in the RunContext, and concurrent Turns of a run get distinct
// steps. Your own toolsets must be safe the same way (see [Toolset]):
// BuildTools and Combined materialise their entries concurrently. Entries
// made only of this package's in-memory toolsets (Functions and tools
// under Prefixed, Renamed, Filtered, Prepared, Guarded, Combined and
// Wrapper layers) wait on nothing, and are materialised on the caller's goroutine,
// one after the other; a goroutine is started only for an entry that may
// block (a Dynamic, a remote toolset, a type of yours) and has siblings.
//
// What does not depend on the run context is memoised and shared by every
// run: a Function's list, prefixed, renamed and guarded copies (rebuilt
// only when their input changes), the join of unchanged subtrees, name indexes, each
// tool's compiled validator and schema JSON ([Tool.ParametersJSON]),
// middleware chains and search indexes. So a turn costs little more than
// its per-turn callbacks: predicates, prepare and Dynamic functions, and
// the GetTools of toolsets of your own. A call proves its arguments valid
// on the raw JSON bytes, then decodes them once. The benchmarks in
// bench_test.go measure both:
//
//	go test -run '^$' -bench . -benchmem github.com/gotoolset/toolset
//
// # Names
//
// The names follow a few rules, each decided once:
//
//   - Constructors are New<Type>: [NewFunction], [NewPrefixed],
//     [NewRenamed], [NewFiltered], [NewPrepared], [NewGuarded], [NewCombined],
//     [NewDynamic], [NewRun], [NewKey], [NewMemoryRunStore],
//     [NewMemoryRateLimiter] ([ResumeRun]
//     resumes a run rather than making one); those that make a [Tool] are
//     New…Tool: [NewTool], [NewRawTool], [NewAgentTool], [NewToolSearch].
//   - Every pointer toolset type (Function, Prefixed, Renamed, Filtered,
//     Prepared, Guarded, Combined, Dynamic, mcptoolset.Toolset,
//     toolpkg.Toolset) has the builders .Prefixed, .Renamed, .Filtered,
//     .Prepared, .Guarded and .CombinedWith, each the matching constructor
//     applied to it; a Tool (a
//     value) and a Wrapper (embedded) have none.
//   - A [Tool] is one tool, a [Toolset] gives tools per turn, and a
//     [ToolList] is one turn's built set, made by [BuildTools].
//   - A run's values are read through typed keys ([Key.Get]), never by a
//     string lookup in a predicate; [RunContext.Value] serves integrations
//     that only know a name.
//   - To prepare is to edit per turn: a [Prepared] toolset edits its list
//     with a [PrepareFunc], a tool edits itself with [WithPrepare] and a
//     [PrepareToolFunc].
//   - Approval has three words for its three parts: a tool requires it
//     ([WithApprovalRequired]), an [Approver] asks a human (the provider
//     adapters' WithApprover), and the run records the answer
//     ([RunContext.RecordApproval], [RunContext.RecordDenial]).
//   - Execute is the one verb that runs a call: [ToolList.Execute] for a
//     model's call in a turn, [Tool.Execute] for one tool directly.
//   - Nothing here retries by itself; the model does. [WithMaxFailures] is
//     a budget of failing steps, and [NewModelError] and [ModelErrorf] tell
//     the model what to change.
//   - ModelText is what the model reads: [ModelError.ModelText],
//     [Content.ModelText]; [ErrorText] and [ResultText] compute it for any
//     error and any result.
//   - Options follow one convention per kind of thing, in every module.
//     What code composes (tools, toolsets, runs, searches, approvals, MCP
//     toolsets and servers, provider adapters, observers) takes
//     functional options named With… (Without… for the negative), one
//     option type per constructor: [ToolOption], [RunOption],
//     [SearchOption], [ApprovalOption], [PrefixOption]. A policy's own
//     parameters are a struct value given to its option ([CachePolicy],
//     [RateLimit]). What is deployed (stores, limiters and caches on a
//     server, broker connections, runtimes, package stores) takes a
//     pointer to a …Options struct, nil for the defaults, as log/slog's
//     handlers do: toolpkg.Open, redistoolset.NewRunStore, mesh.Connect.
//   - One idea has one name across modules: a call past its time is a
//     [*TimeoutError] wherever it ran (in process, in a package, on the
//     mesh), a call its rate limit refused a [*RateLimitError], a schema
//     that refers outside itself a [*SchemaRefError], whoever produced the
//     schema. A toolset's place in a composition is written one way, in
//     conflicts, observers, logs and [Explain] alike:
//     Combined#0/Prefixed#1 "db"/Function#0 "users".
package toolset
