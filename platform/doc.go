// Package platform serves the toolset platform: an HTTP service through
// which teams upload packaged toolsets (see package toolpkg), watch their
// discovery, configure them and declare the agents that use them (see
// package agentfile). A [Server] serves a [toolpkg.Store]; the command
// "toolset platform" runs one.
//
//	store, err := toolpkg.Open(dir, nil)
//	...
//	srv, err := platform.New(store, &platform.Options{Token: token})
//	...
//	http.ListenAndServe(addr, srv) // with timeouts: see the command
//
// # The API
//
// The JSON API lives under /api/v1/platform/. Every answer is JSON, and
// every error is {"error": {"code", "message"}} with a stable code (see
// [WriteError] and [ErrorDetail]); InvalidPackage, InvalidConfig and
// InvalidAgent add "problems": [{"line", "column", "message"}], every
// problem at once.
//
//	POST   /toolsets                {"name"}     201 ToolsetSummary (created); 409 Conflict
//	GET    /toolsets?page=&pageSize=             200 {"data": [ToolsetSummary], "meta": {"page", "pageSize", "total"}}
//	                                             (&removed=true: the removed toolsets too)
//	GET    /toolsets/buildTarget                 200 {"os", "arch"} that packages are built for
//	GET    /toolsets/{name}                      200 ToolsetDetail
//	PUT    /toolsets/{name}/package[?force=true] (body: the zip) 202 ToolsetDetail (pending)
//	GET    /toolsets/{name}/package[?version=N]  200 application/zip, the package as uploaded
//	PATCH  /toolsets/{name}/config  (merge patch) 200 {"name", "config"}
//	GET    /toolsets/{name}/config               200 {"name", "config"}
//	DELETE /toolsets/{name}[?force=true]         200 ToolsetSummary (removed)
//	GET    /agents?page=&pageSize=               200 {"data": [AgentSummary], "meta": {...}}
//	PUT    /agents/{name}           (body: YAML) 201 (new) or 200 AgentDetail; 422 InvalidAgent; 409 Conflict
//	POST   /agents/{name}/check     (body: YAML) 200 AgentDetail, storing nothing; 422 InvalidAgent
//	GET    /agents/{name}                        200 AgentDetail, with the problems it has against the store now
//	DELETE /agents/{name}                        204
//
// A toolset is in use while a stored agent names it: uploading its
// package again or removing it answers 409 PackageInUse, naming the
// agents, unless ?force=true; while an upload or a removal of a toolset
// is under way (its body arriving, or waiting for the store), an agent
// naming it is refused 409 Conflict, so that no agent slips in between
// the check and the change. The codes: InvalidName,
// InvalidRequest (400); Unauthorized (401); CrossOriginRequest (403);
// NotFound (404); MethodNotAllowed (405); RequestTimeout (408); Conflict,
// PackageInUse (409); PackageTooLarge, RequestTooLarge (413);
// MisdirectedRequest (421); InvalidPackage, InvalidConfig, InvalidAgent
// (422); InternalError (500); Unavailable (503).
//
// # The lifecycle
//
// A toolset is created (by POST, or by its first upload), then each
// upload makes it pending while the store discovers its tools in the
// background, then ready or failed. A failed re-upload leaves the previous
// version serving: servingVersion says which. DELETE makes it removed.
// Uploads of one toolset are serialised and discovery is bounded by the
// store; the server bounds how many upload bodies it reads at once
// (Options.MaxConcurrentUploads). Everything is kept in the store's
// directory: the store's records, versions and configuration, and the
// server's agents under <store>/.platform/agents. A restart loses
// nothing, and a toolset pending when the process stopped is discovered
// again when the store opens.
//
// The platform only parses and checks agent files: it never starts what
// one names (an MCP server's command would run on the platform's host).
// An agent naming a package that is not ready is refused. A stored agent
// is checked again each time it is read: a forced re-upload that drops a
// tool the agent configures shows in its problems.
//
// POST /agents/{name}/check is a dry run of the PUT: it parses and checks
// the file exactly as the PUT does, answering the same 422 InvalidAgent,
// or 200 with what the PUT would store (updatedAt: now), but it stores
// nothing and puts no package in use ("toolset agent check --platform"
// calls it, since a running platform holds its store's lock).
//
// # Skills
//
// Skills (package toolpkg/skill: a SKILL.md with front matter, then
// references/, assets/ and optional bundled tools/) are uploaded as a zip
// of the skill's directory (SKILL.md at the zip's root, or in its only
// top-level directory), bounded as packages are (Options.MaxPackageBytes):
//
//	GET    /skills?page=&pageSize=               200 {"data": [SkillSummary], "meta": {...}}
//	PUT    /skills/{name}           (body: the zip) 202 SkillDetail; 422 InvalidSkill, every problem at once
//	GET    /skills/{name}                        200 SkillDetail: front matter, files, tools
//	DELETE /skills/{name}                        204
//
// A skill's name is the agentskills.io one (lowercase letters, digits and
// single hyphens) and must be its front matter's. A skill without tools
// is ready at once; one with tools is pending while a store of skills'
// tools of its own (<store>/.platform/skill-tools, in the toolsets'
// store's sandbox mode) discovers them as a toolset named after the
// skill, then ready or failed; they are never listed as toolsets.
// [Server.SkillToolset] turns the skills an agent attaches into the
// toolset that offers them (load_skill, read_skill_file, and each loaded
// skill's tools as <skill>__<tool>). Skills are kept under
// <store>/.platform/skills.
//
// # Runtimes
//
// With Options.Distributor the platform's store only discovers and
// checks: the tools run on runtimes elsewhere, which the distributor
// reaches (package mesh, over a broker; the command "toolset platform"
// wires it). Once the platform's own discovery finds a version ready, it
// publishes that version's zip with the toolset's stored configuration
// (secrets in clear, for the runtimes to run the tools with); it
// publishes again when the configuration changes, withdraws a removed
// toolset, and at each start publishes what the store serves and
// withdraws what it removed. A version whose discovery fails here is
// never published, so the runtimes keep the version that serves. A
// failed publication is tried again, later and later.
//
// Each runtime reports what it made of a version ([SyncReport]). A
// toolset is ready only when the platform's discovery found it ready and
// a runtime reported every one of its tools for its latest version:
// until then it shows pending, and failed, with the runtimes' errors,
// when the runtimes that reported all failed (one that reports ready
// without a tool the platform found counts as failed). Reports are
// untrusted: one on a toolset the platform lacks or on a version not its
// latest is ignored, and what is kept is bounded ([MaxRuntimesPerToolset]
// runtimes a toolset, [MaxReportErrors] errors a report). Reports are
// kept in memory: after a restart a toolset is pending until a runtime
// reports again, and a runtime that reported and then stopped is not
// noticed. An agent is checked against these statuses.
//
// # Authentication
//
// Every API request must carry "Authorization: Bearer <token>"
// ([RequireToken]); [LoadToken] reads the token from a file or the
// TOOLSET_PLATFORM_TOKEN environment variable. A session cookie does not
// open the API. Options.InsecureNoAuth serves everything without
// authentication, for local use only: the server logs a warning and the
// page shows a banner, and it answers only requests whose Host is an IP
// address or localhost (421 MisdirectedRequest otherwise), so that a web
// page cannot reach it by DNS rebinding. Whatever the mode, a request a
// browser marks as cross-site is refused unless it is safe (GET, HEAD,
// OPTIONS): 403 CrossOriginRequest.
//
// # The page
//
// At / the server renders a status page with html/template (every text a
// package gives is escaped), one embedded stylesheet, no script and
// nothing from elsewhere: the toolsets with a coloured dot for their
// status, a page per toolset with its tools and their parameters,
// discovery errors, versions, configuration (secrets redacted) and the
// agents using it, and an upload form. A page showing a pending toolset
// reloads itself every Options.RefreshInterval until it settles.
//
// A person logs in by pasting the token into the login form. The session
// cookie is HttpOnly, SameSite=Strict, Secure over TLS (or behind a proxy
// that says X-Forwarded-Proto: https), and holds no
// token: it is an issue time and a random id signed with HMAC under a key
// drawn at random by each process, and the process remembers the ids it
// issued, so sessions end with logging out (a copy of the cookie opens
// nothing after), with Options.SessionLifetime and with the process. Form posts from another origin are refused
// ([http.CrossOriginProtection]). Every answer carries a strict
// Content-Security-Policy (no script, frame-ancestors 'none'),
// X-Content-Type-Options: nosniff, X-Frame-Options: DENY and
// Referrer-Policy: no-referrer.
//
// # Limits
//
// A package is bounded by Options.MaxPackageBytes while its body is read:
// 413 PackageTooLarge comes as soon as the limit is passed (at once when
// a Content-Length says so), and the body is spooled to a temporary file
// under <store>/.platform/tmp, cleaned when a server starts. JSON bodies
// are bounded by MaxJSONBody and decoded strictly (no unknown field,
// nothing after the value); agent files by Options.MaxAgentBytes. Reading
// any body waits at most Options.BodyIdleTimeout for the next bytes: a
// client that stalls is answered 408 RequestTimeout and its upload slot
// freed, even on an http.Server without timeouts. A listing shows at
// most [MaxListedErrors] discovery errors of each toolset, each cut to
// [MaxListedErrorBytes] (a toolset's own answer has them all). Names
// of toolsets and agents are checked with [toolpkg.CheckName] (1 to 64
// letters, digits, '_' or '-'); a path that is not in its clean form
// ("..", "//", even percent-encoded) is not found rather than redirected.
// A handler's panic is logged and answered 500 InternalError, never shown
// to the client. The command sets the http.Server's timeouts.
package platform
