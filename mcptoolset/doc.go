// Package mcptoolset bridges toolsets and the Model Context Protocol, with
// the official Go SDK (github.com/modelcontextprotocol/go-sdk/mcp), in both
// directions:
//
//   - [Toolset] makes an MCP server's tools a [toolset.Toolset], to be
//     prefixed, filtered and combined like any other;
//   - [NewServer] serves any [toolset.Toolset] as an MCP server, over stdio,
//     streamable HTTP or any SDK transport.
//
// The package is named so that it can be imported beside the SDK's mcp
// package without an alias. Its constructors take functional options, all
// named With... (Without... for a negative): an [Option] for a client
// [Toolset], a [ServerOption] for a [Server]; the SDK's own option structs
// are passed as they are.
//
// An MCP server as a toolset, used once per turn:
//
//	fs := mcptoolset.NewCommand(exec.Command("mcp-server-filesystem", dir))
//	defer fs.Close()
//	turn := run.Turn(ctx) // run is the agent's toolset.RunContext
//	tools, err := toolset.BuildTools(turn, "assistant", fs.Prefixed("fs"), local)
//	res, err := tools.Execute(turn, toolset.ToolCall{ID: id, Name: "fs_read_file", Args: args})
//
// A toolset served to MCP clients:
//
//	srv := mcptoolset.NewServer(tools,
//		mcptoolset.WithImplementation(&mcp.Implementation{Name: "ops", Version: "v1.2.0"}))
//	err := srv.ServeStdio(ctx)                // as a local server, or
//	http.Handle("/mcp", srv.HTTPHandler(nil)) // over streamable HTTP
//
// # Using MCP servers
//
// Make a [Toolset] from whatever reaches the server:
//
//	fs := mcptoolset.NewCommand(exec.Command("mcp-server-filesystem", dir)) // a subprocess over stdio
//	gh := mcptoolset.NewHTTP("https://mcp.example.com/mcp",                  // streamable HTTP
//		mcptoolset.WithName("github"), mcptoolset.WithHTTPHeader("Authorization", "Bearer "+token))
//	db := mcptoolset.New(session)                      // a connected *mcp.ClientSession
//	notes := mcptoolset.NewInMemory("notes", sdkServer) // an SDK server in this process
//	custom := mcptoolset.NewTransport("custom", dial)  // any mcp.Transport
//
// Nothing connects until the toolset is first used. Its label (for error
// messages, see [toolset.Labeler]) is "mcp:" + its name; the name is given
// with [WithName], or defaults to the server's reported name for [New], the
// command's base name for [NewCommand] and the URL's host for [NewHTTP]. It
// provides the server's instructions from initialization as
// [toolset.InstructionsProvider], and [Toolset.Session] gives the session
// itself for prompts and resources. A call made under a context with a
// progress callback ([toolset.WithProgress]) sends a progress token, and
// the server's notifications/progress for it reach the callback
// (message cut to 1 KiB; fraction = progress/total when the total is
// known, else -1). The SDK handles notifications on a goroutine of its
// own, so the result can overtake the last of them, which are dropped:
// progress is best effort, and the callback is never called after the
// call returned.
//
// A [Toolset] is a handle on a connection. One connection may serve any
// number of agents and runs at once. [Toolset.Acquire] returns another
// handle on the same connection; give one to each owner that closes what it
// holds (an agent, a request handler, a [toolset.Combined], which closes its
// children):
//
//	shared := mcptoolset.NewCommand(cmd) // handle 1
//	support := shared.Acquire()          // handle 2, for the support agent
//	billing := shared.Acquire()          // handle 3, for the billing agent
//	shared.Close()                       // support and billing keep it open
//
// The connection opens on first use through any handle and closes when the
// last handle is closed: the session ends and a subprocess server is
// stopped. Closing a handle again does nothing, so a toolset that appears
// twice in a tree of toolsets can be closed twice. A closed handle, and
// every handle after the last Close, fails with [ErrClosed]. When the
// server ends the session (the subprocess exited, the HTTP session
// expired), the next use connects again and lists the tools again; a
// session given to [New] cannot be reopened.
//
// A server that cannot be reached makes GetTools fail with a
// [*ServerError] naming it, which fails the turn. Under [WithSkipUnavailable],
// GetTools logs a warning (log/slog, see [WithLogger]) and returns no tools
// and a nil error, so the agent goes on without the server. After a failed
// connection attempt the failure is returned again, without dialling, for
// [WithRetryDelay].
//
// Each tool the server lists becomes a [toolset.Tool] with the server's
// name, description and input schema, and its output schema as Returns. The
// schemas are decoded with [toolset.ParseSchema], which keeps every keyword
// (vendor keywords, "definitions", draft-04 and draft-07 forms) rather than
// the subset invopop's schema type knows, so arguments are validated against
// exactly what the server declared before any request is sent. The SDK's
// client decodes the schemas into map[string]any before this package sees
// them, so the order of "properties" is not kept (keys come sorted) and
// numbers pass through float64. Metadata carries the server's name
// ([MetaServer]), the tool's name on the server ([MetaTool], unchanged by
// prefixes and renames), its title ([MetaTitle]), its icons ([MetaIcons],
// a JSON array, bounded; only http(s) URLs and data: URIs of images are
// kept) and its annotations as
// "true" or "false" ([MetaReadOnly], [MetaDestructive], [MetaIdempotent],
// [MetaOpenWorld]; set only when the server sent annotations), and the
// tool declares the effects they say ([toolset.Tool.Effects]), with the
// specification's pessimistic defaults for what the server leaves out
// (destructive, not idempotent, open world), so that
// toolset.NewGuarded(ts, toolset.EffectPolicies) has a human approve each
// call of a tool that may destroy; toolset.Explain names the server and
// the hints it sent as the source of each such policy. Annotations
// are hints from the server, not guarantees: do not base security
// decisions on them for servers you do not trust. A served tool that
// declares its effects ([toolset.WithEffects]) is listed with them as
// its annotations. [WithToolOptions] gives
// the tools the core's policies, chosen per tool from its definition:
//
//	mcptoolset.WithToolOptions(func(def *mcp.Tool) []toolset.ToolOption {
//		opts := []toolset.ToolOption{toolset.WithTimeout(30*time.Second, toolset.TimeoutTellModel)}
//		if a := def.Annotations; a == nil || !a.ReadOnlyHint {
//			opts = append(opts, toolset.WithApprovalRequired(toolset.Always))
//		}
//		return opts
//	})
//
// The list is fetched on first use, following the server's pages, and kept
// until the server sends notifications/tools/list_changed; [WithCacheTTL]
// also expires it after a while (for servers that change their tools
// without saying so), and so does the server's own ttlMs hint (the
// shortest of its pages', within [MinListTTL] and [MaxListTTL]; zero or
// less changes nothing), whichever is shorter, and [WithoutCache] fetches
// it every turn. The list is cached per connection, which is one session
// of one identity, so a cacheScope of "private" is kept as well as
// "public". The SDK's own cache of pages is not used on the connections
// the toolset opens, so that it cannot keep a page past these rules; a
// session given to [New] keeps the SDK's behaviour for the sessions of
// the newest protocol (each page cached for the server's ttlMs, until
// list_changed). Many runs
// asking at once share one request. The tools are made once per listing and
// a tool whose definition did not change keeps its identity across
// listings, so every turn gets the same [toolset.Tool] values and the work
// that the core keys on a tool's identity (compiled validators, memoised
// snapshots) is done once. [Toolset.ToolsChanged] drops the list by hand;
// a toolset made with [New] needs it, since it cannot hook the
// notifications of a client it did not make:
//
//	var fs atomic.Pointer[mcptoolset.Toolset]
//	client := mcp.NewClient(impl, &mcp.ClientOptions{
//		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
//			if t := fs.Load(); t != nil {
//				t.ToolsChanged()
//			}
//		},
//	})
//	session, err := client.Connect(ctx, transport, nil)
//	fs.Store(mcptoolset.New(session))
//
// A server is not trusted: its listing is checked before anything is
// offered to a model. A tool is refused when its input schema does not
// compile, or when any of its schemas refers to a document other than
// itself (a "$ref", "$dynamicRef" or "$recursiveRef" that is not a
// fragment "#...", a "$schema" that is not a JSON Schema draft, an "$id"
// that is neither a fragment nor a plain http(s) URL; see
// [toolset.SchemaRefError]), so a schema never makes the process read a file or
// fetch a URL. A tool is refused too when it is over the limits of
// [WithListLimits] (schema size and nesting, description and title size),
// when its name is not one a model can call and no name mapping makes it
// one (see Tool names below), or when the server lists two tools of its
// name. A refused tool is left out, with a warning logged once per
// definition (the first ten of a listing one by one, the others counted
// in one line), [Toolset.InvalidTools] reports it ([*InvalidToolError]),
// and [toolset.Explain] lists it as refused ([toolset.ReasonRefused]);
// the server's other tools are offered. [WithFailOnInvalidTools] makes
// the listing fail instead. A listing with more tools than [ListLimits].MaxTools, or
// larger than [ListLimits].MaxListBytes, fails, and [WithListTimeout]
// bounds the time to list, all pages together, so a server that never
// answers cannot hang a turn.
//
// # Tool names
//
// MCP allows tool names of up to 128 characters with '.' in them
// ("admin.delete_user"); the models' APIs accept only
// ^[a-zA-Z0-9_-]{1,64}$, and the core refuses a turn that holds another
// name, so a tool of such a name, offered, would fail every turn of the
// agent. By default it is refused, and the refusal says how to offer it:
//
//	mcptoolset: MCP server "ops": tool "admin.delete_user" refused: the name is not one a model can call
//	(tool names must match ^[a-zA-Z0-9_-]{1,64}$); offer it under a mapped name with
//	mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNames)
//
// and [toolset.Explain] shows it among the tools of the turn (here of
// ops.Prefixed("ops")):
//
//	admin.delete_user: hidden, from Prefixed#0 "ops"/Toolset "mcp:ops"
//	  - refused by its toolset at Prefixed#0 "ops"/Toolset "mcp:ops": the name is not one a model can call (...)
//
// [WithNameMapping] offers each tool under the name a function gives it;
// [ProviderSafeNames] replaces each character providers reject with '_'
// and shortens a name over 64 bytes with a hash of the whole name
// ("admin.delete_user" is offered as "admin_delete_user"), and
// [ProviderSafeNamesWithin] leaves room for a prefix. The model calls the
// mapped name; the call reaches the server under its own name, which
// [MetaTool] keeps. Two tools that the mapping gives one name ("a.b" and
// "a_b") are both refused, each naming the other; a mapped name that
// clashes with another toolset's tool is a name conflict of the turn,
// reported by [toolset.BuildTools] as any other. A name with spaces or
// control characters, or longer than 128 bytes, is refused whatever the
// mapping: no MCP name holds them.
//
// Calling a tool sends tools/call with the arguments as they are. A
// successful result is a [*toolset.Content]: text, image, audio and
// resource content as parts, structured content as Structured;
// [toolset.ResultText] renders it for a model. Content annotations and
// _meta are not carried; a resource link becomes a part with its URI and
// media type but not its name and description. A call is never retried,
// as it may have run, and [WithCallTimeout] bounds its wait for an answer.
//
// The errors of a call are of two kinds. A result the server flags with
// isError is a [*ResultError], a [toolset.ModelError] whose message is the
// result's text: the model sees it and can try again. Anything else (the
// server cannot be reached, the connection drops, the context ends, the
// call times out, the server answers with a JSON-RPC error) is a
// [*ServerError] naming the server, the operation and the tool, and should
// stop the run. A subprocess server ([NewCommand]) that exits, at start or
// later, is reported with a [*CommandError] inside the [*ServerError]: its
// exit status and the end of its stderr, which usually say why (a missing
// key, a bad flag).
//
// # Serving toolsets
//
// [NewServer] returns a [*Server] whose tools are a toolset's:
//
//	srv := mcptoolset.NewServer(tools,
//		mcptoolset.WithImplementation(&mcp.Implementation{Name: "ops", Version: "v1.2.0"}),
//		mcptoolset.WithRunContext(func(ctx context.Context, req *mcptoolset.Request) (*toolset.RunContext, error) {
//			return toolset.NewRun("", toolset.WithValue(Role, roleOf(req.Extra.Header))), nil
//		}))
//	err := srv.ServeStdio(ctx)                               // as a local server, or
//	http.Handle("/mcp", srv.HTTPHandler(nil))                // over streamable HTTP
//
// Every tools/list and tools/call builds the toolset's tools with
// [toolset.BuildTools] under a turn of the session's run, which
// [WithRunContext] begins from the session's first request (its client,
// HTTP header and token), so a filtered or dynamic toolset shows each
// client only its own tools, and a client cannot call a tool it is not
// shown. Predicates that decide per request read the request with
// [RequestFromContext]. An error from the function refuses the request (a
// [*jsonrpc.Error] returned as it is is sent to the client, anything else
// is internal). Without it, a session's run has no values and an ID made
// from the session's.
// Calls run through [toolset.ToolList.Execute]: arguments are validated,
// policies apply. Results go out as text, [*toolset.Content] parts as MCP
// content of the same kind, and, for tools with a result schema, also as
// structured content. Tool metadata [MetaTitle] and the hint keys become
// the MCP title and annotations, so a proxied MCP tool keeps them. The
// toolset's instructions ([toolset.InstructionsProvider]) are sent at
// initialization, unless the SDK's server options set some. When a
// client's tools/call carries a progress token, the tool's
// [toolset.ReportProgress] reports become notifications/progress, sent
// before the result: a known fraction as a percentage of a total of 100,
// progress increasing with each, as MCP requires.
//
// Each MCP session is one run: its requests share the run's bookkeeping,
// each request the run's next turn. A tool search's reveals show from the
// session's next request, run-scoped caches hit across its requests,
// failure budgets hold for the session; other sessions see none of it.
// A tool that requires approval asks the client's user (see "Approvals
// over MCP"). The run is ended when the session ends, and
// [WithMaxSessionRuns] bounds the runs kept.
//
// # Clients without sessions (MCP 2026-07-28)
//
// The 2026-07-28 revision of MCP has neither sessions nor initialize: a
// client discovers the server (server/discover) and each request carries
// its protocol version and client info. [Server.HTTPHandler] serves both
// kinds of client on one endpoint: a request whose MCP-Protocol-Version
// header is 2026-07-28 or later goes to a stateless SDK handler, any other
// to a stateful one, where older clients initialize sessions as before.
// (The SDK's own handler does one or the other: a stateful one refuses
// 2026-07-28 requests.)
//
// A request without a session, a 2026-07-28 client's or any request to a
// handler made with Stateless set, carries on a run by handle. Every
// tools/list and tools/call result it gets carries, in its _meta under
// [MetaRunHandle] ("io.gotoolset/run"), an opaque handle naming the run;
// a client that sends the latest handle back in the params._meta of its
// next requests gets the same run, as a session would:
//
//	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: args})
//	handle := res.Meta[mcptoolset.MetaRunHandle]
//	list, err := cs.ListTools(ctx, &mcp.ListToolsParams{Meta: mcp.Meta{mcptoolset.MetaRunHandle: handle}})
//
// A request without a handle begins a new run. The run lives in a
// [toolset.RunStore] ([WithRunStore]; by default one in the server's
// memory): each request resumes it ([toolset.ResumeRun]), is its next
// turn, and suspends it back when this server's requests of it are done,
// so servers that share the store and the key ([WithRunKey]) behind a load
// balancer serve one client's run as one. The handle is "r1." and the
// base64url of the run's random 16-byte ID, its expiry (Unix seconds) and
// an HMAC-SHA256 under the server's key of both and of the client's
// binding ([WithRunBinding]; by default the verified bearer token's user
// ID), 78 bytes in all. A handle that is not one, was changed, was made
// with another key, has expired ([WithRunHandleTTL]) or comes from another
// client is refused with an invalid-params JSON-RPC error saying which
// (forged, changed, another key's and another client's all read "invalid
// run handle"); it never reaches a run. The run's values come from
// [WithRunOptions]: with a [WithRunContext] function and none, requests
// without a session are runs of their own, as they were before, and carry
// no handle.
//
// When a tool search reveals a tool, the server tells every client to list
// again: notifications/tools/list_changed on sessions, and on the
// subscriptions/listen streams of 2026-07-28 clients that opened one on
// this server. Lists carry ttlMs ([WithListTTL], zero by default: list
// again each time) and cacheScope "private", so a 2026-07-28 client that
// does not listen lists again before it relies on its list. The result of
// the call that revealed it says so too ([MetaListChanged]), for a client
// with neither.
//
// This package's client ([NewHTTP], [New]) is such a client: each
// connection keeps the latest handle a server gave it and sends it back
// with its tools/list and tools/call requests, so a toolset served by this
// package keeps one run per connection, as it does per session, and lists
// again after a result that says the list changed. A handle the server
// refuses (expired, or its key changed) is dropped and the request made
// once more without it, which begins a new run there: the refusal comes
// before anything runs.
//
// Errors the model should see come back as isError results with their
// text (an unknown tool too, with the names available). Other errors are
// internal: the client gets a JSON-RPC error "internal error (id …)", and
// the error is logged with the same ID ([WithServerLogger]), so a remote
// client never reads a host's error text. Every request runs under
// recover: a callback that panics (a filter, a handler, a cache key, the
// run context function) fails its request, and the server serves on.
//
// The SDK sends list changes only when its own tool registry changes, so
// when what the toolset shows changes, call [Server.ToolsChanged]: every
// connected client is told to list the tools again. Tools added to
// [Server.MCP] with the SDK's AddTool are not listed.
//
// # Approvals over MCP
//
// A served tool that requires a human's approval
// ([toolset.WithApprovalRequired]) asks the client for it. A 2026-07-28
// client that declared form elicitation gets, instead of a result, an
// input-required result (SEP-2322, multi round-trip requests): one input
// request, [ApprovalInputID] ("approval"), a form elicitation with one
// boolean, [ApprovalField] ("approve"), whose message names the tool and
// its arguments (cut to 1 KiB; characters that are not printable, such as
// bidirectional overrides, escaped as JSON escapes them), and a
// requestState. The client asks its
// user and repeats the call with the answer in inputResponses and the
// state; the server checks the state, checks that the repeated call's
// arguments and the tool's schema are those the state was made for,
// records the answer in the run ([toolset.RunContext.RecordApproval]; a
// declined, cancelled or unticked answer is a
// [toolset.RunContext.RecordDenial], whose reason the model reads) and
// runs the call. The SDK's client does all of this itself when given an
// ElicitationHandler.
//
// The requestState is "a1." and the base64url of 184 bytes (249 bytes in
// all): a random 16-byte nonce (the approved call's ID in the run), an
// expiry (Unix
// seconds, [WithApprovalStateTTL], ten minutes by default), the SHA-256
// of the tool's name, of its arguments in canonical JSON and of the run's
// ID, the tool's schema hash as [toolset.PendingApproval] names it, and an
// HMAC-SHA256 of all of it and of the client's binding ([WithRunBinding])
// under the run key ([WithRunKey], previous keys included). A state that
// was edited, made by another key or for another client, tool or run, has
// expired, or has another length is refused with an invalid-params error
// before anything runs, and so is a repeated call whose arguments differ
// from those approved. The run is that of the request's run handle, or
// its session's; in such a run, which spans requests, the call waits in
// [toolset.RunContext.PendingApprovals] until answered and a state is good
// for one answer. A request without a handle is a run of its own, so its
// state binds no run and may be answered more than once before it
// expires (the SDK's own automatic repeat resends a call without the
// handle): a state is used once only by a client that sends the run
// handle back, as this package's client does.
//
// An older client that declared elicitation is asked on its session
// (elicitation/create, the same form), and the call runs or is denied in
// the same request. A client that can do neither, or a stateless request
// of an older client, gets an isError result saying the call needs an
// approval that cannot be asked for here.
//
// This package's client takes the server's side of it into the agent's
// run. When a server answers a tools/call with an input-required result
// that asks for a confirmation (one form elicitation with one boolean
// property), the call fails with a [*toolset.ApprovalRequiredError] for
// that call, listed by the run's [toolset.RunContext.PendingApprovals],
// as for any tool that requires approval: the application asks its human
// (a provider adapter's Approver does), records the decision, and
// executes the call again, which answers the server's request with it
// (the requestState sent back as it came, at most 16 KiB, never read). A
// denial is the model's to read, and the server is not answered. Any other
// question (a form of other fields, several at once, sampling, roots) is
// an [*InputRequestError] the model sees, naming what was asked; a typed
// way to answer them from the run is left for later. The client declares
// form elicitation to servers for this, and turns off the SDK's own
// answering of input requests. An older server asks on the session
// instead (elicitation/create, while the call runs): a confirmation the
// run has not decided is cancelled and the call fails with the run's
// request for approval, as above, and the repeated call, once approved,
// accepts the server's next one. The SDK does not say which call an
// elicitation belongs to, so it is answered so only while exactly one call
// is in flight on the connection, and refused otherwise; an
// ElicitationHandler given in the ClientOptions of [WithClient] answers
// them instead. A call so stopped has not failed: it spends nothing of the
// tool's failure budget.
//
// # Tasks (MCP Tasks extension)
//
// A tool call that takes minutes need not hold a request open. The Tasks
// extension ([ExtensionTasks], "io.modelcontextprotocol/tasks", SEP-2663
// of the 2026-07-28 revision) lets a server answer a tools/call with a
// task (an ID and a status) that the client polls with tasks/get and may
// cancel with tasks/cancel. SDK v1.8.0 implements none of it; this
// package carries its wire over the SDK's extension points: the
// capabilities' Extensions, custom methods (AddReceivingCustomMethod,
// AddSendingCustomMethod) and the server's receiving middleware.
//
// Serving: a [Server] declares the extension, and serves the call of a
// long-running tool as a task to a client that declared it too (on the
// request, or for a session at initialization). A tool is long running
// when its [MetaLongRunning] metadata is "true", or by the function of
// [WithTasks]. A client that did not declare the extension, a repeated
// call that answers a request for approval, and any call after
// [Server.Close] are served synchronously as before. The call is
// answered at once with a CreateTaskResult (resultType "task", which also
// names the task in _meta["io.modelcontextprotocol/related-task"], where
// the SDK's client keeps it), and the tool runs in the background, in the
// request's turn of its run, under a context that the server owns:
// tasks/cancel, the task's lifetime, the end of the client's session and
// [Server.Close] cancel it, the client's cancellation of the tools/call
// does not. A client without a session gets its run handle (see
// [WithRunStore]) with the task, and its run goes on while the task
// runs. The tool's progress
// ([toolset.ReportProgress]) is the task's status message, and is in
// tasks/get's _meta under [MetaTaskProgress]. The tool's result, isError
// included, is the completed task's result; an error that would have
// been a JSON-RPC error fails the task with it (an internal error still
// names only an error ID); a cancelled or closed task ends "cancelled".
// A tool that asks for approval in a task gets the model an error result,
// as a task has no round trip to ask in; tasks/update is acknowledged and
// ignored.
//
// Task IDs are 24 random bytes (crypto/rand). A task belongs to the
// client that made it: its session (stdio, in memory, HTTP with a
// session ID), or, for a request without one (a 2026-07-28 client), its
// run binding ([WithRunBinding], by default the bearer token's user). To
// any other client a task does not exist: tasks/get answers "Task not
// found" (invalid params) as for a forged ID, and tasks/cancel is
// acknowledged, as for any ID, and does nothing. Without authentication
// the sessionless binding is "", and the ID alone is the secret.
// [WithTaskLimits] bounds the tasks ([TaskLimits]); a call beyond a limit
// fails with a JSON-RPC error saying which.
//
// Using a server: a [Toolset] declares the extension, and a call that
// the server answers with a task waits for it: it polls tasks/get at the
// interval the server suggests (within 20 milliseconds and 5 seconds;
// from 50 milliseconds, doubling, when it suggests none), each poll bound
// by [WithCallTimeout], the whole by [WithMaxTaskWait]. Progress the task
// reports reaches the caller's [toolset.WithProgress] callback; the end
// of the caller's context sends tasks/cancel and the call returns the
// context's error. The completed task's result is the call's, as a
// synchronous one's would be; a task that failed, was cancelled, asked
// for input, or expired (the server forgot it, or the wait ran out) is a
// [*TaskError] with the task's ID and status, inside the [*ServerError]
// of the call. The SDK's client decodes a tools/call answer as a
// CallToolResult, which drops a task's ID; the client recognizes a task
// by the related-task _meta that a [Server] sends and, over stdio, a
// command and in memory, also reads a bare CreateTaskResult (resultType
// "task") before the SDK decodes it. Over streamable HTTP, whose
// connection cannot be wrapped so, a server that sends a CreateTaskResult
// without the related-task _meta is seen to answer with an empty result.
// A caller that cancels while the tools/call itself is in
// flight leaves the task running on the server until its lifetime ends,
// as the client never learnt its ID.
//
// # Traces
//
// A call through an MCP server can be one trace with its caller. Give the
// client [WithTracePropagator] and the server [WithServerTracePropagator]
// (package oteltoolset makes the propagator from OpenTelemetry's): the
// client puts the call context's W3C "traceparent" and "tracestate" in
// params._meta of each tools/call, and the server makes them the parent
// of the call's work, so the server's spans are children of the client's
// call span. This package depends on no tracing library: the propagator
// is a [toolset.TracePropagator]. The server ignores trace fields that
// are not strings, are longer than [toolset.MaxTraceparentBytes] or
// [toolset.MaxTracestateBytes], or hold a byte outside printable ASCII;
// the call goes on without them.
//
// A [RequestObserver], given with [WithRequestObserver] and
// [WithServerRequestObserver], sees each tools/call start and end on
// either side, under that trace context; package oteltoolset/otelmcp
// records them as the spans of the MCP semantic conventions.
//
// # OAuth
//
// Both ends speak the authorization of the MCP specification: OAuth 2.1
// bearer tokens, with the protected resource metadata of RFC 9728.
//
// A served toolset checks the tokens of an issuer: [NewTokenVerifier]
// finds the issuer's keys from its metadata (RFC 8414 or OpenID Connect
// discovery) and verifies JWT access tokens with go-jose (signature,
// iss, aud, exp, nbf); [WithOAuth] makes [Server.HTTPHandler] refuse a
// request without such a token with 401 and a WWW-Authenticate header
// whose resource_metadata names the metadata that
// [OAuthConfig.MetadataHandler] serves:
//
//	v, err := mcptoolset.NewTokenVerifier(ctx, "https://login.example.com", "https://tools.example.com/mcp", nil)
//	oauth := &mcptoolset.OAuthConfig{Verifier: v.Verify, AuthorizationServers: []string{"https://login.example.com"},
//		Resource: "https://tools.example.com/mcp", ScopesSupported: []string{"tickets:read", "tickets:write"}}
//	srv := mcptoolset.NewServer(tools, mcptoolset.WithOAuth(oauth))
//	mux.Handle("/mcp", srv.HTTPHandler(nil))
//	mux.Handle(mcptoolset.ProtectedResourceMetadataPath+"/", oauth.MetadataHandler())
//
// The token's scopes are the run value [TokenScopes] ("scopes") of the
// run its session or run handle begins, which is what decides which tools
// a run sees: the required_scopes of packaged tools (package toolpkg)
// read it, and so can any filter:
//
//	admin := func(ctx context.Context, t toolset.Tool) (bool, error) {
//		return t.Metadata["scope"] == "" || slices.Contains(mcptoolset.TokenScopes.Get(ctx), t.Metadata["scope"]), nil
//	}
//
// so a tool that needs a scope is neither listed nor callable with a
// token without it. A [RunContextFunc] of the application's adds the
// token's values with [TokenRunOptions]. A session stays bound to the
// user and scopes of the token that began it (see [WithOAuth]). A token
// over [MaxTokenBytes] is refused unread; the key set is bounded
// ([MaxJWKSBytes], [MaxJWKSKeys]) and fetched with a timeout; a refused
// token's [*TokenError] says why ("expired", "wrong audience") and never
// holds the token.
//
// A toolset of [NewHTTP] calls a protected server as the identity of
// each run: [WithIdentity] names the run value that says who the run is,
// [WithTokenSource] gives each identity its tokens (golang.org/x/oauth2
// sources, which refresh), and each identity has a connection of its own,
// at most [WithMaxIdentities]. [WithAuthorization] gets the token of an
// identity that has none through the SDK's authorization code flow
// (discovery, PKCE, client ID metadata documents or registration, the
// RFC 9207 iss check, refresh): the run's request fails with an
// [*AuthRequiredError] carrying the URL to send the user to, the agent
// pauses, and [Toolset.CompleteAuthorization] resumes it with what the
// authorization server sent back:
//
//	gh := mcptoolset.NewHTTP("https://mcp.example.com/mcp",
//		mcptoolset.WithIdentity(UserID),
//		mcptoolset.WithAuthorization(&auth.AuthorizationCodeHandlerConfig{
//			ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: "https://app.example.com/client.json"},
//			RedirectURL:                    "https://app.example.com/oauth/callback",
//		}, 0))
//	_, err := toolset.BuildTools(turn, "assistant", gh)
//	if are, ok := errors.AsType[*mcptoolset.AuthRequiredError](err); ok {
//		// send the user to are.URL; at the callback:
//		err = gh.CompleteAuthorization(ctx, user, &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")})
//	}
//
// A token is sent to the endpoint's origin only: a redirect elsewhere is
// refused (see [RedirectError]) before the request is sent.
//
// # Limits
//
// Every bound and timeout, with its default. A timeout or delay set to
// zero means none (a timeout then has no bound beyond the caller's
// context); a zero field of [ListLimits], or a zero [WithMaxSessionRuns],
// keeps the default. Using a server:
//
//   - connecting and initializing: [WithConnectTimeout],
//     [DefaultConnectTimeout] (30 seconds);
//   - after a failed connection, no new attempt for [WithRetryDelay],
//     [DefaultRetryDelay] (2 seconds);
//   - listing, all pages together: [WithListTimeout],
//     [DefaultListTimeout] (30 seconds), and at most 1,000 pages;
//   - a call's wait for its answer: [WithCallTimeout],
//     [DefaultCallTimeout] (5 minutes);
//   - identities with a connection of their own: [WithMaxIdentities],
//     [DefaultMaxIdentities] (64), the least recently used closed;
//   - an authorization waiting for [Toolset.CompleteAuthorization]:
//     [DefaultAuthorizationTimeout] (10 minutes, see [WithAuthorization]);
//   - the tool list cache: kept until list_changed; [WithCacheTTL]
//     (default none), the server's ttlMs within [MinListTTL] (1 second)
//     and [MaxListTTL] (1 hour), [WithoutCache];
//   - a listing ([WithListLimits], [ListLimits]): [DefaultMaxTools]
//     (1,000) tools and [DefaultMaxListBytes] (16 MiB) in all, and per
//     tool [DefaultMaxSchemaBytes] (256 KiB) per schema,
//     [DefaultMaxSchemaDepth] (64) levels of nesting,
//     [DefaultMaxDescriptionBytes] (16 KiB) of description and of title,
//     a name of 1 to 64 letters, digits, '_' or '-' ([WithNameMapping]
//     maps the names of up to 128 bytes MCP allows), and [MaxIcons] (8)
//     icons of [MaxIconBytes] (8 KiB) each, [MaxIconsBytes] (16 KiB) in
//     all;
//   - a message from the server: 16 MiB, over stdio (the SDK's bound) and
//     over HTTP (this package's, see [WithHTTPClient]);
//   - redirects: followed only within the endpoint's origin (scheme, host
//     and port); one to another origin fails with a [*RedirectError], so a
//     call and its arguments are never re-sent to an address the program
//     did not name;
//   - error text quoting the server: 8 KiB in a [*ServerError] or
//     [*ResultError] (the model gets all of a ResultError's text), 512
//     bytes for the cause of an [*InvalidToolError], 10 refusals joined
//     under [WithFailOnInvalidTools], 10 refusals of a listing logged one
//     by one, the others in one line;
//   - a task's wait: [WithMaxTaskWait], [DefaultMaxTaskWait] (1 hour);
//     its polls within 20 milliseconds and 5 seconds apart; its progress
//     messages 1 KiB;
//   - a subprocess server's stderr: its last [MaxStderrTail] (2 KiB) kept
//     for a [*CommandError], copied for one second after it exits (or the
//     command's WaitDelay).
//
// Serving a toolset:
//
//   - the sessions whose run is kept: [WithMaxSessionRuns],
//     [DefaultMaxSessionRuns] (1,024), the least recently used dropped;
//   - tools/list page size: [WithPageSize] (default: every tool in one
//     page);
//   - a refusal's message from the run context function: 1 KiB;
//   - a run handle: 128 bytes, checked before it is decoded; good for
//     [WithRunHandleTTL], [DefaultRunHandleTTL] (1 hour) after the result
//     that carried it, as is its run's saved state after its latest save;
//   - the runs the default run store keeps: [DefaultMaxStoredRuns]
//     (4,096), the least recently saved dropped, the expired ones too;
//   - the wait of a request for a run that another server holds: 5
//     seconds, then a JSON-RPC error that says to retry;
//   - tools/list ttlMs: [WithListTTL] (default 0);
//   - tasks ([WithTaskLimits], [TaskLimits]): [DefaultTaskMaxPerClient]
//     (16) running per client, [DefaultTaskMaxTotal] (256) in all,
//     [DefaultTaskMaxLifetime] (1 hour) each, a finished task's result
//     kept [DefaultTaskRetention] (10 minutes), at most
//     [DefaultTaskMaxRetained] (1,024) kept, polls suggested every
//     [DefaultTaskPollInterval] (500 milliseconds); a task ID named in a
//     request of at most 256 bytes, a status message of 1 KiB;
//   - with [WithOAuth]: a bearer token of at most [MaxTokenBytes] (16 KiB)
//     and [MaxTokenScopes] (256) scopes; the issuer's metadata 1 MiB, its
//     key set [MaxJWKSBytes] (1 MiB) and [MaxJWKSKeys] (64) keys, each
//     fetched within 10 seconds, the key set again at most every 30
//     seconds for a token signed with an unknown key; a clock skew of one
//     minute ([VerifierOptions]).
package mcptoolset
