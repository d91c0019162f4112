// Package mesh runs packaged toolsets across processes that meet only on a
// NATS broker: the platform publishes packages, tool runtimes sync and run
// them in their sandbox, and agents call them, all speaking Solace Agent
// Mesh's remote-tool protocol.
//
// # Subjects and messages
//
// SAM's topics map one to one onto NATS subjects, "/" becoming ".":
// "{ns}.a2a.v1.sam_remote_tool.invoke.{tool}", "response.{agent}.{corr}",
// "status.{agent}.{corr}", "init.{tool}", "init_request.{tool}",
// "removed.{tool}" (see [Subjects]). Bodies are JSON-RPC 2.0 with SAM's
// method and field names ([InvokeParams], [InvokeResult], [StatusParams],
// [InitParams], [InitRequestParams], [RemovedParams]) and SAM's error codes
// (CodeToolError...). The replyTo and statusTo user properties are the
// headers [HeaderReplyTo] and [HeaderStatusTo], or, as this package's
// client sends an invoke, the NATS reply subject alone: replyTo is the
// reply subject "response.{agent}.{corr}", and statusTo follows from it
// ("status.{agent}.{corr}"). A runtime takes either form; a bridge to
// SAM's broker writes the headers.
//
// # Extensions
//
// What this package adds to SAM's protocol is either extra fields, which a
// SAM peer ignores, or subjects SAM does not define:
//
//   - Version pins: a runtime subscribes to "invoke.{tool}" and to
//     "invoke.{tool}.v{N}" for the package version N it serves. A caller
//     that lists version N invokes the pinned subject, so the call runs on
//     that version or, when no runtime holds it, the server answers "no
//     responders" at once; never silently on another version.
//   - Acknowledgement and heartbeat: status notifications with the extra
//     field "state": "accepted" once a runtime's call has run 20 ms (a
//     call that ends sooner is answered with its result alone, so a quick
//     call costs two messages, as a bare request does), "running"
//     every RuntimeOptions.Heartbeat while it runs, "progress" for each line
//     of the tool's status pipe (toolset.ReportProgress). A caller that
//     hears nothing for a few heartbeats knows its runtime died. Only a
//     "no responders" answer proves nobody received an invoke: it alone may
//     be sent again, so a tool that is not idempotent never runs twice.
//   - Cancel: "cancel.{agent}.{corr}", which every runtime hears (no queue
//     group); the runtime that runs that agent's call cancels it (its tool
//     gets SIGTERM, then the store's grace).
//   - Catalog: "{ns}.a2a.v1.sam_remote_tool.catalog", request-reply without
//     a queue group: every runtime answers with its [Catalog], so a client
//     that starts after the init broadcasts gathers the answers for a short
//     while and learns every tool and version, including those only some
//     runtimes hold during a rollout. A catalog is computed from what the
//     runtime serves, never stored, so it cannot go stale; a bucket would
//     need every runtime's entry expired when it dies.
//   - Package sync: the packages live in a JetStream Object Store bucket
//     ([Packages], one object per toolset). Runtimes watch the bucket itself
//     rather than a notification subject: the watch delivers every current
//     object first, so a runtime that starts late or restarts syncs every
//     current version before it serves, and nothing is lost while it was
//     away. "{ns}.toolset.v1.sync" carries a [SyncNotice] for observers;
//     "{ns}.toolset.v1.sync_report" carries each runtime's [SyncReport], and
//     "{ns}.toolset.v1.sync_report_request" asks every runtime to send its
//     reports again (Packages.WatchReports does, so a platform that starts
//     after the runtimes learns their state).
//   - removed announcements carry the runtime's ID: a tool is gone when no
//     runtime that announced it still serves it.
//   - Policy: an init_request's answer carries "requires_approval" and
//     "required_scopes", what the reserved configuration keys hil and
//     required_scopes make of the tool over every layer (see Policy
//     below). An invoke carries "approved" and "scopes" for them.
//   - Left out: an INIT_ERROR whose data has "unavailable": true and
//     "missing_keys" is a tool its configuration leaves out for a
//     missing required value; without it, the configuration is wrong.
//   - Input artifacts: an invoke's "artifacts_resolved" says the caller
//     resolved every artifact its arguments name, and an
//     artifact_reference's "source_version" is the version in the
//     caller's own store (see Input artifacts below).
//
// # Capacity
//
// A runtime runs at most RuntimeOptions.MaxCalls calls at once and takes no
// more from the queue. Core NATS pushes messages to a subscriber, so pending
// limits plus a semaphore would leave calls waiting in a busy runtime's
// buffer while another replica idles. Instead the runtime gates its
// subscriptions: when the last slot is taken it drains its invoke
// subscriptions (the server then routes the queue group's calls to the
// other replicas), and subscribes again when a slot frees. Drain, unlike
// Unsubscribe, still delivers what was on its way, so no call is dropped;
// those few wait for a slot. When every replica is saturated the server
// answers "no responders", which proves nobody took the call: the caller
// waits a little and sends it again, within its deadline. A JetStream work
// queue would hold calls instead, but loses the immediate "no responders"
// that tells a caller nobody serves a subject or version. A call that
// arrived while every slot was taken waits for the next one to free, and
// is woken when it does.
//
// A runtime answers at most RuntimeOptions.MaxInitRequests init_requests
// at once (each may run a tool's discovery with the configuration); one
// beyond is answered RESOURCE_EXHAUSTED, which proves it was not
// answered, and the client asks again within its RequestTimeout.
//
// # The agent's side
//
// A [Client] is one agent's view of the mesh. [NewClient] subscribes to
// the init and removed broadcasts and to the agent's own response and
// status subjects, and asks every runtime for its catalog, so that it
// knows at once what runs where. [Client.Info] says what the runtimes
// announce of a toolset (toolpkg.Info: ready with the newest version and
// its tools, or failed with a runtime's errors), and
// [Client.ToolsetWithConfig] returns it as a [Toolset], which is a
// toolset.Toolset:
//
//	c, err := mesh.NewClient(ctx, nc, &mesh.ClientOptions{Agent: "support"})
//	...
//	ts := c.ToolsetWithConfig("finance-tools", toolpkg.Config{Toolset: values})
//	list, err := toolset.BuildTools(run.Turn(ctx), "support", ts)
//
// A listing takes the newest version the runtimes serve and asks them,
// by init_request, for each tool under the agent's configuration (the
// runtimes add the toolset's stored one beneath it, as a toolpkg.Store
// does): names, schemas and instructions that depend on it hold. The
// answers are remembered for each version and configuration, so a
// steady turn costs no broker round trip. A listing fails with an error
// wrapping toolpkg.ErrNotFound while no runtime serves the toolset, a
// *toolpkg.NotReadyError when its runtimes failed to sync it, a
// *toolpkg.ConfigError when the configuration does not fit (or leaves
// every tool out); [Toolset.Unavailable] and [Toolset.Policies] say which
// tools it left out and why.
//
// A call is an invoke on the pinned subject of the version listed,
// carrying the arguments, the configuration, the run's app_name, user_id
// and session_id, and its deadline (timeout_seconds): the caller's, or
// the tool's timeout. toolset.ReportProgress gets the tool's status
// lines. The model reads the same text as in process: tool_result
// carries what a toolpkg call returns, decoded back into a
// *toolpkg.Result (or a *toolset.Content holding one, when the text was
// cut), its created artifacts listed as toolpkg.ArtifactRefs of the
// shared store. Errors are those of a toolpkg call, by SAM code:
//
//   - TOOL_ERROR, EXECUTION_ERROR: *toolpkg.ToolFailure (the model reads it)
//   - AUTHENTICATION_FAILED: *toolpkg.AuthRequiredError
//   - SANDBOX_TIMEOUT: *toolset.TimeoutError
//   - ARTIFACT_ERROR: *toolpkg.ArtifactError
//   - TOOL_NOT_FOUND, TOOL_NOT_AVAILABLE, RESOURCE_EXHAUSTED, an
//     INIT_ERROR marked unavailable, no runtime answering:
//     [*UnavailableError] (the model reads it; the next turn lists what
//     serves then)
//   - anything else: [*RemoteError], which stops the run
//
// The runtime that takes a call says so at once ("accepted") and then
// every heartbeat. A call nobody takes within ClientOptions.AcceptTimeout,
// or whose runtime goes silent for HeartbeatTimeout (killed, cut off),
// fails with an *UnavailableError whose MayHaveRun is set, before its
// deadline; it is never sent again, since it may have run. When no
// runtime serves the version (every one busy, restarting, or gone) the
// server answers "no responders": that call was received by nobody, so
// it is sent again, with a growing pause, for at most
// ClientOptions.BusyWait while a runtime still announces the version,
// and then fails with an *UnavailableError whose Code is "". Cancelling
// the caller's context cancels the call on its runtime (its tool gets
// SIGTERM).
//
// # Policy
//
// The reserved configuration keys hil and required_scopes work over the
// mesh as in process, though the stored configuration lives on the
// runtimes: the init_request answer carries what they make of the tool
// (toolpkg.ToolPolicy, resolved over the agent's overlay, its toolset
// values and the stored configuration; they only tighten), and the
// client's tool carries the same options as a toolpkg tool
// (ToolPolicy.Options): a tool that needs approval stops the run with a
// *toolset.ApprovalRequiredError until the run's Approver allows the
// call, and a tool that requires scopes is hidden from a run whose
// toolpkg.Scopes lack one. The runtime applies both again: an invoke of
// a tool that requires scopes must carry them in "scopes" (the client
// sends those of the run's scopes the tool requires, no others), else it
// is refused TOOL_NOT_FOUND with "missing_scopes", as a hidden tool is
// unknown in process; an invoke of a tool that needs approval must say
// "approved", else it is refused INVALID_REQUEST. The runtime cannot
// know that a human approved: "approved" says the caller applied its
// approval policy, so that a caller that does not know of the key
// cannot run the tool unasked.
//
// # Input artifacts
//
// A tool's artifact parameters name artifacts of the agent's store
// (ClientOptions.Artifacts, by default the namespace's shared
// [ArtifactStore]), "name" for the latest version or "name:3". The
// client loads each one the arguments name and sends it inline, in
// preloaded_artifacts, when it is at most
// ClientOptions.MaxInlineArtifactBytes (default
// DefaultMaxInlineArtifactBytes) and the call's inline artifacts stay
// within half of MaxMessageBytes; else by reference
// (artifact_references) to the shared store, copying it there first
// when the agent's store is another. A copy gets the shared store's own
// next version: the reference names that version, and "source_version"
// the agent's, so that "name:3" loads the agent's version 3, never
// another, and the tool is told version 3. An artifact the agent's store
// does not have is sent neither way, and "artifacts_resolved" tells the
// runtime not to look for it elsewhere: the tool reports it missing, as
// in process.
//
// The runtime's store reads artifacts through a store of its own in
// front of the base one (the store's ArtifactOptions.Store when the
// RuntimeOptions name one, else the namespace's shared ArtifactStore,
// where the calls' output artifacts go too): a call's context holds its
// inputs, so its artifact parameters load them as a toolpkg call loads
// its store's. Each input is checked before the tool runs: at most
// MaxInputArtifacts of them, each preloaded one at most
// MaxInlineArtifactLimit decoded (its base64 length is checked before it
// is decoded) and all of them at most MaxInlineArtifactsTotal, names
// checked with toolpkg.CheckArtifactName, MIME types and metadata
// bounded, and each keyed by an artifact parameter of the tool
// ("param", or "param[i]" for a list) whose argument names it. One that
// does not fit is an ARTIFACT_ERROR.
//
// # Runtime directory
//
// RuntimeOptions.Dir holds the runtime's toolpkg.Store (Dir/store), its sync
// state (Dir/sync.json: for each toolset the platform's version, the object
// store's digest and the local version), and packages being fetched. A
// fetched zip must match the object store's digest and is validated again by
// the store's upload; on every start, a kept zip whose digest differs from
// the object store's, or that the store cannot open, is fetched again.
//
// # Trust
//
// An invoke is answered only on its caller's own response subject: replyTo
// (or the NATS reply subject, which must then be the same) must be
// "response.{agent}.{id}" of this namespace with the request's id, and
// statusTo the matching "status.{agent}.{id}". Anything else is dropped
// unanswered. init_request and catalog requests may also be answered on a
// NATS request inbox. The packages bucket holds each toolset's stored
// configuration, secrets included: the broker must let only the platform
// and the runtimes read it.
//
// What a message says of its sender cannot be checked: NATS carries no
// sender. So the mesh rests on the broker's permissions, which give each
// role only the subjects it needs ([Permissions], [Grant]; ROLES.md beside
// this file has a ready nats-server configuration and says what each grant
// guarantees): only runtimes announce tools (init, removed, catalog
// answers), answer and report on calls, and read invokes; an agent reads
// its own responses and statuses, cancels its own calls, and never the
// packages bucket. On a broker without them, any client could announce a
// tool an agent then lists and calls, with its configuration, or take
// other agents' invokes. The embedded broker ([StartServer]) has one
// token for every role: exposed, every holder of its token is trusted as
// every role, so a deployment whose agents are not all trusted runs
// nats-server with the roles' users instead.
//
// Within what the permissions allow, the client is still wary: it takes a
// response only for a call it made, from its correlation ID's subject,
// once; after a runtime took a call, only that runtime's statuses keep it
// alive, and a "no responders" is no longer believed (the call is never
// sent twice); announcements are bounded (a few versions of a toolset, a
// bounded number of runtimes each), and a version no runtime serves any
// more is forgotten. A toolset's name may not hold "__", so that
// <toolset>__<tool> names one tool of one toolset.
//
// # Untrusted input
//
// Every message is bounded ([MaxMessageBytes], [MaxJSONDepth]) before it
// is decoded ([Decode]), and every name put in a subject is checked.
package mesh
