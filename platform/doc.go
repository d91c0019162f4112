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
// Each route needs a scope (see [Scope] and Authentication below),
// given in the first column:
//
//	publish POST   /toolsets                {"name"}     201 ToolsetSummary (created); 409 Conflict
//	read    GET    /toolsets?page=&pageSize=             200 {"data": [ToolsetSummary], "meta": {"page", "pageSize", "total"}}
//	                                                     (&removed=true: the removed toolsets too)
//	read    GET    /toolsets/buildTarget                 200 {"os", "arch"} that packages are built for
//	read    GET    /toolsets/{name}                      200 ToolsetDetail
//	publish PUT    /toolsets/{name}/package[?force=true] (body: the zip) 202 ToolsetDetail (pending)
//	read    GET    /toolsets/{name}/package[?version=N]  200 application/zip, the package as uploaded
//	publish PATCH  /toolsets/{name}/config  (merge patch) 200 {"name", "config"}
//	read    GET    /toolsets/{name}/config               200 {"name", "config"}
//	publish DELETE /toolsets/{name}[?force=true]         200 ToolsetSummary (removed)
//	read    GET    /agents?page=&pageSize=               200 {"data": [AgentSummary], "meta": {...}}
//	agents  PUT    /agents/{name}           (body: YAML) 201 (new) or 200 AgentDetail; 422 InvalidAgent; 409 Conflict
//	agents  POST   /agents/{name}/check     (body: YAML) 200 AgentDetail, storing nothing; 422 InvalidAgent
//	read    GET    /agents/{name}                        200 AgentDetail, with the problems it has against the store now
//	agents  DELETE /agents/{name}                        204
//	agents  POST   /agents/{name}/deploy                 200 AgentDetail (deployed); 409 NotDeployable, every reason
//	read    GET    /agents/{name}/effective              200 EffectiveAgent; 404 NotDeployed before the first deploy
//	admin   POST   /tokens                  {"name", "scopes"} 201 NewToken, its secret shown this once; 409 Conflict, TooManyTokens
//	admin   GET    /tokens?page=&pageSize=               200 {"data": [TokenInfo], "meta": {...}}, never a secret or a hash
//	admin   DELETE /tokens/{name}                        204: the token and its page sessions open nothing from the next request
//
// The page's routes: GET /, GET /toolsets/{name}, GET /agents, GET
// /agents/{name}, GET /skills and GET /skills/{name} need read; POST
// /upload publish; POST /agents/{name}/deploy, GET and POST
// /agents/{name}/attach agents; the login form, the stylesheet and POST
// /logout need no session.
//
// A toolset is in use while a stored agent names it: uploading its
// package again or removing it answers 409 PackageInUse, naming the
// agents (and, in "inUse" ([InUse]), those deployed and the serving
// version's tools), unless ?force=true; while an upload or a removal of a toolset
// is under way (its body arriving, or waiting for the store), an agent
// naming it is refused 409 Conflict, so that no agent slips in between
// the check and the change. The codes: InvalidName,
// InvalidRequest (400); Unauthorized (401); CrossOriginRequest,
// Forbidden (403);
// NotFound (404); MethodNotAllowed (405); RequestTimeout (408); Conflict,
// PackageInUse, NotDeployable, TooManyTokens (409); NotDeployed (404);
// PackageTooLarge, RequestTooLarge (413);
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
// server's agents under <store>/.platform/agents (their secrets and
// deployments beside) and tokens under <store>/.platform/tokens. A
// restart loses
// nothing, and a toolset pending when the process stopped is discovered
// again when the store opens.
//
// The platform only parses and checks agent files: it never starts what
// one names (an MCP server's command would run on the platform's host).
// A stored agent is checked again each time it is read: a forced
// re-upload that drops a tool the agent configures shows in its problems.
//
// # Deploying an agent
//
// An agent is created, then deployed. It may name a toolset that is
// created, pending or failed: its detail lists each toolset it names with
// its status and discovery errors ([AgentToolset]). A toolset the store
// does not have (or removed) is a problem of the PUT: it is most often a
// typo, and a toolset is created before its package by POST /toolsets.
// POST /agents/{name}/deploy is refused, 409 NotDeployable with every
// reason as problems, until every toolset it names is ready, the file
// checks against them, and every required configuration value (secrets
// included) of each tool it gets is given at some layer (the agent's
// value for the tool, its toolset-level value, the toolset's
// configuration, the schema's default); excluded tools do not count, and
// a problem names the toolset, the tool and the key. A deploy records the
// toolset versions it deployed and the agent's effective document
// ([EffectiveDocument]): the agent in the reference platform's shape,
// each toolset expanded into tool_type: builtin entries named
// <toolset>__<tool> with their resolved tool_config, in which each
// secret is a reference, never the value:
// ${secret:agent/TOOLSET/TOOL/KEY} for one the agent's file gives
// ([AgentSecretRef]), ${secret:toolset/TOOLSET/KEY} for one of the
// toolset's configuration ([ToolsetSecretRef]), which the runtimes
// receive from the distributor; a secret's schema default is left to the
// runtime. Runners read it ("toolset serve --agent NAME --platform
// URL"). The detail says needsRedeploy when a deploy now would make
// another document (the file, a toolset's version or configuration
// changed). Local and MCP entries of a file are not expanded: the
// document carries the packaged toolsets.
//
// A forced re-upload of a toolset redeploys, once its new version is
// ready (with a Distributor, confirmed by a runtime), every deployed agent
// that names it; the agent's detail then shows the redeploy ([Redeploy]):
// the versions, the tools added, removed and changed (description,
// parameters or configuration schema), or, when the agent no longer
// deploys with the new version (a tool it configures is gone, a new
// required value is missing), the problems, its deployment left as it
// was. The 409 PackageInUse before the upload cannot show that diff: the
// tools of a version are known only once its discovery has run its
// executables, which an upload that is refused does not start.
// Deployments are kept under <store>/.platform/deploys.
//
// # Secrets
//
// Secrets are write-only. A value an agent file gives for a secret key
// (one a tool of the toolset's serving version declares secret, auth, or,
// while no version of the toolset is known, any key) is kept apart from
// the file, in <store>/.platform/secrets/<agent>.json (0600), and the
// stored file holds toolpkg.RedactedValue ("<REDACTED>") in its place (a
// comment repeating the value goes too; the file is then written again
// from its YAML tree, comments kept). Every answer (the agent's detail,
// its check, the listing, the effective document, problems, logs, the
// page) shows the file so. A file sent back with "<REDACTED>" where a
// value is stored keeps that value; "<REDACTED>" where none is stored is
// a problem. A value kept apart stays so even when its key is no longer
// secret, until it is given again. A secret under a YAML anchor, or given
// by an alias, is refused. While a toolset's latest upload is pending or
// failed, which of its keys the next version takes for secret is not
// known: every value an agent gives it then is kept apart. A secret key
// may be given in one entry of a toolset only (a second entry of the same
// package, prefixed, is refused when both give it). An MCP entry's
// headers, and its environment variables named like credentials (KEY,
// TOKEN, SECRET, PASSWORD, ...), must be ${NAME} references, given by
// the runner that resolves the file: one in clear is refused, never
// quoted. The toolset's own configuration follows the same rules in the
// store (see toolpkg).
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
//	read    GET    /skills?page=&pageSize=               200 {"data": [SkillSummary], "meta": {...}}
//	publish PUT    /skills/{name}           (body: the zip) 202 SkillDetail; 422 InvalidSkill, every problem at once
//	read    GET    /skills/{name}                        200 SkillDetail: front matter, files, tools
//	read    GET    /skills/{name}/archive                200 application/zip, as uploaded (header Skill-Version); 409 NotReady
//	publish DELETE /skills/{name}[?force=true]           204; 409 SkillInUse, naming the agents that attach it
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
// An agent file attaches skills by name (spec.skills: [NAME]). A skill
// the platform does not have is a problem of the agent's PUT, as an
// unknown toolset is; a deploy is refused, 409 NotDeployable naming each,
// until every attached skill is ready. The effective document lists them
// (spec.skills, [EffectiveSpec]) and the deployment records their
// versions (EffectiveAgent.SkillVersions); a runner fetches each from
// GET /skills/{name}/archive. A skill attached to an agent is in use:
// deleting it answers 409 SkillInUse, naming the agents ([SkillInUse]),
// unless ?force=true.
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
// Every API request must carry "Authorization: Bearer <token>"; others
// are answered 401 Unauthorized. A token is the server's own
// (Options.Token, which [LoadToken] reads from a file or the
// TOOLSET_PLATFORM_TOKEN environment variable), an admin token, or one
// the platform issued and stores: created by POST /tokens with a name
// and scopes, listed by GET /tokens, revoked by DELETE /tokens/{name}
// (the command "toolset platform token" does all three). A session
// cookie does not open the API.
//
// A token's scopes say what it may do: read (every GET), publish
// (creating, uploading, configuring and removing toolsets and skills),
// agents (creating, checking, updating, deleting and deploying agents)
// and admin (everything, managing the tokens too). Every token may read,
// whatever its scopes; admin implies every scope. A request whose token
// lacks the scope of its route is answered 403 with
// {"error": {"code": "Forbidden", "message": "this token lacks the
// publish scope"}}. Each route declares its scope where it is
// registered ([Server.Routes] lists them); a route registered without
// one needs admin.
//
// An issued secret is "tsp_" and 43 characters of base64url: 256 random
// bits, shown once, in the answer of the POST. The platform keeps only
// its SHA-256, in <store>/.platform/tokens/<name>.json (mode 0600, with
// the name, the scopes, when it was created and, to within a minute,
// last used), at most [MaxTokens] tokens. A slow password hash (bcrypt,
// scrypt) protects secrets people choose, which can be guessed from
// their hash; 256 random bits cannot be, so SHA-256 costs an attacker
// holding the files as much, while a slow hash would cost the platform
// its time on every request. The hash of a request's token is compared
// with every stored one's in constant time, none skipped: how long the
// check takes says nothing of which bytes matched, nor which token. A
// revoked token is refused from the next request, and the page's
// sessions opened with it end.
//
// Options.InsecureNoAuth serves everything without authentication, for
// local use only, as if every request held admin: the server logs a
// warning and the page shows a banner, and it answers only requests
// whose Host is an IP address or localhost (421 MisdirectedRequest
// otherwise), so that a web page cannot reach it by DNS rebinding.
// Whatever the mode, a request a browser marks as cross-site is refused
// unless it is safe (GET, HEAD, OPTIONS): 403 CrossOriginRequest.
//
// # The page
//
// At / the server renders a status page with html/template (every text a
// package gives is escaped), one embedded stylesheet, no script and
// nothing from elsewhere: the toolsets with a coloured dot for their
// status, a page per toolset with its tools and their parameters,
// discovery errors, versions, configuration (secrets redacted) and the
// agents using it with their last redeploy's tool diff, and, for a
// session whose token holds publish, an upload form. At /agents the
// agents, each deployed or not and whether it needs a redeploy; at
// /agents/{name} one agent: its toolsets with their dots, its deployed
// versions, the reasons a deploy is refused now (those of POST
// .../deploy), the last redeploy with the tools it added, removed and
// changed, and its file as stored, secrets redacted. A session whose
// token holds agents sees a Deploy button there and a form, in two
// steps, to attach a ready toolset: its tools' configuration fields
// (text, number, a true/false select; secrets as password fields, never
// filled back: left empty, or given as <REDACTED>, the stored value is
// kept). The form adds the toolset to the file's toolsets and its values
// to its toolsetConfigs (under spec in SAM's shape) and stores the file
// as a PUT does: a value of the wrong type, a key no tool declares, a
// field over 1 KiB, a toolset that is not ready, or a file the check
// refuses, is said on the page and changes nothing. At /skills the
// uploaded skills with their dots, and at /skills/{name} one: its front
// matter, files and tools. A page showing a pending toolset or skill
// reloads itself every Options.RefreshInterval until it settles.
//
// A person logs in by pasting a token, the server's own or an issued
// one, into the login form; the session has that token's scopes, and
// ends when the token is revoked. An action the session's token lacks
// the scope for is answered 403 with a page saying which. The session
// cookie is HttpOnly, SameSite=Strict, Secure over TLS (or behind a proxy
// that says X-Forwarded-Proto: https), and holds no
// token: it is an issue time and a random id signed with HMAC under a key
// drawn at random by each process, and the process remembers the ids it
// issued, with their tokens, so sessions end with logging out (a copy of the cookie opens
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
