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
// # Untrusted input
//
// Every message is bounded ([MaxMessageBytes], [MaxJSONDepth]) before it
// is decoded ([Decode]), and every name put in a subject is checked.
package mesh
