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
// headers [HeaderReplyTo] and [HeaderStatusTo].
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
//     field "state": "accepted" when a runtime takes the call, "running"
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
// that tells a caller nobody serves a subject or version.
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
// # Untrusted input
//
// Every message is bounded ([MaxMessageBytes], [MaxJSONDepth]) before it
// is decoded ([Decode]), and every name put in a subject is checked.
package mesh
