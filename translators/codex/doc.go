// Package codex drives Codex through one shared `codex app-server` process
// per bridge, spoken to as a JSON-RPC client (github.com/creachadair/jrpc2)
// over its stdio: threads are sessions, turns are prompts, and approvals
// arrive as requests from the server. Translator turns a thread's
// notifications into ACP updates.
//
// What the code relies on, as observed with codex 0.169.0:
//
//   - Messages are JSON-RPC 2.0 without the "jsonrpc" member, one per
//     line. The client sends initialize, then the initialized
//     notification.
//   - model/list answers {data:[{id, model, displayName, hidden,
//     isDefault, supportedReasoningEfforts, defaultReasoningEffort}]}.
//   - thread/start and thread/resume take cwd, model, approvalPolicy,
//     sandbox and config overrides (config.mcp_servers for MCP servers),
//     and answer the thread (with its turns on resume), its model and its
//     reasoningEffort. turn/start takes the input items and, optionally,
//     approvalPolicy, sandboxPolicy, model and effort, which stick for the
//     thread's later turns; a thread can't go back to config.toml's policy.
//   - thread/fork {threadId, …the same overrides…} answers as
//     thread/resume does, with a new thread that holds a copy of
//     threadId's turns (threadId stays as it was) and runs in the cwd
//     given. Codex reads the parent's rollout from disk, so the parent
//     need not be loaded; a thread never prompted has no rollout yet ("no
//     rollout found for thread id …"), nor has one whose rollout was
//     deleted ("invalid paginated history lineage …: missing source
//     rollout"). For a session/fork the bridge then starts a new thread
//     and tells it the conversation with its first turn.
//   - A turn streams item/started, deltas and item/completed
//     notifications, and ends with turn/completed (status completed,
//     interrupted or failed); turn/interrupt makes it end as interrupted.
//   - Approvals are requests from the server
//     (item/commandExecution/requestApproval,
//     item/fileChange/requestApproval) answered with a decision: accept,
//     acceptForSession, decline or cancel.
//   - The plan tool is off unless the server runs with
//     -c tools.update_plan={enabled=true}.
//   - With features.multi_agent_v2, spawn_agent starts an agent on a
//     thread of its own on the same server, named by the spawner's
//     subAgentActivity item; its notifications and approvals carry its
//     thread id, and turn/interrupt on it stops it alone (subagents.go).
package codex
