// Package agentfile declares agents in YAML: an agent's name, its
// instructions and its toolsets, each taken from a source (a Go toolset
// the program registers, an MCP server, a packaged toolset of a
// [toolpkg.Store]) and given the library's composition and policies.
//
// A program loads a file with its registry of local toolsets and its
// store, and builds each turn's tools from the agent's toolsets:
//
//	agent, err := agentfile.Load(ctx, "support.yaml", &agentfile.Options{
//		Local: map[string]toolset.Toolset{"orders": orders},
//		Store: store,
//		LookupEnv: agentfile.AllowEnv("FILES_KEY", "DOCS_TOKEN"),
//	})
//	if err != nil {
//		return err // every problem of the file, as FILE:LINE:COL: message lines
//	}
//	defer agent.Close() // stops the MCP servers it started
//
//	run := toolset.NewRun(requestID, agent.WithRole("staff"))
//	defer run.End()
//	turn := run.Turn(ctx)
//	tools, err := toolset.BuildTools(turn, agent.Name, agent.Toolsets...)
//
// # The format
//
// A complete file, every key shown:
//
//	name: support                  # required: 1 to 128 bytes, one line
//	instructions: |                # optional: system-prompt text
//	  Answer the customer's questions about their orders.
//	roleKey: plan                  # optional: the run value roles match ("role")
//	toolsets:                      # in the order the model is sent the tools
//	  - local: orders              # a Go toolset the program registers
//	    prefix: orders             # tools become orders_<name>
//	    rename: {lookup: find}     # before the prefix: orders_find
//	    roles: [staff, admin]      # only runs whose roleKey value is one of these
//	    timeout: 30s               # each call; the model is told when it runs out
//	    maxFailures: 3             # failing steps per run, then the tool is gone
//	  - mcp:                       # an MCP server over stdio...
//	      name: files              # optional: its name in labels and errors
//	      command: [mcp-server-filesystem, /srv/docs]
//	      env: {LOG_LEVEL: warn, API_KEY: "${FILES_KEY}"}
//	    deferred: true             # behind the agent's tool search
//	  - mcp:                       # ...or over streamable HTTP
//	      url: https://mcp.example.com/mcp
//	      headers: {Authorization: "Bearer ${DOCS_TOKEN}"}
//	    cache: {ttl: 5m, scope: run, maxEntries: 100}
//	    rateLimit: {calls: 10, per: 1m, burst: 2, reject: true}
//	  - package: finance           # a packaged toolset: finance__<tool>
//	    config: {region: eu}       # toolset-level values
//	    tools:                     # values by tool (its name in the package)
//	      quote: {currency: EUR}
//	    exclude: [refund]          # tools of the package this agent does not get
//	    approval: true             # every call waits for a human
//	  - weather                    # a package by name alone
//	toolsetConfigs:                # SAM's per-agent configuration
//	  - toolset: weather
//	    configValues: {forecast: {units: metric}}
//	    excludedTools: [alerts]
//	skills: [pdf-reading]          # attached skills (see SAM's documents)
//
// Every key is checked: an unknown key, a duplicate key, a value of the
// wrong type or out of its bounds is a problem. Durations are Go's
// ("30s", "5m", "1h30m"). A value of mcp.env or mcp.headers may hold
// ${NAME}, replaced when the agent is resolved by a variable the
// deployer gives in [Options.LookupEnv], so that secrets stay out of the
// file; an unset variable is a problem then. No variable is given by
// default: [AllowEnv] names those of the process's environment files may
// use, since a file that could name any would send the process's secrets
// to a server of its choosing. mcp.url must be http or https and may not
// hold credentials.
//
// The file is bounded before any work: at most [MaxFileBytes], one YAML
// document of UTF-8 text of at most 50 000 YAML tokens (names, values
// and punctuation, counted before the YAML library builds its tree of
// them), at most [MaxNodes] nodes walked (an alias is
// walked at each use, so an alias bomb stops there), configuration
// values nested at most [MaxDepth] deep, at most [MaxItems] entries in
// any list or map and [MaxToolsets] toolsets. Keys must be strings; YAML
// merge keys (<<) are refused.
//
// # Sources
//
// Each toolset has exactly one source:
//
//   - local: NAME, a Go toolset the program gives in [Options.Local]. It
//     belongs to the program: [Agent.Close] leaves it open.
//   - mcp: a server started as a command (command: [PROGRAM, ARG...],
//     with the deployer's environment plus env) or reached at url (with
//     headers), through package mcptoolset; it connects on first use.
//   - package: NAME (or NAME alone in the list), a toolset of
//     [Options.Store] as Store.ToolsetWithConfig(NAME, config), whose
//     tools are named NAME__TOOL. It follows the store: a re-upload is
//     used from the agent's next turn, with no change to the agent.
//     Without a store, [Options.Packages] gives the toolsets the same
//     way, such as those of runtimes elsewhere that a broker's client
//     stands for.
//     config holds the toolset-level values, tools the values by tool,
//     exclude the tools left out: a [toolpkg.Config].
//
// # Composition
//
// An entry's tools are given its policies, then renamed (rename maps the
// source's names to new ones), then prefixed (prefix, followed by "_"
// unless it ends in "_" or "-"), then filtered by roles: with roles, the
// toolset shows only in runs whose role is one of them. A run's role is
// the string run value the file's roleKey names, "role" ([Role]) when it
// names none: give it with [Agent.WithRole], which knows the key, or with
// toolset.WithValue(toolset.NewKey[string](KEY), ...). A run without that
// value sees no entry that has roles. A
// deferred entry's tools stay out of the model's list until the agent's
// tool search ("tool_search", appended to [Agent.Toolsets] when any entry
// is deferred) finds them in the run.
//
// # Policies
//
// Each policy is the library's, per tool: timeout is
// [toolset.WithTimeout] (told to the model), cache [toolset.WithCache]
// (scope process, the default, or run; cache: true for no TTL; a process
// cache gives one run's result to every run that makes the same call, so
// a tool whose results depend on the run's user, such as a package tool
// with auth, needs scope run),
// rateLimit [toolset.WithRateLimit], approval [toolset.WithApprovalRequired]
// for every call, maxFailures [toolset.WithMaxFailures], deferred
// [toolset.WithDeferred]. An MCP server's tools get them as they are made
// ([mcptoolset.WithToolOptions]). A local or packaged toolset's tools are
// made by someone else, so each is offered as a tool of its own with the
// same name, description and schemas and the entry's policies, calling
// the original through its whole call path; the made tool lasts as long
// as the original stays the same, so a cache or a rate-limit window
// lasts from turn to turn. The original keeps its own guards: it is
// shown to the turns its own enabled checks allow (a package's
// required_scopes), a call it has a human approve is neither answered
// nor kept by the entry's cache, and the entry's approval does not ask
// again for a call the original asks for itself.
//
// # Checking
//
// [Parse] checks syntax and shape, and [Check] checks a parsed file
// against what the deployer has: local toolsets the registry lacks,
// packages the store lacks or that are not ready (a platform refuses to
// deploy such an agent), configuration keys the package's tools do not
// take or values of the wrong type, excluded and renamed tools the
// package lacks, a prefix that makes a name longer than 64 bytes, a
// rename or a second entry of a package that offers a run the same tool
// name twice (entries shown to different roles may share names). Both
// return every problem at once in a [*CheckError], one [Problem] each
// with its line and column, sorted; at most 100, the rest counted. What
// the options do not give is not checked. Check also reports a required
// configuration key of a package's tool (a secret or not) that no layer
// sets, neither the agent, nor the toolset's stored configuration (read
// when the [Packages] are [StoredConfigs], as a store's are), nor a
// default: at run time such a tool is left out without a word. It
// checks attached skills when [Options.Skills] is set.
//
// Parse and Check never start a process nor open a connection, whatever
// the file says: a platform may run them on documents its users upload.
// Only [File.Resolve] (and [Load]) makes MCP clients, which start their
// commands or connect when first used.
//
// Resolving a file trusts its author with what its MCP entries do: a
// command runs as the resolving process, with its environment, and a url
// is reached from that process's network, internal hosts included. A
// program that resolves files it did not write (a platform running its
// users' agents) refuses the entries whose Entry.MCP is set, or resolves
// them only where their author may run programs and reach hosts, and
// gives LookupEnv only the variables those authors may read.
//
// # SAM's documents
//
// Solace Agent Mesh's (SAM's) documents load as SAM writes them, with
// [Parse] for an agent and [ParseDocument] for any kind: agent, toolset
// or manifest. An agent document in SAM's shape, every field SAM
// defines:
//
//	kind: agent
//	name: finance-assistant                    # the agent's name
//	description: Answers questions about markets.
//	spec:
//	  type: standard
//	  modelProvider: [general]
//	  deploy: true
//	  systemPrompt: |                          # the agent's instructions
//	    You help the finance team read the markets.
//	  toolsets: [finance-tools, builtin_artifact_tools]
//	  inputModes: [text/plain]
//	  outputModes: [text/plain]
//	  skills:
//	    - id: market-analysis                  # the agent card's: an id
//	      name: Market analysis
//	      description: Reads a ticker's technical indicators.
//	      tags: [finance]
//	    - market-glossary                      # attached: a name...
//	    - skill: risk-rules                    # ...or {skill: NAME}
//	  toolsetConfigs:
//	    - toolset: finance-tools
//	      configValues:
//	        market_get_technicals: {api_token: demo-token}
//	      excludedTools: [market_place_order]
//	  tools:
//	    - tool_type: builtin                   # one tool of a package
//	      tool_name: news-tools__headlines
//	      tool_config: {region: eu}
//	    - tool_type: mcp                       # an MCP server
//	      tool_name: read_file                 # optional: that tool alone
//	      connection_params:
//	        type: stdio                        # or streamable-http, with url and headers
//	        command: mcp-server-filesystem
//	        args: [/srv/reports]
//	      environment_variables: {LOG_LEVEL: warn}
//	    - tool_type: builtin-group             # noted, left out
//	      group_name: artifact_management
//
// What each field becomes:
//
//   - name is the agent's name, systemPrompt its instructions.
//   - spec.toolsets are packages by name, each an entry whose tools the
//     model sees as <toolset>__<tool>, the toolset's hyphens kept
//     (finance-tools__market_get_technicals). A name beginning with
//     "builtin_" is one of SAM's built-in groups of tools of its own
//     process, not a package: it is not provided here, and a warning
//     says so.
//   - spec.toolsetConfigs are merged into the first package entry of
//     their toolset: configValues are values by tool (Config.Tools),
//     excludedTools the tools left out; a key set twice is a problem.
//   - spec.tools: a builtin entry named TOOLSET__TOOL is that tool of
//     the package (Entry.Only), its tool_config and required_scopes
//     values of that tool; it joins the entry of its toolset when there
//     is one, where a toolset listed whole already gives it, and the
//     tools of one toolset named one by one share one entry (so that
//     toolsetConfigs reaches them all). An mcp entry is an MCP server
//     entry (stdio: command and args, with env and
//     environment_variables; streamable-http: url and headers), limited
//     to tool_name when given. A builtin-group entry is warned of and
//     left out. A builtin entry without "__" (a tool of SAM's own
//     process), an openapi entry and SAM's sse transport are problems:
//     this package has nothing to run them with.
//   - spec.skills are told apart by shape alone: a map with an id is a
//     skill of the agent card (File.Card: {id, name, description, tags,
//     examples, inputModes, outputModes}), which other agents discover;
//     a string, or a map with skill and no id, names an attached skill
//     (File.Skills), a SKILL.md bundle uploaded to the platform, which
//     [Check] looks up with [Options.Skills]. Any other shape is a
//     problem that shows both.
//   - description, type, modelProvider, deploy, inputModes, outputModes
//     and the card's skills are kept on [File] as given and not acted on
//     here; a warning, with its line, says so for each.
//
// A warning is not a problem: it is in File.Warnings (and in
// CheckError.Warnings of a document refused for its problems), and
// never fails a load. A key SAM does not define stays a problem.
//
// A kind: toolset document is a toolset's name, description and
// spec.config, its toolset-level configuration ([ToolsetDoc]). A kind:
// manifest document gathers resources: agents and toolsets, each read
// as a document of its kind, and models, connectors and workflows, kept
// and warned of. A file holds one document, bounded as an agent file is;
// a manifest is how several travel together:
//
//	kind: manifest
//	resources:
//	  toolsets:
//	    - name: finance-tools
//	      spec:
//	        config: {region: eu}
//	  agents:
//	    - name: market-analyst
//	      spec:
//	        systemPrompt: You analyse tickers.
//	        toolsets: [finance-tools]
//
// # SAM's shape and the project's format
//
// The two meet in one parser and one checker: a document with kind,
// spec, apiVersion or metadata at its top level is read in SAM's shape,
// any other in the project's format. The project's format adds what SAM
// has no words for: local and MCP sources beside packages, and each
// entry's composition (prefix, rename, roles, deferred) and policies
// (timeout, cache, rateLimit, approval, maxFailures). spec.toolsets in
// SAM's shape may hold entries of the project's format too, so that a
// SAM document can take them; the project's format takes toolsetConfigs
// and skills as SAM writes them.
//
// An earlier version of this package read agent documents in a shape of
// its own that SAM never used: apiVersion, metadata.name,
// spec.instructions, spec.description, spec.name and a top-level
// toolsetConfigs. They still load as they did, each key with a warning
// naming SAM's spelling; they will be refused in a later version.
//
// [File.Packages] lists the packages a file uses, which is what a
// platform counts to tell whether a package is in use.
package agentfile
