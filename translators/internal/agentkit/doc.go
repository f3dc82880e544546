// Package agentkit is what every translator shares, so that a backend is
// its agent's wire format, its tool table and little else. It knows ACP's
// types and the contract of package agent, and no agent.
//
// Its parts, by file:
//
//   - exec.go — the agent's CLI: CLI (embedded in a Backend: Find, Check,
//     Version, Command, Env, Args, Describe for the Backend's Info and the
//     Check and Version it declares), Options, Executable (Options.Path,
//     else ACPBRIDGE_<AGENT>, else PATH; errors wrap
//     agent.ErrAgentUnavailable), LoginFrom (credentials from environment
//     keys and login files).
//   - settings.go — a session's config options: Settings (Restore, Set,
//     Adopt, Put, Remove, Offers), EffortOption for agent.ConfigEffort.
//   - turn.go — one prompt at a time: Turns and its Ongoing turn, Run with
//     a TurnSpec (Ready, Send, Interrupt, Outcome), InterruptTimeout.
//   - asks.go — the permission round trip (Asks, Answer, Chosen), and
//     Updates, which keeps a translator's updates in the agent's order;
//     tasks.go — Tasks, the goroutines that answer asks in the
//     background, which a session's Close waits for.
//   - question.go — an agent's multiple-choice Question put to the client
//     as a permission ask whose options are the answers (Choose, Choice).
//   - prompt.go — ACP prompt content into the agent's blocks (Lower with a
//     Lowering, Mention); slash.go — a prompt that is a SlashCommand;
//     retell.go — Retell, the conversation for a fork the agent could not
//     make itself.
//   - mcp.go — the client's MCP servers (MCPServers, MCPServer, Fields),
//     refusing a transport the agent doesn't take.
//   - tools.go — the tool table (Tools, Describer, ToolInfo, Input,
//     Generic, MCPName) and how calls are shown: FileRead, FileEdit,
//     Diffs, Edit, UnifiedEdit, Console, Texts, Fence, At, AbsPath,
//     RelPath, InDir, LineRange, PlanEntry, and text helpers (Quote,
//     Prefixed, Capitalize, Truncate); patch.go — ParsePatch, an
//     apply_patch body as per-file edits; streamjson.go — the content
//     Blocks of Claude-style stream-json messages (Claude and Amp).
//   - shared.go — a server per bridge shared by its sessions: Shared
//     (start on first use, again after it dies, stop at Close), Registry
//     (route what it sends by the agent's session id), Lazy (read a
//     catalog once), Attachment (a session's hold on the current server).
//   - spare.go — Spare: one thing started ahead of need for the first
//     session whose key fits, dropped after its time.
//   - leased.go, sharedspares.go — the backend's side of the daemons that
//     all the user's bridges share (--shared, on by default): Link and
//     Leased (a hold on a shared server), CLI.DaemonSpec (the daemon's
//     key), Fallback (the bridge's own server when no daemon can be had,
//     said once), SharedSpares (spare processes kept by a daemon); stamp.go
//     — Stamp (an executable's version on disk) and Contents (a digest of
//     settings files), which key daemons and spares.
//   - catalog.go — the last catalog of models and options a server gave,
//     kept on disk per agent and configuration (Options.Catalogs), so
//     that session/new answers before the server has started.
package agentkit
